//! Architecture invariant: the domain crate does no I/O. Time and randomness come through ports.

use std::path::Path;

const FORBIDDEN: &[(&str, &str)] = &[
    ("std::fs", "filesystem access belongs in cairn-storage-fs"),
    (
        "std::env",
        "read the environment in a binary and pass values in",
    ),
    ("std::process", "spawning belongs in the binaries"),
    ("std::net", "no networking in the domain"),
    ("SystemTime", "use the Clock port"),
    ("Instant::now", "use the Clock port"),
    ("Utc::now", "use the Clock port"),
    ("Local::now", "use the Clock port"),
    ("new_v4", "use the IdGen port"),
    ("rand::", "use the IdGen port"),
    ("println!", "the domain returns values; binaries print"),
    ("eprintln!", "the domain returns values; binaries print"),
];

/// Calls `check` with the path and text of every `.rs` file under `dir`.
fn each_file(dir: &Path, check: &mut dyn FnMut(&Path, &str)) {
    for entry in std::fs::read_dir(dir).expect("read domain src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            each_file(&path, check);
        } else if path.extension().is_some_and(|e| e == "rs") {
            check(&path, &std::fs::read_to_string(&path).expect("read source"));
        }
    }
}

/// Calls `check` with every line of every `.rs` file under `dir`: the path, the 1-based line
/// number, the whole line and its code (the part before any `//`).
fn each_line(dir: &Path, check: &mut dyn FnMut(&Path, usize, &str, &str)) {
    each_file(dir, &mut |path, text| {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            check(path, n + 1, line, code);
        }
    });
}

fn scan(dir: &Path, offences: &mut Vec<String>) {
    each_line(dir, &mut |path, n, _, code| {
        for (needle, why) in FORBIDDEN {
            if code.contains(needle) {
                offences.push(format!("{}:{n}: `{needle}` — {why}", path.display()));
            }
        }
    });
}

