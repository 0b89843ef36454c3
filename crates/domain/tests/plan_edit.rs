//! `decide_edit`: what the hook lets the agent write in each state, with awkward paths.

use cairn_domain::plan::{EditVerdict, PlanFile, PlanState, decide_edit, writable_plan_files};

use PlanState::*;

const DIR: &str = "/repo/.claude/.plan_2026-02-14_a3f1b2c9";

fn allowed(state: PlanState, target: &str) -> bool {
    decide_edit(state, target, DIR).is_allowed()
}

fn reason(verdict: EditVerdict) -> String {
    match verdict {
        EditVerdict::Deny { reason } => reason,
        EditVerdict::Allow => panic!("expected a denial"),
    }
}

#[test]
fn project_files_are_editable_only_in_execute_and_close() {
    for state in PlanState::ALL {
        let expected = matches!(state, Execute | Close);
        assert_eq!(allowed(state, "/repo/src/main.rs"), expected, "{state}");
        assert_eq!(
            allowed(state, "/repo/.claude/settings.json"),
            expected,
            "{state}: .claude itself is project"
        );
        assert_eq!(allowed(state, "/elsewhere/notes.md"), expected, "{state}");
    }
    let why = reason(decide_edit(Plan, "/repo/src/main.rs", DIR));
    assert!(
        why.contains("PLAN") && why.contains(DIR),
        "the reason must name the state and the plan dir: {why}"
    );
}

#[test]
fn plan_files_follow_the_lifecycle_matrix() {
    let cases: &[(&str, &[PlanState])] = &[
        ("plan.md", &[Plan, Execute]),
        ("findings.md", &[Explore]),
        ("findings/auth-system.md", &[Explore]),
        ("findings/deep/nested.md", &[Explore]),
        ("progress.md", &[Plan, Execute, Reflect, RePlan]),
        ("checkpoints/cp-000.md", &[Execute]),
        ("summary.md", &[Close]),
        ("state.md", &[]),
        ("decisions.md", &[]),
        ("findings", &[]),
        ("checkpoints/", &[]),
        ("scratch.txt", &[]),
    ];
    for (file, states) in cases {
        for state in PlanState::ALL {
            let target = format!("{DIR}/{file}");
            assert_eq!(
                allowed(state, &target),
                states.contains(&state),
                "{file} in {state}"
            );
        }
    }
    assert!(
        !writable_plan_files(RePlan).contains(&PlanFile::Plan),
        "RE-PLAN must not write plan.md"
    );
    assert!(
        reason(decide_edit(Execute, &format!("{DIR}/state.md"), DIR))
            .contains("the plan's own operations")
    );
    assert!(
        reason(decide_edit(Reflect, &format!("{DIR}/decisions.md"), DIR)).contains("append-only")
    );
    let why = reason(decide_edit(RePlan, &format!("{DIR}/plan.md"), DIR));
    assert!(
        why.contains("plan.md is not written in RE-PLAN") && why.contains("progress.md"),
        "{why}"
    );
}

#[test]
fn dot_segments_are_resolved_lexically() {
    assert!(allowed(
        Explore,
        "/repo/.claude/./.plan_2026-02-14_a3f1b2c9/findings.md"
    ));
    assert!(allowed(
        Explore,
        "/repo/src/../.claude/.plan_2026-02-14_a3f1b2c9//findings.md"
    ));
    assert!(allowed(
        Explore,
        "/repo/.claude/.plan_2026-02-14_a3f1b2c9/findings/../findings.md"
    ));
    // Looks like it is inside, climbs out.
    assert!(!allowed(
        Explore,
        "/repo/.claude/.plan_2026-02-14_a3f1b2c9/../../src/main.rs"
    ));
    assert!(!allowed(
        Explore,
        "/repo/.claude/.plan_2026-02-14_a3f1b2c9/findings/../../x.md"
    ));
    // Climbing above the root is refused, even in EXECUTE.
    let why = reason(decide_edit(Execute, "/../etc/passwd", DIR));
    assert!(why.contains(".."), "{why}");
    assert!(!allowed(Execute, "../../outside.rs"));
    // The plan dir itself is not a file to write, nor is a sibling sharing its prefix.
    assert!(!allowed(Explore, DIR));
    assert!(!allowed(
        Explore,
        "/repo/.claude/.plan_2026-02-14_a3f1b2c9x/findings.md"
    ));
    assert!(!allowed(
        Explore,
        "/repo/.claude/.plan_2026-02-14_a3f1b2c9.md"
    ));
    // Trailing separators on the plan dir do not matter.
    assert!(decide_edit(Explore, &format!("{DIR}/findings.md"), &format!("{DIR}/")).is_allowed());
}

