//! `cargo xtask mcp-sdk`: installs the pinned official MCP TypeScript SDK
//! (`@modelcontextprotocol/sdk`) whose `Client` the end-to-end tests in `tests/cli/mcp_node.rs`
//! drive `cairn mcp` with (through `tests/mcp/client.mjs`), and prints its version.
//!
//! The pin is `tests/mcp/npm/` (see [`npm::Pin`]); the install lands in `<target>/mcp-sdk/`,
//! where the tests find it next to the binaries cargo built.

use std::path::Path;

use crate::{npm, util};

const PIN: npm::Pin = npm::Pin {
    pin: "tests/mcp/npm",
    dir: "mcp-sdk",
};

/// The installed SDK's manifest, relative to the install directory.
const MANIFEST: &str = "node_modules/@modelcontextprotocol/sdk/package.json";

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(arg) = args.first() {
        return Err(format!(
            "unknown argument `{arg}`; usage: cargo xtask mcp-sdk"
        ));
    }
    let dir = PIN.install(
        &util::target_dir()?,
        |dir| dir.join(MANIFEST).is_file(),
        |_| Ok(()),
    )?;
    eprintln!(
        "@modelcontextprotocol/sdk {} at {}",
        version(&dir)?,
        dir.display()
    );
    Ok(())
}

fn version(dir: &Path) -> Result<String, String> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("npm installed no SDK ({}: {e})", path.display()))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    manifest["version"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{} has no version", path.display()))
}