#[test]
fn domain_crate_does_no_io() {
    let mut offences = Vec::new();
    scan(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut offences,
    );
    assert!(
        offences.is_empty(),
        "the domain crate must stay pure:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_tidy_check_can_fail() {
    // Guard against a scan that silently looks at nothing.
    let mut offences = Vec::new();
    let dir = std::env::temp_dir().join(format!("cairn-tidy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("bad.rs"),
        "fn f() { let _ = std::fs::read(\"x\"); }\n",
    )
    .expect("write");
    scan(&dir, &mut offences);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(offences.len(), 1, "{offences:?}");
}

/// Architecture invariant: the domain holds no on-disk format. Rendering a Markdown heading is the
/// surest sign of one, so a string literal that starts a heading (`"# `, `"## ` … `"###### `,
/// also after an escaped line break, `\n## `) is refused. Two exceptions: the contract suites
/// (`contract.rs`), whose literals are sample documents an agent would write, and a line marked
/// `tidy: allow-heading` with its reason (a rule that must recognise a heading, not render one).
fn scan_headings(dir: &Path, offences: &mut Vec<String>) {
    let openers: Vec<String> = (1..=6)
        .flat_map(|level| {
            let hashes = "#".repeat(level);
            [format!("\"{hashes} "), format!("\\n{hashes} ")]
        })
        .collect();
    each_line(dir, &mut |path, n, line, code| {
        if path.file_name().is_some_and(|name| name == "contract.rs")
            || line.contains("tidy: allow-heading")
        {
            return;
        }
        if let Some(opener) = openers.iter().find(|o| code.contains(o.as_str())) {
            offences.push(format!(
                "{}:{n}: `{opener}` renders a Markdown heading — on-disk formats live in \
                 cairn-storage-fs (one module per aggregate); pass typed values through the port",
                path.display()
            ));
        }
    });
}

#[test]
fn domain_crate_renders_no_markdown_headings() {
    let mut offences = Vec::new();
    scan_headings(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut offences,
    );
    assert!(
        offences.is_empty(),
        "the domain crate must hold no on-disk format:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_heading_check_can_fail() {
    let dir = std::env::temp_dir().join(format!("cairn-tidy-headings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("bad.rs"),
        concat!(
            "fn a(x: &str) -> String { format!(\"## {x}\") }\n",
            "const B: &str = \"# Title\\n\";\n",
            "const C: &str = \"intro\\n### Section\";\n",
            "const D: &str = r#\"###### deep\"#;\n",
            "fn fine(s: &str) -> bool { s.starts_with('#') || s == \"#\" || s.contains(\"#tag\") }\n",
            "// \"## a comment is not code\"\n",
            "fn rule(l: &str) -> bool { l.starts_with(\"## D-\") } // tidy: allow-heading (a rule)\n",
        ),
    )
    .expect("write");
    std::fs::write(
        dir.join("contract.rs"),
        "const S: &str = \"# Findings\\n\";\n",
    )
    .expect("write");
    let mut offences = Vec::new();
    scan_headings(&dir, &mut offences);
    std::fs::remove_dir_all(&dir).ok();
    let lines: Vec<&str> = offences
        .iter()
        .map(|o| o.split(": `").next().unwrap_or(""))
        .map(|o| o.rsplit(':').next().unwrap_or(""))
        .collect();
    assert_eq!(lines, ["1", "2", "3", "4"], "{offences:#?}");
}

/// The contents of every string literal in `source`, with the line it starts on. Comments (doc
/// comments included) and char literals are skipped; raw strings are understood.
fn string_literals(source: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '\'' {
            // A char literal ('x', '\n', '\'') or a lifetime ('a): skip the former only.
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c == '"'
            || (c == 'r' && matches!(at(i + 1), '"' | '#') && !ident(at_prev(&chars, i)))
        {
            let raw = c == 'r';
            let mut hashes = 0;
            if raw {
                i += 1;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                if at(i) != '"' {
                    continue;
                }
            }
            i += 1;
            let start_line = line;
            let mut text = String::new();
            while i < chars.len() {
                let ch = chars[i];
                if !raw && ch == '\\' {
                    text.push(ch);
                    text.push(at(i + 1));
                    if at(i + 1) == '\n' {
                        line += 1;
                    }
                    i += 2;
                    continue;
                }
                if ch == '"' && (0..hashes).all(|k| at(i + 1 + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                if ch == '\n' {
                    line += 1;
                }
                text.push(ch);
                i += 1;
            }
            out.push((start_line, text));
        } else {
            i += 1;
        }
    }
    out
}

fn at_prev(chars: &[char], i: usize) -> char {
    if i == 0 { ' ' } else { chars[i - 1] }
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Command-line syntax in `text`: `cairn <word>` or a `--flag`.
fn command_syntax(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices("cairn ") {
        let before = i.checked_sub(1).map(|b| bytes[b] as char).unwrap_or(' ');
        if !ident(before) && bytes.get(i + 6).is_some_and(u8::is_ascii_lowercase) {
            return Some(text[i..].chars().take(24).collect());
        }
    }
    for (i, _) in text.match_indices("--") {
        let before = i.checked_sub(1).map(|b| bytes[b] as char).unwrap_or(' ');
        if !ident(before) && before != '-' && bytes.get(i + 2).is_some_and(u8::is_ascii_lowercase) {
            return Some(text[i..].chars().take(24).collect());
        }
    }
    None
}

fn scan_for_command_syntax(dir: &Path, offences: &mut Vec<String>) {
    each_file(dir, &mut |path, text| {
        for (line, literal) in string_literals(text) {
            if let Some(found) = command_syntax(&literal) {
                offences.push(format!("{}:{line}: `{found}`", path.display()));
            }
        }
    });
}

/// Architecture invariant: no presentation in the domain. Refusals and reports carry typed
/// `NextStep`s; each interface renders them (the CLI and the hook through `cairn-render`), so a
/// renamed flag touches one renderer and the MCP server can say the same as a tool call.
#[test]
fn domain_strings_carry_no_command_syntax() {
    let mut offences = Vec::new();
    scan_for_command_syntax(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut offences,
    );
    assert!(
        offences.is_empty(),
        "command syntax in domain string literals; return a NextStep and render it in cairn-render:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_command_syntax_check_can_fail() {
    let source = r##"
        /// Doc comments may say `cairn task start`, and so may // comments: cairn task next.
        fn f<'a>(x: &'a str) -> char {
            let _ = "finish first: cairn task research T-1 --done";
            let _ = r#"pick one with --project ID"#;
            let _ = "cairn's own, x--y, -- alone";
            '"'
        }
        const S: &str = "multi \
            line --force";
    "##;
    let found: Vec<String> = string_literals(source)
        .into_iter()
        .filter_map(|(line, text)| command_syntax(&text).map(|f| format!("{line}: {f}")))
        .collect();
    assert_eq!(
        found,
        [
            "4: cairn task research T-1 ",
            "5: --project ID",
            "9: --force"
        ],
        "{found:?}"
    );
}
