//! The PreToolUse guard: refuses direct writes to cairn's state files.
//!
//! cairn's state files are replaced under a lock, validated against their schemas, logged and
//! checkpointed; an agent editing `tasks.json` by hand skips all of that and can lose a concurrent
//! update or corrupt the file. So Edit, Write, MultiEdit and NotebookEdit on them are denied, each
//! with a reason naming the cairn command to use instead.
//!
//! Bash is judged the other way round, because a shell can write a file in more ways than any
//! list of writers can hold (`rm -rf`, `python3 -c "open(…,'w')"`, `node -e`, …): a command that
//! names a state file or a store directory is denied unless it is clearly a read (see
//! the `bash` module's docs for what counts as one).
//!
//! This module is pure and fast on purpose: it runs on every matching tool call, so it decides
//! from the payload alone — no store, no filesystem, no runtime. The names it knows come from
//! `cairn-storage-fs`'s layout (through `crate::wiring`), the one description of the store's layout. Paths are classified
//! lexically (separators normalised, `.` and `..` folded, relative paths taken from the payload's
//! `cwd`), so a symlink pointing into the store is not seen; the guard is a seatbelt against honest
//! mistakes, not a sandbox. Research briefs (`research/T-NNN.md`) are deliberately not guarded:
//! writing them by hand is part of the workflow.

pub(crate) mod bash;

use crate::wiring::layout;

use crate::protocol::HookInput;

/// Which protected part of a project store a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFile {
    ProjectRecord,
    TaskList,
    Checkpoint,
    ProgressLog,
    Velocity,
    /// The `progress/` directory itself (it holds the log and velocity).
    ProgressDir,
    Temp,
    /// The project directory itself (a `rm -r` or `mv` of it).
    ProjectDir,
    /// The store directory, or the `.claude` directory around it hit recursively.
    Store,
    /// Anything else inside a project directory but its research briefs (the lock file, an
    /// unknown entry): named by a shell command that is not a read.
    StoreEntry,
    /// An orchestration session file: `…/state/active-session.md` of a maestro state directory.
    OrchestrationSession,
    /// A plan's `state.md` (`.claude/.plan_…/state.md`).
    PlanState,
    /// A plan's append-only `decisions.md`.
    PlanDecisions,
}

impl StateFile {
    fn what(self) -> &'static str {
        match self {
            Self::ProjectRecord => "cairn's project record",
            Self::TaskList => "cairn's task list",
            Self::Checkpoint => "a cairn checkpoint",
            Self::ProgressLog => "cairn's append-only progress log",
            Self::Velocity => "cairn's velocity metrics",
            Self::ProgressDir => "cairn's progress directory (log and velocity)",
            Self::Temp => "cairn's in-flight atomic writes",
            Self::ProjectDir => "a cairn project directory",
            Self::Store => "cairn's project store (every project's state)",
            Self::StoreEntry => "inside a cairn project directory",
            Self::OrchestrationSession => "the active orchestration session",
            Self::PlanState => "cairn's record of a plan (state.md)",
            Self::PlanDecisions => "a plan's append-only decision log (decisions.md)",
        }
    }

    /// Why writing it by hand is harmful.
    fn why(self) -> &'static str {
        match self {
            Self::ProjectRecord | Self::TaskList | Self::Velocity => {
                "cairn replaces it atomically under a lock, validates it and logs every change"
            }
            Self::Checkpoint => "checkpoints are the snapshots cairn restores from",
            Self::ProgressLog | Self::ProgressDir => {
                "the log is cairn's append-only audit trail, written under its lock"
            }
            Self::Temp => "a rename from there replaces a state file",
            Self::ProjectDir | Self::StoreEntry => "it holds the project's whole state",
            Self::Store => "it holds every project's whole state",
            Self::OrchestrationSession => {
                "cairn rewrites it atomically under a lock, enforcing the phase rules (retry limit, user-approved skips)"
            }
            Self::PlanState => {
                "cairn rewrites it under a lock and enforces the plan's rules (transition table, autonomy leash, 3 strikes) from it"
            }
            Self::PlanDecisions => "cairn numbers its entries under a lock and never rewrites one",
        }
    }

    /// What to run instead. Kept in one table so the CLI's command names are changed in one place.
    fn instead(self) -> &'static str {
        match self {
            Self::ProjectRecord => {
                "change the project through cairn (`cairn project --help`); read it with `cairn status`"
            }
            Self::TaskList => {
                "use `cairn task add|edit|start|complete|block|decompose|depend …` (see `cairn task --help`); read it with `cairn prime` or `cairn task next`"
            }
            Self::Checkpoint => {
                "use `cairn checkpoint write` to take one and `cairn checkpoint restore N` to go back"
            }
            Self::ProgressLog | Self::ProgressDir => {
                "cairn appends to the log itself on every change; read it with `cairn log`"
            }
            Self::Velocity => {
                "cairn recomputes it on every completion; read it with `cairn velocity`"
            }
            Self::Temp => "cairn manages it; `cairn doctor --fix` removes abandoned writes",
            Self::ProjectDir | Self::Store | Self::StoreEntry => {
                "cairn's state is changed through cairn commands only (`cairn --help`); `cairn doctor` checks it"
            }
            Self::OrchestrationSession => {
                "use `cairn orch phase|files|tokens|error|resolve|archive …` (see `cairn orch --help`); read it with `cairn orch status`"
            }
            Self::PlanState => {
                "use `cairn plan go|approve|step|fix|fail|budget …` (see `cairn plan --help`); read it with `cairn plan status`"
            }
            Self::PlanDecisions => {
                "append with `cairn plan decide \"…\"`; read the latest with `cairn plan resume`"
            }
        }
    }
}

