//! cairn's own `tasks.json` (SPEC §2): read and written exactly as the project store writes it
//! (2-space indent, keys in model order, a final newline), so `export cairn` of a project is
//! its tasks.json byte for byte and importing that file changes nothing.

use cairn_domain::project::TaskDoc;
use cairn_domain::project::import::Incoming;

use crate::Failed;
use crate::common::json_error;

pub fn parse(text: &str) -> Result<Incoming, Failed> {
    let doc: TaskDoc = serde_json::from_str(text).map_err(|e| json_error(&e, ""))?;
    Ok(Incoming::Cairn(doc))
}

pub fn render(doc: &TaskDoc) -> String {
    let mut text = serde_json::to_string_pretty(doc).expect("a task list is always serializable");
    text.push('\n');
    text
}
