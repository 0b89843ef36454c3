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

fn scan(dir: &Path, offences: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read domain src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            scan(&path, offences);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read source");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for (needle, why) in FORBIDDEN {
                    if code.contains(needle) {
                        offences.push(format!("{}:{}: `{needle}` — {why}", path.display(), n + 1));
                    }
                }
            }
        }
    }
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