/// A refused write: the path as the tool gave it, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub path: String,
    pub file: StateFile,
}

impl Refusal {
    /// The `permissionDecisionReason` shown to the agent.
    pub fn reason(&self) -> String {
        format!(
            "cairn: `{}` is {} and must not be written directly: {}. Instead, {}.",
            self.path,
            self.file.what(),
            self.file.why(),
            self.file.instead()
        )
    }
}

/// The tools whose input is checked; everything else passes untouched.
pub const GUARDED_TOOLS: [&str; 5] = ["Edit", "Write", "MultiEdit", "NotebookEdit", "Bash"];

/// The guard's decision for one PreToolUse payload: `Some` means deny.
pub fn check(input: &HookInput) -> Option<Refusal> {
    let cwd = input.cwd.as_deref();
    match input.tool_name.as_deref()? {
        "Edit" | "Write" | "MultiEdit" => check_path(input.tool_input_str("file_path")?, cwd),
        "NotebookEdit" => check_path(input.tool_input_str("notebook_path")?, cwd),
        // The most specific refusal wins: `tasks.json` says more than "inside a project".
        "Bash" => bash::mentions(input.tool_input_str("command")?, cwd)
            .into_iter()
            .filter_map(|m| {
                classify_mention(&m.path, m.cwd.as_deref(), m.recursive)
                    .map(|file| Refusal { path: m.path, file })
            })
            .min_by_key(|r| r.file == StateFile::StoreEntry),
        _ => None,
    }
}

fn check_path(path: &str, cwd: Option<&str>) -> Option<Refusal> {
    classify(path, cwd).map(|file| Refusal {
        path: path.to_owned(),
        file,
    })
}

/// Which state file `path` names, if any. Relative paths are taken from `cwd`; globs (`*`, `?`,
/// `[…]`) count when they could match a protected name.
pub fn classify(path: &str, cwd: Option<&str>) -> Option<StateFile> {
    let components = normalize(path, cwd);
    if is_orchestration_session(&components) {
        return Some(StateFile::OrchestrationSession);
    }
    let n = components.len();
    (0..n.saturating_sub(2))
        .filter(|&i| is_store_dir(&components[i..]) && could_be_project_id(&components[i + 2]))
        .find_map(|i| classify_inside(&components[i + 3..]))
        .or_else(|| classify_plan_file(&components))
}

