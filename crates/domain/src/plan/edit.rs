//! What the agent may write in each state: the rule the PreToolUse hook enforces.
//!
//! Paths are compared lexically, never resolved against the filesystem (the domain does no
//! I/O): `\` and `/` are both separators, `.` is dropped, `..` pops a component, and a `..` that
//! would climb above the start of the path is refused outright. Windows drive letters
//! (`C:\…`), UNC shares (`\\server\share\…`) and verbatim prefixes (`\\?\C:\…`) are understood;
//! when either path is a Windows path, components compare case-insensitively, as NTFS does.
//! Symlinks are not followed; a hook that cares resolves them before asking.
//!
//! The target and the plan directory must both be absolute or both relative to the same base:
//! a relative target cannot be placed relative to an absolute plan directory without knowing the
//! working directory, so the hook resolves it against the hook input's `cwd` first, and this
//! function denies what it cannot place.

use super::document::{
    CHECKPOINTS_DIR, DECISIONS_FILE, FINDINGS_DIR, FINDINGS_FILE, PLAN_FILE, PROGRESS_FILE,
    STATE_FILE, SUMMARY_FILE,
};
use super::state::PlanState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditVerdict {
    Allow,
    Deny { reason: String },
}

impl EditVerdict {
    fn deny(reason: impl Into<String>) -> Self {
        EditVerdict::Deny {
            reason: reason.into(),
        }
    }

    pub fn is_allowed(&self) -> bool {
        matches!(self, EditVerdict::Allow)
    }
}

/// The files and folders of a plan directory, for the per-state write rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanFile {
    State,
    Plan,
    Decisions,
    Findings,
    /// Anything under `findings/`.
    FindingsDetail,
    Progress,
    /// Anything under `checkpoints/`.
    Checkpoint,
    Summary,
}

impl PlanFile {
    pub const ALL: [PlanFile; 8] = [
        PlanFile::State,
        PlanFile::Plan,
        PlanFile::Decisions,
        PlanFile::Findings,
        PlanFile::FindingsDetail,
        PlanFile::Progress,
        PlanFile::Checkpoint,
        PlanFile::Summary,
    ];

    /// Classifies a path relative to the plan directory (`/`-separated, already normalised).
    /// `None` for anything that is not a plan file, including the two folders themselves.
    pub fn classify(relative: &str, case_insensitive: bool) -> Option<PlanFile> {
        let relative = if case_insensitive {
            relative.to_lowercase()
        } else {
            relative.to_owned()
        };
        let in_dir = |dir: &str| {
            relative
                .strip_prefix(dir)
                .and_then(|r| r.strip_prefix('/'))
                .is_some_and(|r| !r.is_empty())
        };
        Some(match relative.as_str() {
            STATE_FILE => PlanFile::State,
            PLAN_FILE => PlanFile::Plan,
            DECISIONS_FILE => PlanFile::Decisions,
            FINDINGS_FILE => PlanFile::Findings,
            PROGRESS_FILE => PlanFile::Progress,
            SUMMARY_FILE => PlanFile::Summary,
            _ if in_dir(FINDINGS_DIR) => PlanFile::FindingsDetail,
            _ if in_dir(CHECKPOINTS_DIR) => PlanFile::Checkpoint,
            _ => return None,
        })
    }

    pub fn describe(self) -> &'static str {
        match self {
            PlanFile::State => STATE_FILE,
            PlanFile::Plan => PLAN_FILE,
            PlanFile::Decisions => DECISIONS_FILE,
            PlanFile::Findings => FINDINGS_FILE,
            PlanFile::FindingsDetail => "findings/*",
            PlanFile::Progress => PROGRESS_FILE,
            PlanFile::Checkpoint => "checkpoints/*",
            PlanFile::Summary => SUMMARY_FILE,
        }
    }
}

/// The plan files the agent may write in `state` — the seed's file-lifecycle matrix, with two
/// changes: `state.md` is cairn's own record and `decisions.md` is append-only, so the agent
/// writes neither directly in any state (it uses `cairn plan` commands, which also enforce the
/// counters and the numbering).
pub fn writable_plan_files(state: PlanState) -> &'static [PlanFile] {
    match state {
        PlanState::Explore => &[PlanFile::Findings, PlanFile::FindingsDetail],
        PlanState::Plan => &[PlanFile::Plan, PlanFile::Progress],
        PlanState::Execute => &[PlanFile::Plan, PlanFile::Progress, PlanFile::Checkpoint],
        PlanState::Reflect => &[PlanFile::Progress],
        // Not plan.md: the revised plan is written in PLAN, after the pivot is logged.
        PlanState::RePlan => &[PlanFile::Progress],
        PlanState::Close => &[PlanFile::Summary],
    }
}

/// Whether project files outside the plan directory may be edited in `state`. EXECUTE is where
/// code changes; CLOSE allows them too because its duties are to audit `DECISION D-NNN` comments
/// in code and clean up forbidden leftovers, both of which edit project files, and a closed plan
/// cannot return to any state that would make use of a sneaked-in change.
pub fn project_edits_allowed(state: PlanState) -> bool {
    matches!(state, PlanState::Execute | PlanState::Close)
}

fn project_edit_hint(state: PlanState) -> &'static str {
    match state {
        PlanState::Explore => {
            "EXPLORE is read-only on project files; write what you learn to findings.md or findings/"
        }
        PlanState::Plan => {
            "PLAN writes plan.md only; code changes wait for the user's approval and EXECUTE"
        }
        PlanState::Reflect => "REFLECT observes results; to change code, RE-PLAN → PLAN → EXECUTE",
        PlanState::RePlan => {
            "RE-PLAN decides a new direction; code changes wait for PLAN and the user's approval"
        }
        PlanState::Execute | PlanState::Close => "",
    }
}