#[test]
fn windows_paths_compare_case_insensitively_with_either_separator() {
    let dir = r"C:\Users\me\repo\.claude\.plan_2026-02-14_a3f1b2c9";
    assert!(
        decide_edit(
            Explore,
            r"C:\Users\me\repo\.claude\.plan_2026-02-14_a3f1b2c9\findings.md",
            dir
        )
        .is_allowed()
    );
    assert!(
        decide_edit(
            Explore,
            "c:/users/ME/repo/.claude/.plan_2026-02-14_a3f1b2c9/FINDINGS.md",
            dir
        )
        .is_allowed()
    );
    assert!(
        decide_edit(
            Explore,
            r"C:\Users\me\repo\.claude\.plan_2026-02-14_a3f1b2c9/findings\topic.md",
            dir
        )
        .is_allowed()
    );
    assert!(!decide_edit(Explore, r"C:\Users\me\repo\src\main.rs", dir).is_allowed());
    assert!(
        !decide_edit(
            Explore,
            r"D:\Users\me\repo\.claude\.plan_2026-02-14_a3f1b2c9\findings.md",
            dir
        )
        .is_allowed()
    );
    assert!(
        !decide_edit(
            Explore,
            r"C:\Users\me\repo\.claude\.plan_2026-02-14_a3f1b2c9\..\..\src\x.rs",
            dir
        )
        .is_allowed()
    );
    assert!(
        !decide_edit(
            Plan,
            r"C:\Users\me\repo\.claude\.plan_2026-02-14_a3f1b2c9\STATE.MD",
            dir
        )
        .is_allowed()
    );
    // Verbatim prefixes name the same file.
    assert!(
        decide_edit(
            Explore,
            r"\\?\C:\Users\me\repo\.claude\.plan_2026-02-14_a3f1b2c9\findings.md",
            dir
        )
        .is_allowed()
    );
    // A drive-relative path cannot be placed.
    assert!(!decide_edit(Execute, r"C:findings.md", dir).is_allowed());

    let share = r"\\server\share\repo\.claude\.plan_2026-02-14_a3f1b2c9";
    assert!(
        decide_edit(
            Plan,
            r"\\SERVER\share\repo\.claude\.plan_2026-02-14_a3f1b2c9\plan.md",
            share
        )
        .is_allowed()
    );
    assert!(
        decide_edit(
            Plan,
            r"\\?\UNC\server\share\repo\.claude\.plan_2026-02-14_a3f1b2c9\plan.md",
            share
        )
        .is_allowed()
    );
    assert!(
        !decide_edit(
            Plan,
            r"\\other\share\repo\.claude\.plan_2026-02-14_a3f1b2c9\plan.md",
            share
        )
        .is_allowed()
    );
    assert!(!decide_edit(Plan, r"\\server", share).is_allowed());
}

#[test]
fn posix_paths_stay_case_sensitive() {
    assert!(!allowed(
        Explore,
        "/repo/.claude/.plan_2026-02-14_a3f1b2c9/FINDINGS.md"
    ));
    assert!(!allowed(
        Explore,
        "/REPO/.claude/.plan_2026-02-14_a3f1b2c9/findings.md"
    ));
}

#[test]
fn paths_that_cannot_be_placed_are_denied() {
    for state in PlanState::ALL {
        assert!(!allowed(state, ""), "{state}: empty path");
        assert!(!allowed(state, "   "), "{state}: blank path");
        assert!(
            !allowed(state, "src/main.rs"),
            "{state}: relative target against an absolute plan dir"
        );
        assert!(!allowed(state, "/repo/src/\0main.rs"), "{state}: NUL byte");
    }
    // Both relative to the same base is fine.
    assert!(decide_edit(Explore, ".claude/.plan_x/findings.md", ".claude/.plan_x").is_allowed());
    assert!(!decide_edit(Explore, ".claude/.plan_x/../src/a.rs", ".claude/.plan_x").is_allowed());
    assert!(
        !decide_edit(Execute, "/repo/x.rs", "../plan").is_allowed(),
        "a plan dir that climbs out cannot be placed"
    );
}