/// `.claude/<plan directory>/state.md` or `decisions.md`: the two plan files only `cairn plan`
/// writes (the others belong to the agent, per state; see `crate::plan`).
fn classify_plan_file(components: &[String]) -> Option<StateFile> {
    components.windows(3).find_map(|w| {
        let plan_dir = component_matches(&w[0], cairn_domain::plan::document::CLAUDE_DIR)
            && (has_glob(&w[1]) || cairn_domain::plan::PlanId::parse(&w[1]).is_ok());
        if !plan_dir {
            return None;
        }
        if component_matches(&w[2], cairn_domain::plan::document::STATE_FILE) {
            Some(StateFile::PlanState)
        } else if component_matches(&w[2], cairn_domain::plan::document::DECISIONS_FILE) {
            Some(StateFile::PlanDecisions)
        } else {
            None
        }
    })
}

/// Do `components` end in `state/active-session.md`? Lexical, like the rest of the guard: the
/// state directory is configurable (`$MAESTRO_STATE_DIR`), so only its last two names are known.
fn is_orchestration_session(components: &[String]) -> bool {
    let [.., dir, file] = components else {
        return false;
    };
    component_matches(dir, "state") && component_matches(file, "active-session.md")
}

/// Do `components` start with the store directory (`.claude/projects`)?
fn is_store_dir(components: &[String]) -> bool {
    components.len() >= layout::STORE_DIR.len()
        && layout::STORE_DIR
            .iter()
            .zip(components)
            .all(|(name, c)| c.eq_ignore_ascii_case(name))
}

/// What a path named by a shell command that is not a read touches: a state file (see
/// [`classify`]), the store directory, anything else in a project but its research briefs, or —
/// when the command works recursively — the `.claude` directory holding the store.
pub fn classify_mention(path: &str, cwd: Option<&str>, recursive: bool) -> Option<StateFile> {
    if let Some(file) = classify(path, cwd) {
        return Some(file);
    }
    let components = normalize(path, cwd);
    let store_at = (0..components.len()).find(|&i| is_store_dir(&components[i..]));
    match store_at {
        Some(i) => {
            let rest = &components[i + layout::STORE_DIR.len()..];
            let research = rest.len() >= 2 && component_matches(&rest[1], layout::RESEARCH_DIR);
            // Only a word that itself spells the store counts as "inside a project": once `cd`
            // has entered a project, every relative word (a `sed` script, a message) would.
            let spelled = normalize(path, None).windows(2).any(is_store_dir);
            match rest.len() {
                0 => Some(StateFile::Store),
                _ if research || !spelled => None,
                _ => Some(StateFile::StoreEntry),
            }
        }
        None => (recursive
            && components
                .last()
                .is_some_and(|c| component_matches(c, layout::STORE_DIR[0])))
        .then_some(StateFile::Store),
    }
}

fn classify_inside(rest: &[String]) -> Option<StateFile> {
    let name = |i: usize, literal: &str| rest.get(i).is_some_and(|c| component_matches(c, literal));
    match rest.len() {
        0 => Some(StateFile::ProjectDir),
        1 if name(0, layout::PROJECT_JSON) => Some(StateFile::ProjectRecord),
        1 if name(0, layout::TASKS_JSON) => Some(StateFile::TaskList),
        1 if name(0, layout::PROGRESS_DIR) => Some(StateFile::ProgressDir),
        _ if name(0, layout::CHECKPOINTS_DIR) => Some(StateFile::Checkpoint),
        _ if name(0, layout::TEMP_DIR) => Some(StateFile::Temp),
        2 if name(0, layout::PROGRESS_DIR) && name(1, layout::LOG_MD) => {
            Some(StateFile::ProgressLog)
        }
        2 if name(0, layout::PROGRESS_DIR) && name(1, layout::VELOCITY_JSON) => {
            Some(StateFile::Velocity)
        }
        _ => None,
    }
}

