//! Claims with leases through the binary: claim, heartbeat, refusal of another agent, `--force`,
//! expiry (with `CAIRN_NOW`), reconciliation, and real processes racing for tasks.

use std::collections::{HashMap, HashSet};

use crate::support::{Adapter, NOW, Repo, code};

crate::support::on_both_adapters!(
    claim_heartbeat_and_the_holders_rights,
    an_expired_lease_is_reclaimable_and_reconciled,
    bad_claims_say_what_to_do_and_change_nothing,
    racing_processes_never_claim_the_same_task,
);

/// `NOW` plus `minutes`, as `CAIRN_NOW` takes it.
fn at(minutes: i64) -> String {
    (chrono::DateTime::parse_from_rfc3339(NOW).unwrap() + chrono::Duration::minutes(minutes))
        .to_rfc3339()
}

fn claim_heartbeat_and_the_holders_rights(adapter: Adapter) {
    let repo = Repo::with_project_on(adapter);
    let first = repo.add(&["Write the parser"]);
    let second = repo.add(&["Write the printer"]);

    let claimed = repo.json(&[
        "task", "claim", &first, "--agent", "alice", "--lease", "10m",
    ]);
    assert_eq!(claimed["status"], "IN_PROGRESS");
    assert_eq!(claimed["claimed_by"], "alice");
    assert_eq!(claimed["lease_expires_at"], "2026-01-15T09:40:00Z");
    let shown = repo.ok(&["task", "show", &first]);
    assert!(
        shown.contains("alice (lease until 2026-01-15T09:40:00Z)"),
        "{shown}"
    );
    let status = repo.ok(&["status"]);
    assert!(status.contains("claimed by alice until"), "{status}");
    let status = repo.json(&["status"]);
    assert_eq!(status["claims"][0]["agent"], "alice");

    // Another agent: refused, naming the holder and the expiry, and nothing changes.
    let before = repo.tasks_state();
    let run = repo.fails(&["task", "claim", &first, "--agent", "bob"], code::REFUSED);
    assert!(
        run.stderr
            .contains("claimed by alice until 2026-01-15T09:40:00Z"),
        "{}",
        run.stderr
    );
    for verb in [
        vec!["task", "complete", first.as_str(), "--agent", "bob"],
        vec![
            "task",
            "block",
            first.as_str(),
            "--reason",
            "mine now",
            "--agent",
            "bob",
        ],
        vec!["task", "cancel", first.as_str(), "--agent", "bob"],
        vec!["task", "reset", first.as_str(), "--agent", "bob"],
        vec!["task", "heartbeat", first.as_str(), "--agent", "bob"],
    ] {
        let run = repo.fails(&verb, code::REFUSED);
        assert!(run.stderr.contains("alice"), "{verb:?}: {}", run.stderr);
    }
    let run = repo.run_env(&["task", "complete", &first], &[("CAIRN_AGENT", "bob")]);
    assert_eq!(run.code, code::REFUSED, "CAIRN_AGENT names the agent too");
    assert_eq!(repo.tasks_state(), before);

    // The holder renews its lease (later, so the expiry moves).
    let run = repo.run_env(
        &[
            "--json",
            "task",
            "heartbeat",
            &first,
            "--agent",
            "alice",
            "--lease",
            "1h",
        ],
        &[("CAIRN_NOW", &at(5))],
    );
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert!(
        run.stdout.contains("2026-01-15T10:35:00Z"),
        "{}",
        run.stdout
    );

    // --force overrides; the claim goes with the work.
    repo.ok(&["task", "reset", &first, "--agent", "bob", "--force"]);
    let task = repo.task(&first);
    assert_eq!(task["status"], "PENDING");
    assert!(task.get("claimed_by").is_none(), "{task}");

    // Without an agent, a person acts: allowed.
    repo.ok(&["task", "claim", &second, "--agent", "alice"]);
    repo.ok(&["task", "complete", &second]);
    assert_eq!(repo.status_of(&second), "COMPLETE");

    let kinds: Vec<String> = repo
        .items(&["log"])
        .iter()
        .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(kinds.contains(&"TASK_CLAIMED".to_owned()), "{kinds:?}");
    assert!(kinds.contains(&"LEASE_RENEWED".to_owned()), "{kinds:?}");
}

