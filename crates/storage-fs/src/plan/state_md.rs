//! `state.md`: the plan record, as pure render and lenient parse.
//!
//! `state.md` keeps the seed's headings (`# Current State: X`, `## Iteration: N`,
//! `## Current Plan Step: …`, `## Fix Attempts …`, `## Change Manifest …`,
//! `## Last Transition: A → B (<ISO>)`, `## Transition History:`) and adds the sections cairn
//! needs to hold the whole record (goal, creation time, abstractions, strikes, scope). Sections
//! marked "derived" (the complexity budget, a forced re-plan, the nuclear option) are written for
//! the reader and ignored when reading: they are recomputed from the counters, so a hand edit
//! cannot make them disagree.
//!
//! Reading is lenient where leniency is harmless — heading case and spacing, `->` for `→`,
//! `REPLAN` for `RE-PLAN`, unknown sections, the seed's `[x]` manifest marks, missing optional
//! sections — and strict where a guess would change what is enforced: an unreadable state,
//! iteration or counter is an error naming the line.

use std::collections::BTreeMap;

use cairn_domain::plan::document::STATE_FILE;
use cairn_domain::plan::{
    ChangeKind, FixAttempt, LastTransition, MAX_FILES_ADDED, MAX_FIX_ATTEMPTS,
    MAX_NEW_ABSTRACTIONS, ManifestEntry, NET_LINES_TARGET, PlanError, PlanId, PlanRecord,
    PlanRecordParts, PlanState, STRIKES_TO_REPLAN, TransitionRecord,
};
use cairn_domain::time::{format_rfc3339, parse_rfc3339};
use chrono::DateTime;

use super::split_arrow;

/// The state named by the `# Current State: X` heading among the first lines of `state.md`
/// (`head` may be cut anywhere: only whole lines are looked at, and a heading cut off by the end
/// counts only when it names a state). `None` when no such heading is there; `Err` with the
/// unreadable name when it names no state.
pub fn peek_state(head: &str) -> Result<Option<PlanState>, String> {
    for line in head.lines() {
        let Some(name) = line.trim().strip_prefix("# ") else {
            continue;
        };
        let Some((key, value)) = name.split_once(':') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("current state") {
            return PlanState::parse(value)
                .map(Some)
                .ok_or_else(|| format!("unknown state {:?}", value.trim()));
        }
    }
    Ok(None)
}

/// Renders the record as `state.md`.
pub fn render_state(plan: &PlanRecord) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("# Current State: {}", plan.state()));
    line(format!("## Goal: {}", plan.goal()));
    line(format!(
        "## Created: {}",
        format_rfc3339(&plan.created_at())
    ));
    line(format!("## Iteration: {}", plan.iteration()));
    line(format!(
        "## Current Plan Step: {}",
        plan.current_step().unwrap_or("N/A")
    ));

    line(format!(
        "## Fix Attempts (per plan step, this iteration; {MAX_FIX_ATTEMPTS} max)"
    ));
    if plan.fix_attempts().is_empty() {
        line("- (none yet)".to_owned());
    }
    for a in plan.fix_attempts() {
        line(format!(
            "- Step `{}`, attempt {}: {}",
            a.step, a.attempt, a.note
        ));
    }

    line("## Change Manifest (current iteration)".to_owned());
    if plan.manifest().is_empty() {
        line("- (none)".to_owned());
    }
    for e in plan.manifest() {
        line(format!(
            "- `{}` — {} (+{}/-{})",
            e.path,
            e.kind.as_str(),
            e.lines_added,
            e.lines_removed
        ));
    }

    line("## New Abstractions (current iteration)".to_owned());
    if plan.abstractions().is_empty() {
        line("- (none)".to_owned());
    }
    for name in plan.abstractions() {
        line(format!("- `{name}`"));
    }

    let budget = plan.budget();
    line("## Complexity Budget (derived, current iteration)".to_owned());
    line(format!(
        "- Files added: {}/{MAX_FILES_ADDED} max",
        budget.files_added
    ));
    line(format!(
        "- New abstractions: {}/{MAX_NEW_ABSTRACTIONS} max",
        budget.new_abstractions
    ));
    line(format!(
        "- Lines added vs removed: +{}/-{} (net {:+}, target {NET_LINES_TARGET})",
        budget.lines_added,
        budget.lines_removed,
        budget.net_lines()
    ));
    if budget.is_over() {
        let over: Vec<String> = budget.over.iter().map(ToString::to_string).collect();
        line(format!(
            "- OVER BUDGET: {} — stop and REFLECT",
            over.join("; ")
        ));
    }

    line(format!(
        "## Failure Strikes ({STRIKES_TO_REPLAN} in one area force RE-PLAN)"
    ));
    if plan.strikes().is_empty() {
        line("- (none)".to_owned());
    }
    for (area, n) in plan.strikes() {
        line(format!("- `{area}`: {n}"));
    }
    if let Some(forced) = plan.forced_replan() {
        line(format!(
            "## Re-plan Forced (derived): `{}` failed {} times — after REFLECT only RE-PLAN is allowed",
            forced.area, forced.strikes
        ));
    }

    match plan.scope_estimate() {
        Some(n) => line(format!("## Scope Estimate: {n} lines")),
        None => line("## Scope Estimate: not set".to_owned()),
    }
    line(format!(
        "## Lines Added (all iterations): {}",
        plan.lines_added_total()
    ));
    if let Some(nuclear) = plan.nuclear_check() {
        line(format!("## Nuclear Option (derived): {nuclear}"));
    }

    match plan.last_transition() {
        Some(t) => line(format!(
            "## Last Transition: {} → {} ({})",
            t.from,
            t.to,
            format_rfc3339(&t.at)
        )),
        None => line("## Last Transition: none".to_owned()),
    }
    line("## Transition History:".to_owned());
    for t in plan.history() {
        line(format!("- {} → {} ({})", t.from, t.to, t.reason));
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Other,
    FixAttempts,
    Manifest,
    Abstractions,
    Strikes,
    History,
}