fn could_be_project_id(component: &str) -> bool {
    has_glob(component) || cairn_domain::project::ProjectId::is_valid(component)
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

fn component_matches(component: &str, literal: &str) -> bool {
    if has_glob(component) {
        glob_matches(component.as_bytes(), literal.as_bytes())
    } else {
        component.eq_ignore_ascii_case(literal)
    }
}

/// Shell-style `*`, `?` and `[…]` (any one character) matching, ASCII case-insensitive.
fn glob_matches(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| glob_matches(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && glob_matches(rest, &name[1..]),
        Some((b'[', rest)) => match rest.iter().position(|&b| b == b']') {
            Some(close) => !name.is_empty() && glob_matches(&rest[close + 1..], &name[1..]),
            None => name.first() == Some(&b'[') && glob_matches(rest, &name[1..]),
        },
        Some((&c, rest)) => {
            name.first().is_some_and(|n| n.eq_ignore_ascii_case(&c))
                && glob_matches(rest, &name[1..])
        }
    }
}

/// `path` made absolute against `cwd` (when it is relative) and split into components with `.`
/// and `..` folded away. Both separators count, so Windows paths classify too. A path starting
/// with `~` or a variable is anchored somewhere unknown and is kept as written.
pub(crate) fn normalize(path: &str, cwd: Option<&str>) -> Vec<String> {
    let path = path.replace('\\', "/");
    let mut out: Vec<String> = Vec::new();
    if !is_anchored(&path)
        && let Some(cwd) = cwd
    {
        out = normalize(cwd, None);
    }
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other.to_owned()),
        }
    }
    out
}

