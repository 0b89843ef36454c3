//! README.md's exit-code table equals the codes `cairn` returns.
//!
//! The codes are the discriminants of `enum Code` in crates/cli/src/exit.rs. Each has a meaning in
//! `EXIT_CODES_HELP` there (what `cairn --help` prints); its *keyword* is that meaning up to the
//! first `:` ("not found", "lock timeout"). README.md's table (`| code | meaning |`) and the table in
//! exit.rs's module documentation must list exactly the enum's codes, each row's meaning containing
//! the code's keyword. Comparison ignores case, backticks and repeated spaces.

use std::collections::BTreeMap;
use std::path::Path;

const CODE_FILE: &str = "crates/cli/src/exit.rs";
const README: &str = "README.md";

pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let read = |rel: &str| {
        std::fs::read_to_string(root.join(rel)).map_err(|e| format!("cannot read {rel}: {e}"))
    };
    let code = read(CODE_FILE)?;
    let readme = read(README)?;
    let module_docs: String = code
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(compare(
        &code,
        &[(README, &readme), (CODE_FILE, &module_docs)],
    ))
}

fn compare(code: &str, documents: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let codes = enum_codes(code);
    if codes.is_empty() {
        out.push(format!(
            "{CODE_FILE}: found no `pub enum Code {{ Name = N, … }}`; if the exit codes moved, point xtask/src/tidy/exit_codes.rs at their new home"
        ));
        return out;
    }
    let help = help_lines(code);
    let mut keywords = BTreeMap::new();
    for (number, name) in &codes {
        match help.get(number) {
            Some(meaning) => {
                keywords.insert(*number, keyword(meaning));
            }
            None => out.push(format!(
                "{CODE_FILE}: `Code::{name}` ({number}) has no line in EXIT_CODES_HELP; add `  {number}  <meaning>` there"
            )),
        }
    }
    for number in help.keys().filter(|n| !codes.contains_key(n)) {
        out.push(format!(
            "{CODE_FILE}: EXIT_CODES_HELP lists {number}, which no `Code` variant has; remove the line or add the variant"
        ));
    }
    for (name, text) in documents {
        let table = table(text);
        if table.is_empty() {
            out.push(format!(
                "{name}: no exit-code table found; add a `| code | meaning |` table listing every code in {CODE_FILE}"
            ));
            continue;
        }
        for (number, variant) in &codes {
            match table.get(number) {
                None => out.push(format!(
                    "{name}: the exit-code table lacks {number} (`Code::{variant}`); add a row for it"
                )),
                Some(meaning) => {
                    if let Some(keyword) = keywords.get(number)
                        && !normalize(meaning).contains(keyword.as_str())
                    {
                        out.push(format!(
                            "{name}: exit code {number} means \"{meaning}\" there, but `cairn --help` says \"{keyword}\"; make them agree"
                        ));
                    }
                }
            }
        }
        for number in table.keys().filter(|n| !codes.contains_key(n)) {
            out.push(format!(
                "{name}: the exit-code table lists {number}, which `cairn` never returns; remove the row"
            ));
        }
    }
    out
}

/// `Name = N` lines of `pub enum Code { … }`.
fn enum_codes(code: &str) -> BTreeMap<u8, String> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in code.lines() {
        let line = line.trim();
        if line.starts_with("pub enum Code") {
            inside = true;
        } else if inside && line.starts_with('}') {
            break;
        } else if inside
            && let Some((name, value)) = line.trim_end_matches(',').split_once('=')
            && let Ok(number) = value.trim().parse()
        {
            out.insert(number, name.trim().to_owned());
        }
    }
    out
}

/// `  N  meaning` lines of the `EXIT_CODES_HELP` string.
fn help_lines(code: &str) -> BTreeMap<u8, String> {
    let mut out = BTreeMap::new();
    let Some((_, rest)) = code.split_once("EXIT_CODES_HELP: &str") else {
        return out;
    };
    let Some((_, body)) = rest.split_once('"') else {
        return out;
    };
    let body = body.split('"').next().unwrap_or("");
    for line in body.lines() {
        let line = line.trim();
        let digits: String = line.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(number) = digits.parse() {
            out.insert(number, line[digits.len()..].trim().to_owned());
        }
    }
    out
}

/// The rows `| N | meaning |` of the first table whose header is `| code | meaning |`.
fn table(text: &str) -> BTreeMap<u8, String> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let is_row = line.trim().starts_with('|');
        if !inside {
            inside = is_row
                && cells.len() == 2
                && cells[0].eq_ignore_ascii_case("code")
                && cells[1].eq_ignore_ascii_case("meaning");
            continue;
        }
        if !is_row {
            break;
        }
        if let (Ok(number), [_, meaning]) = (cells[0].parse(), cells.as_slice()) {
            out.insert(number, (*meaning).to_owned());
        }
    }
    out
}

fn keyword(meaning: &str) -> String {
    normalize(meaning.split(':').next().unwrap_or(meaning))
}

fn normalize(text: &str) -> String {
    text.replace('`', "")
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: &str = "//! | code | meaning |\n//! |---|---|\n//! | 0 | success |\n\
pub const EXIT_CODES_HELP: &str = \"Exit codes:\n  0  success\n  3  not found: no such task\nA refused command changes nothing.\";\n\
pub enum Code {\n    Ok = 0,\n    NotFound = 3,\n}\n";

    const README_OK: &str = "Intro.\n\n| code | meaning |\n|---|---|\n| 0 | success |\n| 3 | Not found: no such task, or `project` |\n\nAfter.\n| 4 | not a table row of ours |\n";

    #[test]
    fn the_parsers_read_the_three_sources() {
        assert_eq!(
            enum_codes(CODE),
            BTreeMap::from([(0, "Ok".to_owned()), (3, "NotFound".to_owned())])
        );
        assert_eq!(help_lines(CODE)[&3], "not found: no such task");
        assert_eq!(
            table(README_OK),
            BTreeMap::from([
                (0, "success".to_owned()),
                (3, "Not found: no such task, or `project`".to_owned())
            ])
        );
    }

    #[test]
    fn equal_tables_pass() {
        assert_eq!(
            compare(CODE, &[("README.md", README_OK)]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn differences_either_way_fail() {
        let missing = "| code | meaning |\n|---|---|\n| 0 | success |\n";
        let extra =
            "| code | meaning |\n|---|---|\n| 0 | success |\n| 3 | not found |\n| 9 | doctor |\n";
        let wrong = "| code | meaning |\n|---|---|\n| 0 | success |\n| 3 | lock timeout |\n";
        for (doc, needle) in [
            (missing, "lacks 3"),
            (extra, "lists 9"),
            (wrong, "says \"not found\""),
            ("no table", "no exit-code table"),
        ] {
            let found = compare(CODE, &[("README.md", doc)]);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].contains(needle), "{found:?}");
        }
        let undocumented = CODE.replace("NotFound = 3,", "NotFound = 3,\n    Busy = 6,");
        let found = compare(&undocumented, &[("README.md", README_OK)]);
        assert!(
            found
                .iter()
                .any(|f| f.contains("`Code::Busy` (6) has no line")),
            "{found:?}"
        );
        assert!(found.iter().any(|f| f.contains("lacks 6")), "{found:?}");
    }
}
