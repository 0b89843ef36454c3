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

/// Calls `check` with every line of every `.rs` file under `dir`: the path, the 1-based line
/// number, the whole line and its code (the part before any `//`).
fn each_line(dir: &Path, check: &mut dyn FnMut(&Path, usize, &str, &str)) {
    for entry in std::fs::read_dir(dir).expect("read domain src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            each_line(&path, check);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read source");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                check(&path, n + 1, line, code);
            }
        }
    }
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
