//! The phases of a new session, read from `--phase` specs or from an implementation plan file.

use cairn_domain::orchestration::{NewPhase, PhaseId};

use crate::exit::{Code, Failure};

/// `NAME:AGENT[+AGENT…][:BLOCKER,…]` → a phase. `position` (from 1) names the spec in errors.
pub fn parse_spec(spec: &str, position: usize) -> Result<NewPhase, Failure> {
    let bad = |why: String| {
        Failure::new(
            Code::Usage,
            format!("--phase #{position} `{spec}`: {why}"),
        )
        .with_hint("write a phase as NAME:AGENT[+AGENT…][:BLOCKER,…], e.g. api:coder:1 (blocked by phase 1)")
    };
    let mut parts = spec.split(':');
    let name = parts.next().unwrap_or_default().trim();
    if name.is_empty() {
        return Err(bad("the phase has no name".into()));
    }
    let agents: Vec<String> = parts
        .next()
        .unwrap_or_default()
        .split('+')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    if agents.is_empty() {
        return Err(bad("the phase has no agent".into()));
    }
    let blocked_by = match parts.next() {
        Some(list) => parse_ids(list).map_err(bad)?,
        None => Vec::new(),
    };
    if parts.next().is_some() {
        return Err(bad("too many `:` (a phase name cannot contain one)".into()));
    }
    Ok(NewPhase {
        id: None,
        files: Vec::new(),
        name: name.to_owned(),
        agents,
        parallel: false,
        blocked_by,
    })
}

/// `1, 2,3` → [1, 2, 3]; blank → [].
fn parse_ids(list: &str) -> Result<Vec<PhaseId>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| {
            id.parse::<PhaseId>()
                .map_err(|_| format!("blocker `{id}` is not a phase number"))
        })
        .collect()
}

/// The phases of an implementation plan: each heading `#… Phase N: Name` starts phase N (phases
/// must be numbered 1, 2, … in order); below it, until the next phase heading, a line `Agent:`
/// or `Agents:` lists agents and a line `Blocked by:` or `Depends on:` lists earlier phases
/// (bullets, bold markers and case do not matter; `none` means none).
pub fn parse_plan(text: &str, file: &str) -> Result<Vec<NewPhase>, Failure> {
    let bad = |line: usize, why: String| {
        Failure::new(Code::Usage, format!("{file}:{line}: {why}")).with_hint(
            "a plan gives each phase as a heading `## Phase N: Name`, numbered from 1, with \
             optional `Agent: name` and `Blocked by: 1, 2` lines below it",
        )
    };
    let mut phases: Vec<NewPhase> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if let Some((number, name)) = phase_heading(line) {
            let expected = phases.len() + 1;
            if number != expected.to_string() {
                return Err(bad(
                    line_no,
                    format!("phase `{number}` out of order: expected Phase {expected}"),
                ));
            }
            if name.is_empty() {
                return Err(bad(line_no, format!("phase {expected} has no name")));
            }
            phases.push(NewPhase {
                id: None,
                files: Vec::new(),
                name: name.to_owned(),
                agents: Vec::new(),
                parallel: false,
                blocked_by: Vec::new(),
            });
            continue;
        }
        let Some(phase) = phases.last_mut() else {
            continue;
        };
        let Some((key, value)) = field(line) else {
            continue;
        };
        let none = value.eq_ignore_ascii_case("none") || value == "-";
        match key.as_str() {
            "agent" | "agents" if !none => phase.agents.extend(
                value
                    .split([',', '+'])
                    .map(|a| a.trim().trim_matches('`').to_owned())
                    .filter(|a| !a.is_empty()),
            ),
            "blocked by" | "blocked_by" | "depends on" if !none => {
                let ids = value.replace("Phase", "").replace("phase", "");
                phase
                    .blocked_by
                    .extend(parse_ids(&ids).map_err(|why| bad(line_no, why))?);
            }
            _ => {}
        }
    }
    if phases.is_empty() {
        return Err(bad(0, "no `## Phase N: Name` heading found".into()));
    }
    Ok(phases)
}

/// `## Phase 2: API layer` → ("2", "API layer").
fn phase_heading(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix('#')?.trim_start_matches('#').trim_start();
    let rest = rest
        .strip_prefix("Phase ")
        .or_else(|| rest.strip_prefix("phase "))?;
    let (number, name) = rest.split_once(':')?;
    Some((number.trim(), name.trim()))
}

/// `- **Agent**: coder` → ("agent", "coder").
fn field(line: &str) -> Option<(String, &str)> {
    let line = line.trim_start_matches(['-', '*', ' ']);
    let (key, value) = line.split_once(':')?;
    let key = key.replace("**", "").trim().to_ascii_lowercase();
    Some((key, value.trim().trim_start_matches("**").trim()))
}

/// Phases that share their blockers with another phase can run at once: they form a parallel
/// batch, which the session records as `parallel: true`.
pub fn mark_parallel(phases: &mut [NewPhase]) {
    let sets: Vec<Vec<PhaseId>> = phases
        .iter()
        .map(|p| {
            let mut set = p.blocked_by.clone();
            set.sort_unstable();
            set.dedup();
            set
        })
        .collect();
    for (i, phase) in phases.iter_mut().enumerate() {
        phase.parallel = sets
            .iter()
            .enumerate()
            .any(|(j, other)| j != i && *other == sets[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_give_name_agents_and_blockers() {
        let phase = parse_spec("api:coder+tester:1, 2", 2).expect("valid");
        assert_eq!(phase.name, "api");
        assert_eq!(phase.agents, ["coder", "tester"]);
        assert_eq!(phase.blocked_by, [1, 2]);
        for (spec, why) in [
            (":coder", "no name"),
            ("api", "no agent"),
            ("api:coder:x", "not a phase number"),
            ("a:b:1:2", "too many"),
        ] {
            let failure = parse_spec(spec, 1).expect_err(spec);
            assert!(failure.message.contains(why), "{spec}: {}", failure.message);
        }
    }

    #[test]
    fn plans_give_one_phase_per_heading() {
        let plan = "# Plan\n\nIntro.\n\n## Phase 1: Schema\n- **Agent**: coder\n\n## Phase 2: API\nAgents: coder, tester\nBlocked by: Phase 1\n\n### Phase 3: Docs\n- Depends on: 1\n- Agent: none\n";
        let phases = parse_plan(plan, "plan.md").expect("valid");
        assert_eq!(phases.len(), 3);
        assert_eq!(phases[0].agents, ["coder"]);
        assert_eq!(phases[1].agents, ["coder", "tester"]);
        assert_eq!(phases[1].blocked_by, [1]);
        assert!(phases[2].agents.is_empty());
        assert_eq!(phases[2].blocked_by, [1]);
        let failure = parse_plan("## Phase 2: X\n", "p.md").expect_err("out of order");
        assert!(failure.message.contains("p.md:1"), "{}", failure.message);
        assert!(parse_plan("# nothing\n", "p.md").is_err());
    }

    #[test]
    fn phases_with_the_same_blockers_are_a_parallel_batch() {
        let mut phases: Vec<NewPhase> = ["a:x", "b:x:1", "c:x:1", "d:x:2,3"]
            .iter()
            .enumerate()
            .map(|(i, s)| parse_spec(s, i + 1).expect("valid"))
            .collect();
        mark_parallel(&mut phases);
        let parallel: Vec<bool> = phases.iter().map(|p| p.parallel).collect();
        assert_eq!(parallel, [false, true, true, false]);
    }
}