fn an_expired_lease_is_reclaimable_and_reconciled(adapter: Adapter) {
    let repo = Repo::with_project_on(adapter);
    let task = repo.add(&["Migrate the schema"]);
    let other = repo.add(&["Write docs"]);
    repo.ok(&["task", "claim", &task, "--agent", "alice", "--lease", "10m"]);
    repo.ok(&["task", "claim", &other, "--agent", "carol", "--lease", "1h"]);

    // Resume by another session while the leases run: nobody's work is reset.
    let report = repo.json(&["reconcile", "--agent", "bob"]);
    assert_eq!(
        report["reconciled"].as_array().unwrap().len(),
        0,
        "{report}"
    );
    assert_eq!(repo.status_of(&task), "IN_PROGRESS");

    // 11 minutes later alice's lease lapsed: bob may take it over.
    let later = at(11);
    let run = repo.run_env(
        &["--json", "task", "claim", &task, "--agent", "bob"],
        &[("CAIRN_NOW", &later)],
    );
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    let claimed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(claimed["claimed_by"], "bob");

    // Reconciliation after bob's lease lapsed too resets the task and logs LEASE_EXPIRED;
    // carol's live lease keeps hers.
    let much_later = at(45);
    let run = repo.run_env(&["--json", "reconcile"], &[("CAIRN_NOW", &much_later)]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert_eq!(repo.status_of(&task), "PENDING");
    assert_eq!(repo.status_of(&other), "IN_PROGRESS");
    let expired = repo.items(&["log", "--event", "LEASE_EXPIRED"]);
    assert_eq!(expired.len(), 2, "take-over and reset: {expired:?}");

    // The holder's own session resets its claim on resume.
    let run = repo.run_env(&["reconcile"], &[("CAIRN_AGENT", "carol")]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert_eq!(repo.status_of(&other), "PENDING");
}

fn bad_claims_say_what_to_do_and_change_nothing(adapter: Adapter) {
    let repo = Repo::with_project_on(adapter);
    let task = repo.add(&["Write the parser"]);
    let before = repo.tasks_state();
    repo.fails(
        &["task", "claim", &task, "--agent", "a", "--lease", "soon"],
        code::USAGE,
    );
    repo.fails(
        &["task", "claim", &task, "--agent", "a", "--lease", "48h"],
        code::INVALID,
    );
    repo.fails(&["task", "claim", &task, "--agent", " "], code::INVALID);
    repo.fails(&["task", "claim", &task], code::USAGE);
    repo.fails(
        &["task", "claim", &task, "--next", "--agent", "a"],
        code::USAGE,
    );
    repo.fails(&["task", "claim", "T-404", "--agent", "a"], code::NOT_FOUND);
    repo.fails(&["task", "heartbeat", &task, "--agent", "a"], code::REFUSED);
    assert_eq!(repo.tasks_state(), before);

    let blocked = repo.add(&["Wait for keys"]);
    repo.ok(&["task", "block", &blocked, "--reason", "no API keys"]);
    let run = repo.fails(&["task", "claim", &blocked, "--agent", "a"], code::REFUSED);
    assert!(
        run.stderr.contains("only a PENDING or RESEARCHED task"),
        "{}",
        run.stderr
    );

    repo.ok(&["task", "claim", "--next", "--agent", "a"]);
    let run = repo.fails(&["task", "claim", "--next", "--agent", "b"], code::REFUSED);
    assert!(
        run.stderr.contains("no task is ready to claim"),
        "{}",
        run.stderr
    );
}

/// 16 processes × `claim --next` until nothing is left, on 200 ready tasks: every task is claimed
/// exactly once, by the process that was told it got it, and every claim is logged once.
/// `CAIRN_CLAIM_RACE=64x1000` runs the size (agents × tasks), as `cargo xtask ci` does:
/// minutes of debug-build processes on a two-core machine, too long for a quick local run.
fn racing_processes_never_claim_the_same_task(adapter: Adapter) {
    let (racers, race_tasks) = crate::support::size_from_env("CAIRN_CLAIM_RACE", (16, 200));
    let repo = Repo::with_project_on(adapter);
    // One process adds them all: the race is what is measured, not the set-up.
    let list: String = (0..race_tasks)
        .map(|i| format!("- [ ] task number {i}\n"))
        .collect();
    let file = repo.root().join("TODO.md");
    std::fs::write(&file, list).unwrap();
    repo.ok(&["import", "markdown", file.to_str().unwrap()]);
    let holder_of: HashMap<String, String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..racers)
            .map(|w| {
                let repo = &repo;
                scope.spawn(move || {
                    let agent = format!("agent-{w}");
                    let mut won = Vec::new();
                    loop {
                        let out = repo
                            .command(&["--json", "task", "claim", "--next", "--agent", &agent])
                            .env("CAIRN_LOCK_TIMEOUT_MS", "120000")
                            .output()
                            .expect("run cairn");
                        match out.status.code() {
                            Some(0) => {
                                let task: serde_json::Value =
                                    serde_json::from_slice(&out.stdout).unwrap();
                                assert_eq!(task["claimed_by"], agent.as_str());
                                won.push(task["id"].as_str().unwrap().to_owned());
                            }
                            Some(4) => break,
                            other => panic!(
                                "{agent}: exit {other:?}: {}",
                                String::from_utf8_lossy(&out.stderr)
                            ),
                        }
                    }
                    (agent, won)
                })
            })
            .collect();
        let mut holder_of = HashMap::new();
        for h in handles {
            let (agent, won) = h.join().expect("racer");
            for id in won {
                if let Some(first) = holder_of.insert(id.clone(), agent.clone()) {
                    panic!("{id} claimed twice: by {first} and {agent}");
                }
            }
        }
        holder_of
    });
    assert_eq!(
        holder_of.len(),
        race_tasks,
        "every task claimed exactly once"
    );
    let doc: serde_json::Value = serde_json::from_str(&repo.tasks_state()).unwrap();
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), race_tasks);
    for t in tasks {
        let id = t["id"].as_str().unwrap();
        assert_eq!(t["status"], "IN_PROGRESS", "{id}");
        assert_eq!(
            t["claimed_by"],
            holder_of[id].as_str(),
            "{id}: the store agrees"
        );
    }
    let claims = repo.items(&["log", "--event", "TASK_CLAIMED"]);
    let logged: HashSet<&str> = claims
        .iter()
        .map(|e| e["fields"]["task"].as_str().unwrap())
        .collect();
    assert_eq!((claims.len(), logged.len()), (race_tasks, race_tasks));
}
