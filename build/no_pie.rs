//! Build script of cairn's three binaries (`cairn`, `cairn-hook`, `cairn-bench`): link them as
//! position-dependent executables on Linux.
//!
//! A position-independent executable is loaded at a random address, so the dynamic loader
//! patches every absolute pointer in its data at each start: 20,000 relocations in `cairn-hook`,
//! 370 KB of pages copied on write (217 page faults for a start, 125 without). `cairn-hook`
//! starts on every tool call of every agent and does little else on PreToolUse: linked this way
//! its whole run took 1.49–1.64 ms instead of 1.76–2.17 ms (`cairn-bench all --quick --only
//! hook`, three alternations of the two builds), and `cairn task next` at 10,000 tasks 10.1
//! instead of 10.8 ms (150 interleaved runs each). The cost is the randomised base address of
//! the binary itself (libraries, stack and heap stay randomised), which a local tool that reads
//! its own repository's files can do without.
//!
//! Only the binaries are linked this way (`rustc-link-arg-bins`); the code stays
//! position-independent, so libraries, tests and proc-macros are unaffected. `cairn-bench` is
//! linked the same way so that its floors start as `cairn` does.

fn main() {
    println!("cargo::rerun-if-changed=../../build/no_pie.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
