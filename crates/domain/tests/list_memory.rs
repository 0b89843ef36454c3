//! Dropped task lists and the short-process switch (`forget_lists_when_dropped`): once it is on,
//! a dropped list's memory is left to the process's end — unless a `freeing_lists` guard is
//! alive, as it is while an import drops a copy of the list per status move (forgotten, those
//! copies grew one `cairn import` of 10,000 tasks to 24 GB). Measured by the resident memory of
//! this test binary, a binary of its own: the switch is process-wide.
#![cfg(target_os = "linux")]

use cairn_domain::project::fixtures::{doc_of, pending_task};
use cairn_domain::project::{TaskDoc, forget_lists_when_dropped, freeing_lists};

fn resident_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .expect("resident")
        .parse()
        .expect("pages");
    pages * 4096.0 / 1e6
}

/// How far resident memory grew while `doc`'s list was copied and the copy dropped 40 times.
fn growth_from_dropped_copies(doc: &TaskDoc) -> f64 {
    let before = resident_mb();
    for _ in 0..40 {
        drop(std::hint::black_box(doc.clone()));
    }
    resident_mb() - before
}

#[test]
fn a_freeing_guard_frees_the_lists_the_short_process_switch_would_forget() {
    // About 10 MB a copy: 40 forgotten copies are 400 MB, 40 freed ones reuse one copy's memory.
    let title = "a task whose title is long enough to weigh in the copy ".repeat(4);
    let doc = doc_of((1..=20_000).map(|n| pending_task(n, &title)).collect());
    let freed = growth_from_dropped_copies(&doc);
    assert!(freed < 50.0, "freed by default: grew {freed:.0} MB");
    forget_lists_when_dropped();
    {
        let _freeing = freeing_lists();
        let guarded = growth_from_dropped_copies(&doc);
        assert!(
            guarded < 50.0,
            "freed under the guard: grew {guarded:.0} MB"
        );
    }
    let forgotten = growth_from_dropped_copies(&doc);
    assert!(
        forgotten > 200.0,
        "forgotten with the switch on and no guard: grew {forgotten:.0} MB"
    );
}