/// Why a name with a backtick outside its pair is refused: it is written back between
/// backticks, and would read back as a different name (the domain refuses such names too).
fn stray_backtick(name: &str) -> String {
    format!("{name:?} has a stray backtick; write the name as `name` or without backticks")
}

/// The text between the first pair of backticks and what follows it.
fn backticked(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('`')?;
    let end = rest.find('`')?;
    Some((&rest[..end], &rest[end + 1..]))
}

fn parse_fix_attempt(item: &str) -> Option<FixAttempt> {
    let rest = item
        .strip_prefix("Step ")
        .or_else(|| item.strip_prefix("step "))?;
    let (step, rest) = match backticked(rest) {
        Some((step, rest)) => (step.trim(), rest.strip_prefix(',')?.trim_start()),
        None => {
            let (step, rest) = rest.split_once(", attempt ")?;
            // Written back between backticks, a step holding one would read differently.
            if step.contains('`') {
                return None;
            }
            (step.trim(), rest)
        }
    };
    let rest = rest.strip_prefix("attempt ").unwrap_or(rest);
    let (attempt, note) = rest.split_once(':')?;
    Some(FixAttempt {
        step: step.to_owned(),
        attempt: attempt.trim().parse().ok()?,
        note: note.trim().to_owned(),
    })
}

fn parse_manifest_entry(item: &str) -> Option<ManifestEntry> {
    let item = ["[x] ", "[X] ", "[ ] "]
        .iter()
        .find_map(|m| item.strip_prefix(m))
        .unwrap_or(item);
    let (path, rest) = backticked(item)?;
    let rest = rest
        .trim_start()
        .trim_start_matches(['—', '–', '-'])
        .trim_start();
    let kind = ChangeKind::parse(rest.split_whitespace().next()?)?;
    let (mut added, mut removed) = (0, 0);
    if let Some(start) = rest.find("(+") {
        let counts = &rest[start + 2..];
        let counts = &counts[..counts.find(')')?];
        let (a, r) = counts.split_once("/-")?;
        added = a.trim().parse().ok()?;
        removed = r.trim().parse().ok()?;
    }
    Some(ManifestEntry {
        path: path.trim().to_owned(),
        kind,
        lines_added: added,
        lines_removed: removed,
    })
}

fn parse_history(item: &str) -> Option<TransitionRecord> {
    let (from, rest) = split_arrow(item)?;
    let (to, reason) = match rest.split_once('(') {
        Some((to, reason)) => (to, reason.strip_suffix(')').unwrap_or(reason)),
        None => (rest, ""),
    };
    Some(TransitionRecord {
        from: PlanState::parse(from)?,
        to: PlanState::parse(to)?,
        reason: reason.trim().to_owned(),
    })
}