/// A lexically normalised path.
#[derive(Debug, PartialEq, Eq)]
struct NormalPath {
    /// `""` for relative, `"/"` for POSIX-absolute, `"c:"` for a drive, `"//server/share"` for UNC.
    root: String,
    windows: bool,
    components: Vec<String>,
}

fn normalise(path: &str) -> Result<NormalPath, String> {
    if path.trim().is_empty() {
        return Err("the path is empty".to_owned());
    }
    if path.contains('\0') {
        return Err("the path contains a NUL byte".to_owned());
    }
    let unified = path.replace('\\', "/");
    let mut rest = unified.as_str();
    // Verbatim (`\\?\`) and device (`\\.\`) prefixes only switch off Win32 path parsing.
    for prefix in ["//?/UNC/", "//?/", "//./"] {
        if let Some(stripped) = rest.strip_prefix(prefix) {
            rest = stripped;
            if prefix.ends_with("UNC/") {
                return unc(rest);
            }
            break;
        }
    }
    if let Some(share) = rest.strip_prefix("//") {
        return unc(share);
    }
    let bytes = rest.as_bytes();
    let (root, windows, body) =
        if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
            let drive = format!("{}:", (bytes[0] as char).to_ascii_lowercase());
            match rest[2..].strip_prefix('/') {
                Some(body) => (drive, true, body),
                None => {
                    return Err(format!(
                        "`{path}` is relative to the current directory of drive {drive}"
                    ));
                }
            }
        } else if let Some(body) = rest.strip_prefix('/') {
            ("/".to_owned(), false, body)
        } else {
            (String::new(), false, rest)
        };
    Ok(NormalPath {
        root,
        windows,
        components: components(path, body)?,
    })
}

fn unc(rest: &str) -> Result<NormalPath, String> {
    let mut parts = rest.splitn(3, '/');
    let (Some(server), Some(share)) = (parts.next(), parts.next()) else {
        return Err("a UNC path needs a server and a share".to_owned());
    };
    if server.is_empty() || share.is_empty() {
        return Err("a UNC path needs a server and a share".to_owned());
    }
    let root = format!("//{}/{}", server.to_lowercase(), share.to_lowercase());
    Ok(NormalPath {
        root,
        windows: true,
        components: components(rest, parts.next().unwrap_or(""))?,
    })
}

fn components(original: &str, body: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for part in body.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.pop().is_none() {
                    return Err(format!(
                        "`{original}` climbs above its starting point with `..`"
                    ));
                }
            }
            part => out.push(part.to_owned()),
        }
    }
    Ok(out)
}

/// If `target` lies strictly inside `dir`, the `/`-joined remainder.
fn strip_dir(target: &NormalPath, dir: &NormalPath, case_insensitive: bool) -> Option<String> {
    let same = |a: &str, b: &str| {
        if case_insensitive {
            a.to_lowercase() == b.to_lowercase()
        } else {
            a == b
        }
    };
    if !same(&target.root, &dir.root) || target.components.len() <= dir.components.len() {
        return None;
    }
    let inside = target
        .components
        .iter()
        .zip(&dir.components)
        .all(|(t, d)| same(t, d));
    inside.then(|| target.components[dir.components.len()..].join("/"))
}

/// May the agent write `target_path` while the plan in `plan_dir` is in `state`?
///
/// Inside the plan directory the per-state file rules of [`writable_plan_files`] apply in every
/// state. Outside it, only EXECUTE and CLOSE may edit (see [`project_edits_allowed`]).
pub fn decide_edit(state: PlanState, target_path: &str, plan_dir: &str) -> EditVerdict {
    let target = match normalise(target_path) {
        Ok(path) => path,
        Err(why) => return EditVerdict::deny(format!("the edit target cannot be placed: {why}")),
    };
    let dir = match normalise(plan_dir) {
        Ok(path) => path,
        Err(why) => {
            return EditVerdict::deny(format!("the plan directory cannot be placed: {why}"));
        }
    };
    if target.root.is_empty() != dir.root.is_empty() {
        return EditVerdict::deny(format!(
            "there is no telling whether `{target_path}` lies inside the plan directory `{plan_dir}`: \
             one path is relative and the other absolute"
        ));
    }
    let case_insensitive = target.windows || dir.windows;
    match strip_dir(&target, &dir, case_insensitive) {
        Some(relative) => {
            let writable = writable_plan_files(state);
            match PlanFile::classify(&relative, case_insensitive) {
                Some(file) if writable.contains(&file) => EditVerdict::Allow,
                Some(PlanFile::State) => EditVerdict::deny(
                    "state.md is cairn's record of the plan; it changes through the plan's own \
                     operations (transition, step, fix, fail, change), never by editing it",
                ),
                Some(PlanFile::Decisions) => EditVerdict::deny(
                    "decisions.md is append-only; add an entry by recording a decision, never by editing it",
                ),
                other => {
                    let allowed: Vec<&str> = writable.iter().map(|f| f.describe()).collect();
                    let what = other.map_or_else(
                        || format!("`{relative}` is not a plan file"),
                        |f| format!("{} is not written in {state}", f.describe()),
                    );
                    EditVerdict::deny(format!(
                        "{what}; in {state} the plan files you may write are: {}",
                        allowed.join(", ")
                    ))
                }
            }
        }
        None if project_edits_allowed(state) => EditVerdict::Allow,
        None => EditVerdict::deny(format!(
            "the plan is in {state}: no edits outside the plan directory `{plan_dir}`. {}",
            project_edit_hint(state)
        )),
    }
}