fn is_anchored(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with(['/', '~', '$'])
        || (bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(tool: &str, tool_input: serde_json::Value, cwd: &str) -> HookInput {
        HookInput::from_object(
            json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input, "cwd": cwd})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap()
    }

    #[test]
    fn every_state_file_is_recognised() {
        let cases = [
            (
                "/r/.claude/projects/demo/project.json",
                StateFile::ProjectRecord,
            ),
            ("/r/.claude/projects/demo/tasks.json", StateFile::TaskList),
            (
                "/r/.claude/projects/demo/checkpoints/checkpoint-001.json",
                StateFile::Checkpoint,
            ),
            (
                "/r/.claude/projects/demo/checkpoints",
                StateFile::Checkpoint,
            ),
            (
                "/r/.claude/projects/demo/progress/log.md",
                StateFile::ProgressLog,
            ),
            (
                "/r/.claude/projects/demo/progress/velocity.json",
                StateFile::Velocity,
            ),
            ("/r/.claude/projects/demo/progress", StateFile::ProgressDir),
            ("/r/.claude/projects/demo/temp/.write-1234", StateFile::Temp),
            ("/r/.claude/projects/demo", StateFile::ProjectDir),
            ("/r/.claude/projects/demo/", StateFile::ProjectDir),
            (
                "/r/docs/maestro/state/active-session.md",
                StateFile::OrchestrationSession,
            ),
            (
                "custom/State/Active-Session.md",
                StateFile::OrchestrationSession,
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(classify(path, None), Some(expected), "{path}");
        }
    }

    #[test]
    fn a_plan_s_state_and_decisions_are_state_files_and_its_documents_are_not() {
        let plan = "/r/.claude/.plan_2026-03-14_0000abcd";
        assert_eq!(
            classify(&format!("{plan}/state.md"), None),
            Some(StateFile::PlanState)
        );
        assert_eq!(
            classify(&format!("{plan}/decisions.md"), None),
            Some(StateFile::PlanDecisions)
        );
        assert_eq!(
            classify("/r/.claude/.plan_*/decisions.md", None),
            Some(StateFile::PlanDecisions)
        );
        assert_eq!(classify("state.md", Some(plan)), Some(StateFile::PlanState));
        for free in ["plan.md", "findings.md", "progress.md", "findings/x.md"] {
            assert_eq!(classify(&format!("{plan}/{free}"), None), None, "{free}");
        }
        assert_eq!(classify("/r/docs/state.md", None), None);
        assert_eq!(classify("/r/.claude/notaplan/state.md", None), None);
    }

    #[test]
    fn other_paths_are_not_state_files() {
        for path in [
            "/r/src/main.rs",
            "/r/.claude/projects/demo/research/T-001.md",
            "/r/.claude/projects/demo/notes.md",
            "/r/.claude/settings.json",
            "/r/.claude/projects",
            "/r/.claude/projects/Not_An_Id/tasks.json",
            "/r/docs/.claude/projects.md",
            "/r/.claude/projects/demo/progress/other.md",
            "/r/tasks.json",
            "/r/docs/maestro/state/archive/2026-03-14-x.md",
            "/r/active-session.md",
        ] {
            assert_eq!(classify(path, None), None, "{path}");
        }
    }

    #[test]
    fn windows_paths_relative_paths_and_dot_dot_are_normalised() {
        assert_eq!(
            classify(r"C:\Users\me\repo\.claude\projects\demo\tasks.json", None),
            Some(StateFile::TaskList)
        );
        assert_eq!(
            classify(r"C:\Users\me\repo\.CLAUDE\Projects\demo\Tasks.JSON", None),
            Some(StateFile::TaskList)
        );
        assert_eq!(
            classify("tasks.json", Some(r"C:\repo\.claude\projects\demo")),
            Some(StateFile::TaskList)
        );
        assert_eq!(
            classify("../demo/./tasks.json", Some("/r/.claude/projects/other")),
            Some(StateFile::TaskList)
        );
        assert_eq!(
            classify("/r/.claude/projects/demo/../../x/tasks.json", None),
            None
        );
        // An absolute path ignores cwd.
        assert_eq!(
            classify("/elsewhere/tasks.json", Some("/r/.claude/projects/demo")),
            None
        );
        assert_eq!(
            classify(
                "$CLAUDE_PROJECT_DIR/.claude/projects/demo/tasks.json",
                Some("/x")
            ),
            Some(StateFile::TaskList)
        );
    }

    #[test]
    fn globs_that_could_match_a_state_file_count() {
        assert_eq!(
            classify("/r/.claude/projects/*/tasks.json", None),
            Some(StateFile::TaskList)
        );
        assert_eq!(
            classify("/r/.claude/projects/demo/task?.js*", None),
            Some(StateFile::TaskList)
        );
        assert_eq!(
            classify("/r/.claude/projects/demo/[pt]*.json", None),
            Some(StateFile::ProjectRecord)
        );
        assert_eq!(classify("/r/.claude/projects/demo/*.md", None), None);
    }

    #[test]
    fn file_tools_are_checked_by_their_path_field() {
        let cwd = "/r";
        let refusal = check(&input(
            "Write",
            json!({"file_path": "/r/.claude/projects/demo/tasks.json", "content": "{}"}),
            cwd,
        ))
        .unwrap();
        assert_eq!(refusal.file, StateFile::TaskList);
        assert!(refusal.reason().contains("cairn task add"));
        assert!(
            check(&input(
                "Edit",
                json!({"file_path": ".claude/projects/demo/project.json"}),
                cwd
            ))
            .is_some()
        );
        assert!(
            check(&input(
                "MultiEdit",
                json!({"file_path": ".claude/projects/demo/progress/log.md", "edits": []}),
                cwd
            ))
            .is_some()
        );
        assert!(
            check(&input(
                "NotebookEdit",
                json!({"notebook_path": ".claude/projects/demo/temp/x.ipynb"}),
                cwd
            ))
            .is_some()
        );
        assert!(check(&input("Write", json!({"file_path": "/r/src/lib.rs"}), cwd)).is_none());
        assert!(
            check(&input(
                "Read",
                json!({"file_path": "/r/.claude/projects/demo/tasks.json"}),
                cwd
            ))
            .is_none()
        );
        assert!(check(&input("Write", json!({"file_path": 12}), cwd)).is_none());
        assert!(check(&input("Write", json!("not an object"), cwd)).is_none());
    }

    #[test]
    fn every_reason_names_a_cairn_command() {
        for file in [
            StateFile::ProjectRecord,
            StateFile::TaskList,
            StateFile::Checkpoint,
            StateFile::ProgressLog,
            StateFile::Velocity,
            StateFile::ProgressDir,
            StateFile::Temp,
            StateFile::ProjectDir,
            StateFile::Store,
            StateFile::StoreEntry,
            StateFile::OrchestrationSession,
            StateFile::PlanState,
            StateFile::PlanDecisions,
        ] {
            let reason = Refusal {
                path: "p".into(),
                file,
            }
            .reason();
            assert!(reason.contains("`cairn "), "{file:?}: {reason}");
        }
    }
}
