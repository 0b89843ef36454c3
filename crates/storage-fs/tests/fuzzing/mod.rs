//! The fuzz harness the `fuzz.rs` test files of storage-fs and the hook share: inputs (arbitrary
//! bytes, structured mutations of a valid file) and a runner with a case count and a time budget
//! taken from the environment. See `tests/fuzz.rs` for why it is proptest and not libFuzzer.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestError, TestRunner};

/// Cases per target in an ordinary test run: enough to catch a regression of a fixed panic,
/// cheap enough that `cargo test` does not notice.
const DEFAULT_CASES: u32 = 48;

/// The variable setting the cases per batch.
pub const CASES_ENV: &str = "CAIRN_FUZZ_CASES";
/// The variable setting each target's time budget in seconds (batches repeat until it is spent).
pub const SECONDS_ENV: &str = "CAIRN_FUZZ_SECONDS";

/// Byte strings that mean something to one of the formats, or break UTF-8.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\r",
    b"---\n",
    b"# ",
    b"## ",
    b"### ",
    b"- ",
    b"* ",
    b"|",
    b"\\",
    "\u{2014}".as_bytes(),
    "\u{2192}".as_bytes(),
    "\u{feff}".as_bytes(),
    "\u{1f980}".as_bytes(),
    b"[",
    b"]",
    b"{",
    b"}",
    b"\"",
    b": ",
    b",",
    b"`",
    b"\0",
    b"\t",
    b"    ",
    b"\xff",
    b"\xc3",
    b"\xe2\x80",
    b"99999999999999999999",
    b"18446744073709551616",
    b"-1",
    b"0",
    b"1e999",
    b"null",
    b"NaN",
    b"T-001",
    b"2026-13-45T25:61:61Z",
    b"replay: {",
];

/// One edit of a valid file.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// XOR a byte with a non-zero mask.
    Flip(Index, u8),
    /// Insert a token of one of the formats, or a run of random bytes.
    Insert(Index, Vec<u8>),
    /// Delete up to 16 bytes.
    Delete(Index, usize),
    /// Cut the file short, as a torn write does.
    Truncate(Index),
    DuplicateLine(Index),
    DropLine(Index),
    SwapLines(Index, Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let insert = prop_oneof![
        3 => proptest::sample::select(TOKENS).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 1..8),
    ];
    prop_oneof![
        (any::<Index>(), 1u8..=255).prop_map(|(at, mask)| Mutation::Flip(at, mask)),
        (any::<Index>(), insert).prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        (any::<Index>(), 1usize..16).prop_map(|(at, n)| Mutation::Delete(at, n)),
        any::<Index>().prop_map(Mutation::Truncate),
        any::<Index>().prop_map(Mutation::DuplicateLine),
        any::<Index>().prop_map(Mutation::DropLine),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

/// The byte ranges of `bytes`' lines, each with its `\n`.
fn lines(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push(start..bytes.len());
    }
    out
}

/// `bytes` with `mutation` applied.
pub fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let len = bytes.len();
    match mutation {
        Mutation::Flip(at, mask) if len > 0 => bytes[at.index(len)] ^= mask,
        Mutation::Insert(at, token) => {
            let at = at.index(len + 1);
            bytes.splice(at..at, token.iter().copied());
        }
        Mutation::Delete(at, n) if len > 0 => {
            let at = at.index(len);
            bytes.drain(at..(at + n).min(len));
        }
        Mutation::Truncate(at) => bytes.truncate(at.index(len + 1)),
        Mutation::DuplicateLine(at) | Mutation::DropLine(at) => {
            let lines = lines(bytes);
            if lines.is_empty() {
                return;
            }
            let line = lines[at.index(lines.len())].clone();
            if matches!(mutation, Mutation::DropLine(_)) {
                bytes.drain(line);
            } else {
                let copy = bytes[line.clone()].to_vec();
                bytes.splice(line.start..line.start, copy);
            }
        }
        Mutation::SwapLines(a, b) => {
            let lines = lines(bytes);
            if lines.len() < 2 {
                return;
            }
            let (a, b) = (a.index(lines.len()), b.index(lines.len()));
            if a == b {
                return;
            }
            let (first, second) = (lines[a.min(b)].clone(), lines[a.max(b)].clone());
            let mut out = bytes[..first.start].to_vec();
            out.extend_from_slice(&bytes[second.clone()]);
            out.extend_from_slice(&bytes[first.end..second.start]);
            out.extend_from_slice(&bytes[first]);
            out.extend_from_slice(&bytes[second.end..]);
            *bytes = out;
        }
        Mutation::Flip(..) | Mutation::Delete(..) => {}
    }
}

/// Inputs for a parser whose valid input `seed` is: mostly a few mutations of the seed (they get
/// past the first checks and reach the deep paths), sometimes arbitrary bytes.
pub fn input(seed: &'static [u8]) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..1024),
        1 => Just(seed.to_vec()),
        8 => proptest::collection::vec(mutation(), 1..8).prop_map(move |mutations| {
            let mut bytes = seed.to_vec();
            for m in &mutations {
                apply(&mut bytes, m);
            }
            bytes
        }),
    ]
}

/// [`input`] over several valid files, one drawn per case.
#[allow(dead_code)] // each test crate that includes the harness uses its own part of it
pub fn inputs(seeds: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    proptest::sample::select(seeds).prop_flat_map(input)
}

/// The text a reader that replaces invalid UTF-8 would see (the parsers take `&str`; how a
/// store reacts to invalid UTF-8 is fuzzed through the store itself).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Runs `property` on inputs drawn from `strategy`: one batch of `CAIRN_FUZZ_CASES` cases, or
/// batches until `CAIRN_FUZZ_SECONDS` have passed. A failing or panicking case is shrunk and
/// reported with the smallest input found; the count of cases run is printed.
pub fn fuzz<S>(name: &str, strategy: S, property: impl Fn(Vec<u8>) -> Result<(), TestCaseError>)
where
    S: Strategy<Value = Vec<u8>>,
{
    let cases = env::<u32>(CASES_ENV)
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_CASES);
    let budget = env::<f64>(SECONDS_ENV)
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64);
    let started = Instant::now();
    let mut total = 0u64;
    loop {
        // A fresh runner per batch draws a fresh random seed.
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        match runner.run(&strategy, &property) {
            Ok(()) => total += u64::from(cases),
            Err(TestError::Fail(reason, bytes)) => panic!(
                "fuzz {name}: {reason}\nafter {total} passing cases; smallest failing input:\n{}",
                describe(&bytes)
            ),
            Err(TestError::Abort(reason)) => panic!("fuzz {name}: aborted: {reason}"),
        }
        if budget.is_none_or(|b| started.elapsed() >= b) {
            break;
        }
    }
    eprintln!(
        "fuzz {name}: {total} cases in {:.1}s, no panic, every property held",
        started.elapsed().as_secs_f64()
    );
}

/// An input as a Rust byte-string literal, to paste into a regression test.
pub fn describe(bytes: &[u8]) -> String {
    let mut out = String::from("b\"");
    for b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(char::from(*b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}