/// Reads `state.md` back into a record. `id` is the plan directory the file came from.
pub fn parse_state(id: &PlanId, text: &str) -> Result<PlanRecord, PlanError> {
    let unreadable = |line: usize, detail: String| PlanError::Unreadable {
        file: STATE_FILE,
        line,
        detail,
    };
    let mut state = None;
    let mut goal = String::new();
    let mut created = None;
    let mut iteration = 0;
    let mut current_step = None;
    let mut fix_attempts = Vec::new();
    let mut manifest = Vec::new();
    let mut abstractions = Vec::new();
    let mut strikes = BTreeMap::new();
    let mut scope_estimate = None;
    let mut lines_added_total = 0;
    let mut last_transition = None;
    let mut history = Vec::new();
    let mut section = Section::Other;

    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = raw.trim();
        if let Some(heading) = trimmed.strip_prefix("## ") {
            let heading = heading.trim();
            let lower = heading.to_lowercase();
            let value = || heading.split_once(':').map(|(_, v)| v.trim()).unwrap_or("");
            let count = |what: &str| -> Result<u64, PlanError> {
                let digits: String = value().chars().take_while(char::is_ascii_digit).collect();
                digits.parse().map_err(|_| {
                    unreadable(number, format!("{what} is not a number: {:?}", value()))
                })
            };
            section = Section::Other;
            if lower.starts_with("goal") {
                goal = value().to_owned();
            } else if lower.starts_with("created") {
                created = parse_rfc3339(value());
            } else if lower.starts_with("iteration") {
                iteration = u32::try_from(count("the iteration")?)
                    .map_err(|_| unreadable(number, "the iteration is out of range".to_owned()))?;
            } else if lower.starts_with("current plan step") {
                let step = value();
                current_step = (!step.is_empty() && !step.eq_ignore_ascii_case("n/a"))
                    .then(|| step.to_owned());
            } else if lower.starts_with("fix attempts") {
                section = Section::FixAttempts;
            } else if lower.starts_with("change manifest") {
                section = Section::Manifest;
            } else if lower.starts_with("new abstractions") {
                section = Section::Abstractions;
            } else if lower.starts_with("failure strikes") {
                section = Section::Strikes;
            } else if lower.starts_with("scope estimate") {
                scope_estimate = if value().eq_ignore_ascii_case("not set") || value().is_empty() {
                    None
                } else {
                    Some(u32::try_from(count("the scope estimate")?).map_err(|_| {
                        unreadable(number, "the scope estimate is out of range".to_owned())
                    })?)
                };
            } else if lower.starts_with("lines added") {
                lines_added_total = count("the lines added")?;
            } else if lower.starts_with("last transition") {
                let v = value();
                if !v.eq_ignore_ascii_case("none")
                    && let Some((from, rest)) = split_arrow(v)
                {
                    let (to, at) = match rest.split_once('(') {
                        Some((to, at)) => (to, parse_rfc3339(at.trim_end_matches(')'))),
                        None => (rest, None),
                    };
                    let from = PlanState::parse(from)
                        .ok_or_else(|| unreadable(number, format!("unknown state {from:?}")))?;
                    let to = PlanState::parse(to)
                        .ok_or_else(|| unreadable(number, format!("unknown state {to:?}")))?;
                    last_transition = Some((from, to, at));
                }
            } else if lower.starts_with("transition history") {
                section = Section::History;
            }
            continue;
        }
        if let Some(name) = trimmed.strip_prefix("# ") {
            let Some((key, value)) = name.split_once(':') else {
                continue;
            };
            if key.trim().eq_ignore_ascii_case("current state") {
                state = Some(PlanState::parse(value).ok_or_else(|| {
                    unreadable(number, format!("unknown state {:?}", value.trim()))
                })?);
            }
            continue;
        }
        let Some(item) = trimmed.strip_prefix("- ").map(str::trim) else {
            continue;
        };
        if item.starts_with('(') {
            continue;
        }
        match section {
            Section::FixAttempts => fix_attempts.extend(parse_fix_attempt(item)),
            Section::Manifest => manifest.extend(parse_manifest_entry(item)),
            Section::Abstractions => {
                let name = backticked(item).map_or(item, |(name, _)| name).trim();
                if name.contains('`') {
                    return Err(unreadable(number, stray_backtick(name)));
                }
                if !name.is_empty() {
                    abstractions.push(name.to_owned());
                }
            }
            Section::Strikes => {
                let (area, rest) = match backticked(item) {
                    Some((area, rest)) => {
                        (area, rest.trim_start().strip_prefix(':').unwrap_or(rest))
                    }
                    None => item.rsplit_once(':').unwrap_or((item, "")),
                };
                if area.contains('`') {
                    return Err(unreadable(number, stray_backtick(area)));
                }
                let strikes_on_area: u32 = rest.trim().parse().map_err(|_| {
                    unreadable(number, format!("strike count for {area:?} is not a number"))
                })?;
                strikes.insert(area.trim().to_owned(), strikes_on_area);
            }
            Section::History => history.extend(parse_history(item)),
            Section::Other => {}
        }
    }

    let state = state.ok_or_else(|| unreadable(1, "no `# Current State: X` heading".to_owned()))?;
    // Hand-written files may lack the creation time or carry a reason instead of a timestamp in
    // the last transition (the seed's own example does); fall back rather than refuse to load.
    let created_at = created
        .or(last_transition.and_then(|(_, _, at)| at))
        .unwrap_or(DateTime::UNIX_EPOCH);
    let last_transition = last_transition.map(|(from, to, at)| LastTransition {
        from,
        to,
        at: at.unwrap_or(created_at),
    });
    Ok(PlanRecord::restore(PlanRecordParts {
        id: id.clone(),
        goal,
        created_at,
        state,
        iteration,
        current_step,
        fix_attempts,
        manifest,
        abstractions,
        strikes,
        scope_estimate,
        lines_added_total,
        last_transition,
        history,
    }))
}
