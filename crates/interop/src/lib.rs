//! Other tools' task files, read into and written from cairn's domain values: Task Master's
//! `tasks.json`, a Claude Code task-list directory, beads' `issues.jsonl`, Taskwarrior's
//! `task export` JSON, Markdown checklists, and cairn's own tasks.json.
//!
//! Pure: text in, values out ([`parse`]), values in, text out ([`render`]); reading and writing
//! the files is the CLI's. A crate of its own rather than modules of the domain because these
//! formats are on-disk text (the domain holds none, see ARCHITECTURE.md), and rather than of
//! `cairn-render` because that crate is cairn's own text for people, these are other programs'
//! file formats. Diffing and applying what was read is the domain's ([`cairn_domain::project::import`]).
//!
//! Each module documents its format, where that format is specified, and its status table.

use std::fmt;
use std::str::FromStr;

use cairn_domain::project::TaskDoc;
use cairn_domain::project::import::Incoming;

mod beads;
mod cairn;
mod claude;
mod common;
mod markdown;
mod taskmaster;
mod taskwarrior;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Taskmaster,
    Claude,
    Beads,
    Taskwarrior,
    Markdown,
    Cairn,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Taskmaster,
        Format::Claude,
        Format::Beads,
        Format::Taskwarrior,
        Format::Markdown,
        Format::Cairn,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Taskmaster => "taskmaster",
            Format::Claude => "claude",
            Format::Beads => "beads",
            Format::Taskwarrior => "taskwarrior",
            Format::Markdown => "markdown",
            Format::Cairn => "cairn",
        }
    }

    /// Whether the format is a directory of files (a Claude Code task list) rather than one file.
    pub fn is_directory(self) -> bool {
        self == Format::Claude
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
                format!("`{text}` is not a format; use one of: {}", names.join(", "))
            })
    }
}

/// What a format reads: one file's text, or a directory's files as (file name, text), in any
/// order.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    Text(&'a str),
    Files(&'a [(String, String)]),
}

/// What a format writes: one file's text, or files (name, text) for a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendered {
    Text(String),
    Files(Vec<(String, String)>),
}

/// Input a format cannot read: where (`line 4`, `tasks[2].status`, `7.json`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub format: Format,
    pub at: String,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} input, {}: {}", self.format, self.at, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Reads `input` as `format`.
pub fn parse(format: Format, input: Input<'_>) -> Result<Incoming, ParseError> {
    let fail = |at: &str, message: String| ParseError {
        format,
        at: at.to_owned(),
        message,
    };
    let text = match (format, input) {
        (Format::Claude, Input::Files(files)) => {
            return claude::parse(files).map_err(|(at, m)| fail(&at, m));
        }
        (Format::Claude, Input::Text(_)) => {
            return Err(fail(
                "path",
                "a Claude Code task list is a directory of <id>.json files; name the directory"
                    .to_owned(),
            ));
        }
        (_, Input::Files(_)) => {
            return Err(fail(
                "path",
                format!("{format} input is one file, not a directory"),
            ));
        }
        (_, Input::Text(text)) => text,
    };
    let parsed = match format {
        Format::Taskmaster => taskmaster::parse(text),
        Format::Beads => beads::parse(text),
        Format::Taskwarrior => taskwarrior::parse(text),
        Format::Markdown => markdown::parse(text),
        Format::Cairn => cairn::parse(text),
        Format::Claude => unreachable!("handled above"),
    };
    parsed.map_err(|(at, m)| fail(&at, m))
}

/// Writes the project's tasks as `format`.
pub fn render(format: Format, doc: &TaskDoc) -> Rendered {
    match format {
        Format::Taskmaster => Rendered::Text(taskmaster::render(doc)),
        Format::Claude => Rendered::Files(claude::render(doc)),
        Format::Beads => Rendered::Text(beads::render(doc)),
        Format::Taskwarrior => Rendered::Text(taskwarrior::render(doc)),
        Format::Markdown => Rendered::Text(markdown::render(doc)),
        Format::Cairn => Rendered::Text(cairn::render(doc)),
    }
}

/// Where a parser failed and why; the public [`ParseError`] adds the format.
type Failed = (String, String);
