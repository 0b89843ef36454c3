//! The hexagon's dependency directions, between workspace crates.
//!
//! The domain depends on no workspace crate; the render crate and the filesystem adapter only on
//! the domain; the binaries on whatever they wire together. No crate depends on a binary crate,
//! with one named exception, and xtask may use anything. A new workspace crate must be given its
//! place in [`POLICY`] before the check passes, so the directions are decided, not drifted into.

use serde_json::Value;

/// Each workspace crate and the workspace crates it may depend on (any kind of dependency).
const POLICY: &[(&str, &[&str])] = &[
    ("cairn-domain", &[]),
    // The binaries' allocator (unsafe code, with the lease crate): it knows nothing of cairn.
    ("cairn-heap", &[]),
    // Whether anyone else has a file open (unsafe code, with the heap): it knows nothing of cairn.
    ("cairn-lease", &[]),
    ("cairn-render", &["cairn-domain"]),
    // The heap's `recycling` guard: a read that builds and drops a JSON tree per task says so, and
    // the binaries' allocator frees those blocks instead of bumping them (a no-op elsewhere). The
    // lease: whether a retired tasks.json may be overwritten in place (`atomic`).
    (
        "cairn-storage-fs",
        &["cairn-domain", "cairn-heap", "cairn-lease"],
    ),
    // The MCP server is a driving adapter like the CLI, but names no store: the CLI's wiring
    // hands it the services. It answers with the JSON shapes `cairn --json plan|session` prints,
    // which live in the renderer so that there is one of each.
    ("cairn-mcp", &["cairn-domain", "cairn-render"]),
    // Other tools' formats: pure text ⇄ domain values, like the renderer.
    ("cairn-interop", &["cairn-domain"]),
    // The PostgreSQL adapter validates with the filesystem adapter's schemas and exports and
    // imports through it, so the two write the same files.
    ("cairn-storage-pg", &["cairn-domain", "cairn-storage-fs"]),
    // The board is a driving adapter like the CLI, but a library the CLI serves: it gets the
    // domain's services from the binary and never names the filesystem adapter.
    ("cairn-board", &["cairn-domain"]),
    (
        "cairn-hooks",
        &[
            "cairn-domain",
            "cairn-render",
            "cairn-storage-fs",
            "cairn-storage-pg",
            "cairn-heap",
        ],
    ),
    // `cairn setup claude` merges cairn-hook's entries into settings.json with the hook crate's
    // own library (`cairn_hooks::setup`), so the two binaries agree on what the hook is. The
    // lease: `import` maps the other tool's file (`cairn_lease::Contents`).
    (
        "cairn-cli",
        &[
            "cairn-domain",
            "cairn-render",
            "cairn-storage-fs",
            "cairn-storage-pg",
            "cairn-hooks",
            "cairn-mcp",
            "cairn-interop",
            "cairn-board",
            "cairn-heap",
            "cairn-lease",
        ],
    ),
    (
        "cairn-bench",
        &[
            "cairn-domain",
            "cairn-render",
            "cairn-storage-fs",
            "cairn-storage-pg",
            "cairn-heap",
        ],
    ),
];

/// Crates with their own rules: xtask automates everything, so it may depend on anything.
const UNRESTRICTED: &[&str] = &["xtask"];

/// Binary crates: nothing in [`POLICY`] may depend on them, except where an entry names one
/// explicitly (and says why).
const BINARIES: &[&str] = &["cairn-cli", "cairn-hooks", "cairn-bench"];

pub fn check(metadata: &Value) -> Result<Vec<String>, String> {
    let packages = metadata["packages"]
        .as_array()
        .ok_or("`cargo metadata` has no package list")?;
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut edges = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or("?");
        let manifest = package["manifest_path"].as_str().unwrap_or("?");
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or("?");
            // A crate's dev-dependency on itself (to switch on a test-only feature, as
            // cairn-domain does for `testkit`) is no edge of the hexagon.
            if members.contains(&dep_name) && dep_name != name {
                edges.push(Edge {
                    from: name,
                    to: dep_name,
                    manifest,
                });
            }
        }
    }
    Ok(offences(&members, &edges))
}

#[derive(Debug)]
struct Edge<'a> {
    from: &'a str,
    to: &'a str,
    manifest: &'a str,
}

fn offences(members: &[&str], edges: &[Edge<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    for member in members {
        if !UNRESTRICTED.contains(member) && !POLICY.iter().any(|(name, _)| name == member) {
            out.push(format!(
                "workspace crate `{member}` has no place in the dependency policy: add it to POLICY in xtask/src/tidy/deps.rs with the workspace crates it may depend on"
            ));
        }
    }
    for edge in edges {
        if UNRESTRICTED.contains(&edge.from) {
            continue;
        }
        let Some((_, allowed)) = POLICY.iter().find(|(name, _)| *name == edge.from) else {
            continue;
        };
        if allowed.contains(&edge.to) {
            continue;
        }
        let why = if BINARIES.contains(&edge.to) {
            format!(
                "`{}` is a binary crate; move what is shared into a library crate",
                edge.to
            )
        } else if allowed.is_empty() {
            format!("`{}` depends on no workspace crate", edge.from)
        } else {
            format!("`{}` may depend only on {}", edge.from, allowed.join(", "))
        };
        out.push(format!(
            "{}: `{}` depends on `{}`, against the hexagon: {why}; remove the dependency (or, if the architecture changed, change POLICY in xtask/src/tidy/deps.rs and ARCHITECTURE.md together)",
            edge.manifest, edge.from, edge.to
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge<'a>(from: &'a str, to: &'a str) -> Edge<'a> {
        Edge {
            from,
            to,
            manifest: "Cargo.toml",
        }
    }

    const MEMBERS: &[&str] = &[
        "cairn-domain",
        "cairn-render",
        "cairn-storage-fs",
        "cairn-hooks",
        "cairn-cli",
        "cairn-bench",
        "xtask",
    ];

    #[test]
    fn the_allowed_directions_pass() {
        let edges = [
            edge("cairn-render", "cairn-domain"),
            edge("cairn-storage-fs", "cairn-domain"),
            edge("cairn-cli", "cairn-hooks"),
            edge("cairn-bench", "cairn-storage-fs"),
            edge("xtask", "cairn-cli"),
        ];
        assert_eq!(offences(MEMBERS, &edges), Vec::<String>::new());
    }

    #[test]
    fn inward_pointing_edges_fail() {
        for (from, to) in [
            ("cairn-domain", "cairn-render"),
            ("cairn-storage-fs", "cairn-render"),
            ("cairn-render", "cairn-storage-fs"),
            ("cairn-hooks", "cairn-cli"),
            ("cairn-bench", "cairn-hooks"),
        ] {
            let found = offences(MEMBERS, &[edge(from, to)]);
            assert_eq!(found.len(), 1, "{from} -> {to}: {found:?}");
            assert!(
                found[0].contains(from) && found[0].contains(to),
                "{found:?}"
            );
        }
    }

    #[test]
    fn a_crate_without_a_policy_fails() {
        let found = offences(&["cairn-unplanned"], &[]);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("cairn-unplanned"));
    }
}
