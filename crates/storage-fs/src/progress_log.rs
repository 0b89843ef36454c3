//! The append-only progress log (`progress/log.md`): rendering, appending, tolerant reading.
//!
//! On disk an entry is a markdown block:
//!
//! ```text
//! ## 2026-11-22T02:20:44Z — TASK_COMPLETE
//! - task: T-007
//! - from: IN_PROGRESS
//! - to: COMPLETE
//! - actual_minutes: 42
//!
//! ```
//!
//! The heading uses an em dash (U+2014) and a whole-second UTC timestamp, as the original plugin
//! did; the blank line that closes the block is what marks the entry as complete.
//!
//! **Values are one line.** A value is escaped on write — `\` becomes `\\`, a line feed `\n`, a
//! carriage return `\r` — and unescaped on read, so any string (a multi-line error message, a
//! Windows path) round-trips exactly and no value can forge a heading. Keys and kinds are
//! restricted to `[A-Za-z0-9_.-]` and refused otherwise, before anything is written.
//!
//! **Appending.** The whole block is built in memory and handed to the kernel in one `write` on a
//! file opened in append mode, then `sync_data`ed. One write means concurrent appenders cannot
//! interleave inside an entry, and a crash leaves at most one torn entry at the very end. If the
//! file does not end with a line feed (the tail of a torn entry), the block is prefixed with one,
//! so the new heading always starts a line and parses. The log is never truncated, rewritten or
//! "repaired": an audit log that edits itself is not an audit log.
//!
//! **Reading** is tolerant. Text before the first heading is ignored (a human may add a title). A
//! block (a heading up to the next heading) holds an entry when its heading parses and a blank
//! line closes it; the blank line is the commit marker of the append. Damaged text at the end of
//! the file — a block without its blank line, an unparsable heading, or stray bytes after the last
//! entry such as the `#` of an append cut off in its first byte — is the *torn tail* of an
//! interrupted append and is reported in [`LogRead::torn_tail`]. The same damage in the middle (a
//! torn entry that later appends moved away from the end, or a human's own `##` section) is
//! reported in [`LogRead::skipped`]. Lines inside an entry that are not `- key: value` are
//! ignored. [`read_tail`] parses only the last
//! bytes of the file, resynchronising on the first heading it finds, for hot paths that only need
//! recent entries. [`find_back`] walks the blocks from the end one at a time with their field
//! lines cut short, for a writer that needs the head of the last commit however long its entry
//! is (a whole-list payload after an import is tens of megabytes).

use crate::failpoints::failpoint;
use crate::{fsync_dir, io_error, parent_dir};
use cairn_domain::StoreError;
use cairn_domain::log::LogRecord;
use cairn_domain::time::{Timestamp, parse_rfc3339};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The separator between timestamp and kind in a heading: space, em dash (U+2014), space.
pub const HEADING_SEPARATOR: &str = " \u{2014} ";

/// What a read of the log found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogRead {
    /// Complete entries, in file order.
    pub records: Vec<LogRecord>,
    /// Incomplete or unparsable blocks found before the last one, verbatim.
    pub skipped: Vec<String>,
    /// The last block, verbatim, when it is incomplete or unparsable (an interrupted append).
    pub torn_tail: Option<String>,
}

/// A record that cannot be written without breaking the log's format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("log entry kind {0:?} must be non-empty and use only A-Z a-z 0-9 _ . -")]
    Kind(String),
    #[error("log field key {0:?} must be non-empty and use only A-Z a-z 0-9 _ . -")]
    Key(String),
}

fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Formats `at` as `YYYY-MM-DDTHH:MM:SSZ`; sub-second precision is dropped, as in the original.
pub fn format_heading_time(at: &Timestamp) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Renders one complete block: heading, `- key: value` lines, closing blank line.
pub fn render(record: &LogRecord) -> Result<String, RenderError> {
    let mut block = Vec::new();
    render_into(record, &mut block, &mut HeadingTime::default())?;
    // Tokens, the heading's ASCII and UTF-8 values escaped with ASCII: never anything else.
    Ok(String::from_utf8(block)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The heading time of the last entry rendered, formatted: a commit's entries share their time,
/// and formatting it again for each of an import's 100,000 entries was 2% of the import.
#[derive(Default)]
struct HeadingTime {
    at: Option<Timestamp>,
    text: String,
}

impl HeadingTime {
    fn of(&mut self, at: &Timestamp) -> &str {
        if self.at.as_ref() != Some(at) {
            self.text = format_heading_time(at);
            self.at = Some(*at);
        }
        &self.text
    }
}

/// [`render`], appended to `out`: a commit's entries go into one buffer, written as they are (a
/// restore's or an import's entry carries the whole list: tens of megabytes, copied once). On an
/// error `out` is left as it was.
fn render_into(
    record: &LogRecord,
    out: &mut Vec<u8>,
    time: &mut HeadingTime,
) -> Result<(), RenderError> {
    if !is_token(&record.kind) {
        return Err(RenderError::Kind(record.kind.clone()));
    }
    if let Some((key, _)) = record.fields.iter().find(|(key, _)| !is_token(key)) {
        return Err(RenderError::Key(key.clone()));
    }
    let _ = writeln!(
        out,
        "## {}{HEADING_SEPARATOR}{}",
        time.of(&record.at),
        record.kind
    );
    for (key, value) in &record.fields {
        field_key(out, key);
        let from = out.len();
        out.extend_from_slice(value.as_bytes());
        escape(out, from);
        out.push(b'\n');
    }
    out.push(b'\n');
    Ok(())
}

/// The start of a field's line: `- key: `.
fn field_key(out: &mut Vec<u8>, key: &str) {
    out.extend_from_slice(b"- ");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b": ");
}

/// Escapes the backslashes and line breaks of the value at `bytes[from..]`, in place: each run
/// between the characters escaped moves right, whole, by as many bytes as escapes follow it, from
/// the last run to the first.
fn escape(bytes: &mut Vec<u8>, from: usize) {
    let grow = memchr::memchr3_iter(b'\\', b'\n', b'\r', &bytes[from..]).count();
    if grow == 0 {
        return;
    }
    let mut end = bytes.len();
    bytes.resize(end + grow, 0);
    let mut write = bytes.len();
    while let Some(at) = memchr::memrchr3(b'\\', b'\n', b'\r', &bytes[from..end]).map(|i| from + i)
    {
        let run = at + 1..end;
        write -= run.len();
        bytes.copy_within(run, write);
        let escape: &[u8; 2] = match bytes[at] {
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            _ => b"\\r",
        };
        write -= 2;
        bytes[write..write + 2].copy_from_slice(escape);
        end = at;
    }
}

fn unescape(value: &str) -> String {
    // Most values hold no escape: copied whole, not char by char (a replay payload is megabytes).
    if memchr::memchr(b'\\', value.as_bytes()).is_none() {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            // Not something cairn writes (a human edit, another tool): keep it verbatim.
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Appends `record` to the log at `path` as one block, with one `write`, then syncs it.
///
/// Creates the file (and its directory) if missing; a newly created file also gets its directory
/// fsynced so the entry survives a power cut. Nothing is written when the record cannot be
/// rendered.
///
/// Errors: [`StoreError::Invalid`] for a kind or key outside `[A-Za-z0-9_.-]`;
/// [`StoreError::Io`] naming the step (`open progress log`, `append to progress log`,
/// `fsync progress log`, …).
pub fn append(path: &Path, record: &LogRecord) -> Result<(), StoreError> {
    append_all(path, std::slice::from_ref(record))
}

/// Appends several entries with one `write`, so a crash keeps all of them or a torn tail, never a
/// gap in the middle. Every record is rendered (and refused) before anything is written.
pub fn append_all(path: &Path, records: &[LogRecord]) -> Result<(), StoreError> {
    append_all_then(path, records.iter(), None)
}

/// What writes a field's value straight into the block being appended (see [`append_all_then`]):
/// UTF-8, unescaped.
pub type WriteValue<'a> = &'a dyn Fn(&mut Vec<u8>);

/// A field written by a [`WriteValue`] (see [`append_all_then`]).
#[derive(Clone, Copy)]
pub struct Written<'a> {
    pub key: &'a str,
    /// About how many bytes `write` writes: room for them is made with the block's, so that a
    /// payload of tens of megabytes is not copied from buffer to buffer as the block grows.
    pub size_hint: usize,
    pub write: WriteValue<'a>,
}

impl std::fmt::Debug for Written<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Written")
            .field("key", &self.key)
            .field("size_hint", &self.size_hint)
            .finish_non_exhaustive()
    }
}

/// The room made in a block for each record to append (see [`append_all_then`]), and the most
/// made up front: a block longer still grows as it is rendered.
const RECORD_ROOM: usize = 256;
const MOST_ROOM: usize = 1 << 30;

/// [`append_all`] with `last`, when given, as one more field of the last record: its value is
/// written straight into the block and escaped there, as every value is. A value of tens of
/// megabytes (the payload of a commit after an import) is then not made apart and copied in.
/// The records may be made as they are rendered (an import's 200,000 records were 46 MB kept
/// until the block was written).
pub fn append_all_then<R: std::borrow::Borrow<LogRecord>>(
    path: &Path,
    records: impl IntoIterator<Item = R>,
    last: Option<Written<'_>>,
) -> Result<(), StoreError> {
    let room = last.map_or(0, |l| l.key.len().saturating_add(l.size_hint));
    append_entries_then(path, Entries::render(path, records, room)?, last)
}

/// Records rendered as the block [`append_entries_then`] appends, made apart from the append so
/// that a writer can render many (an import's 200,000) on another core while it writes a state
/// file.
#[derive(Debug)]
pub struct Entries(Vec<u8>);

impl Entries {
    /// `records` rendered for the log at `path` (named in errors), with `room` more bytes made
    /// for a last field's value.
    pub fn render<R: std::borrow::Borrow<LogRecord>>(
        path: &Path,
        records: impl IntoIterator<Item = R>,
        room: usize,
    ) -> Result<Self, StoreError> {
        // Rendered whole before the file is opened, behind the newline a log without a last one
        // needs (written only then).
        // Room for what is likely written: a record is rarely over 256 bytes, and room left
        // unused costs nothing (a big block's pages are only backed where written).
        let records = records.into_iter();
        let room = (records.size_hint().0.saturating_mul(RECORD_ROOM))
            .saturating_add(room)
            .min(MOST_ROOM);
        let mut block = Vec::with_capacity(room + 16);
        block.push(b'\n');
        let mut time = HeadingTime::default();
        for record in records {
            render_into(record.borrow(), &mut block, &mut time)
                .map_err(|error| render_error(path, error))?;
        }
        Ok(Self(block))
    }
}

fn render_error(path: &Path, error: RenderError) -> StoreError {
    StoreError::Invalid {
        path: path.display().to_string(),
        detail: error.to_string(),
    }
}

/// Appends `entries` to the log at `path` with one write, `last`, when given, as one more field
/// of the last of them (see [`append_all_then`]), and makes them durable.
pub fn append_entries_then(
    path: &Path,
    entries: Entries,
    last: Option<Written<'_>>,
) -> Result<(), StoreError> {
    let Entries(mut block) = entries;
    if block.len() == 1 {
        // No record: nothing to append.
        return Ok(());
    }
    if let Some(Written {
        key,
        write,
        size_hint,
    }) = last
    {
        if !is_token(key) {
            return Err(render_error(path, RenderError::Key(key.to_owned())));
        }
        // Room made as the entries were rendered, unless they were rendered before the value's
        // size was known.
        block.reserve(key.len().saturating_add(size_hint).saturating_add(16));
        // Into the last record: before the blank line that ends it.
        block.pop();
        field_key(&mut block, key);
        let from = block.len();
        write(&mut block);
        escape(&mut block, from);
        block.extend_from_slice(b"\n\n");
    }

    let (mut file, created) = open_for_append(path)?;
    let needs_newline = if created {
        false
    } else {
        let end = read_end(&mut file, path)?;
        if let Some(at) = end.merge_marker {
            return Err(StoreError::Unmerged {
                path: path.display().to_string(),
                line: line_at(path, at)?,
            });
        }
        !end.ends_with_newline
    };
    let buffer = &block[usize::from(!needs_newline)..];

    let written = file
        .write(buffer)
        .map_err(io_error("append to progress log", path))?;
    if written < buffer.len() {
        // A short write on a regular file means a signal or a full disk. Finishing the block is
        // still better than leaving a torn entry; if it fails, the reader reports the torn tail.
        file.write_all(&buffer[written..])
            .map_err(io_error("append to progress log", path))?;
    }
    failpoint("log:after-append");
    file.sync_data()
        .map_err(io_error("fsync progress log", path))?;
    if created {
        fsync_dir(parent_dir(path))?;
    }
    Ok(())
}

fn open_for_append(path: &Path) -> Result<(File, bool), StoreError> {
    let open = |create: bool| {
        OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .open(path)
    };
    match open(false) {
        Ok(file) => Ok((file, false)),
        Err(error) if error.kind() == ErrorKind::NotFound => {
            let dir = parent_dir(path);
            fs::create_dir_all(dir).map_err(io_error("create progress log directory", dir))?;
            let file = open(true).map_err(io_error("create progress log", path))?;
            Ok((file, true))
        }
        Err(source) => Err(StoreError::Io {
            op: "open progress log",
            path: path.display().to_string(),
            source,
        }),
    }
}

/// How much of the log's end an append reads first. A `git merge` of the log without cairn's
/// driver leaves its conflict where the two branches' appends meet: near the end. Appended to,
/// the entry would be lost to the merge's resolution — `git checkout -m`, `--ours` or `--theirs`
/// take the file from the merge's stages — so it is refused until the merge is finished. Read
/// where a byte was read before, 16 KiB cost the append nothing measurable.
const END_CHECKED: u64 = 16 * 1024;

/// What an append needs to know of the log's end.
struct End {
    /// An empty log counts as ending with one.
    ends_with_newline: bool,
    /// Where the first line starting with a git conflict marker is, in the last
    /// [`END_CHECKED`] bytes.
    merge_marker: Option<u64>,
}

fn read_end(file: &mut File, path: &Path) -> Result<End, StoreError> {
    let len = file
        .metadata()
        .map_err(io_error("stat progress log", path))?
        .len();
    // One byte before the last END_CHECKED: whether the first of them starts a line.
    let from = len.saturating_sub(END_CHECKED + 1);
    let mut end = Vec::with_capacity(usize::try_from(len - from).unwrap_or(0));
    file.seek(SeekFrom::Start(from))
        .map_err(io_error("seek in progress log", path))?;
    file.take(len - from)
        .read_to_end(&mut end)
        .map_err(io_error("read progress log", path))?;
    Ok(End {
        ends_with_newline: end.last().is_none_or(|&b| b == b'\n'),
        merge_marker: merge_marker(&end, from == 0).map(|at| from + at as u64),
    })
}

/// The offset of the first line of `text` that starts with git's `<<<<<<<` or `>>>>>>>`: no entry
/// has one (a heading starts with `##`, a field with `- `, and values are one line). `whole`:
/// `text` starts at a line's start (else its first, partial line is not looked at). The
/// `=======` between the two sides is not looked for: a person's title over the first heading
/// may be underlined with `=`.
fn merge_marker(text: &[u8], whole: bool) -> Option<usize> {
    let starts = |text: &[u8]| text.starts_with(b"<<<<<<<") || text.starts_with(b">>>>>>>");
    if whole && starts(text) {
        return Some(0);
    }
    [&b"\n<<<<<<<"[..], b"\n>>>>>>>"]
        .into_iter()
        .filter_map(|marker| memchr::memmem::find(text, marker))
        .min()
        .map(|at| at + 1)
}

/// The line (from 1) of the log at `path` that byte `at` is on: for an error message only.
fn line_at(path: &Path, at: u64) -> Result<usize, StoreError> {
    let text = fs::read(path).map_err(io_error("read progress log", path))?;
    Ok(line_of(&text, usize::try_from(at).unwrap_or(usize::MAX)))
}

fn line_of(text: &[u8], at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text[..at.min(text.len())]).count() + 1
}

/// The line (from 1) where a git merge's conflict markers start in `log`, the whole log's bytes
/// (`doctor --full`; an append looks at the end only, see [`unmerged_end`]).
pub fn unmerged_anywhere(log: &[u8]) -> Option<usize> {
    merge_marker(log, true).map(|at| line_of(log, at))
}

/// The line (from 1) where a git merge's conflict markers start in the end of the log at `path`,
/// which an append refuses (its last 16 KiB); `None` for a missing log.
pub fn unmerged_end(path: &Path) -> Result<Option<usize>, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("open progress log", path)(e)),
    };
    read_end(&mut file, path)?
        .merge_marker
        .map(|at| line_at(path, at))
        .transpose()
}

/// Reads and parses the whole log. A missing file is an empty log.
pub fn read_all(path: &Path) -> Result<LogRead, StoreError> {
    read_all_fields(path, Fields::All)
}

/// [`read_all`], keeping only `fields`.
pub fn read_all_fields(path: &Path, fields: Fields<'_>) -> Result<LogRead, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(parse_fields(&text(&bytes), fields)),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(LogRead::default()),
        Err(source) => Err(StoreError::Io {
            op: "read progress log",
            path: path.display().to_string(),
            source,
        }),
    }
}

/// Reads and parses at most the last `max_bytes` of the log (plus one byte to see a line start).
///
/// When the window starts inside the file, everything before the first heading in the window is
/// dropped, since it is the cut-off end of an older entry. Entries longer than the window are not
/// seen at all; pick `max_bytes` for the entries you need. A missing file is an empty log.
pub fn read_tail(path: &Path, max_bytes: u64) -> Result<LogRead, StoreError> {
    read_tail_fields(path, max_bytes, Fields::All)
}

/// [`read_tail`], keeping only `fields`.
pub fn read_tail_fields(
    path: &Path,
    max_bytes: u64,
    fields: Fields<'_>,
) -> Result<LogRead, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(LogRead::default()),
        Err(source) => {
            return Err(StoreError::Io {
                op: "open progress log",
                path: path.display().to_string(),
                source,
            });
        }
    };
    let len = file
        .metadata()
        .map_err(io_error("stat progress log", path))?
        .len();
    if len <= max_bytes {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(io_error("read progress log", path))?;
        return Ok(parse_fields(&text(&bytes), fields));
    }
    // Start one byte early: if the window begins exactly at a heading, the preceding line feed
    // lets the resync below recognise it.
    let start = len - max_bytes - 1;
    file.seek(SeekFrom::Start(start))
        .map_err(io_error("seek in progress log", path))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(io_error("read progress log", path))?;
    let text = text(&bytes);
    match memchr::memmem::find(text.as_bytes(), HEADING_START) {
        Some(at) => Ok(parse_fields(&text[at + 1..], fields)),
        None => Ok(LogRead::default()),
    }
}

/// Which fields of each entry a read keeps. A caller that never looks at a bulky field (the
/// journal's replay payloads hold up to the whole task list) saves copying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields<'a> {
    All,
    /// Every field but the one with this key.
    Without(&'a str),
    /// Only the field with this key.
    Only(&'a str),
}

impl Fields<'_> {
    fn keep(self, key: &str) -> bool {
        match self {
            Fields::All => true,
            Fields::Without(dropped) => key != dropped,
            Fields::Only(kept) => key == kept,
        }
    }
}

/// A line feed and the start of a heading.
const HEADING_START: &[u8] = b"\n## ";

/// The log's bytes as text: invalid UTF-8 (a foreign edit) is replaced, not refused.
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    // The strict check is the fast one; the lossy pass only runs on a log that needs it.
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Parses log text into entries; see the module docs for the tolerance rules.
pub fn parse(text: &str) -> LogRead {
    parse_fields(text, Fields::All)
}

/// [`parse`], keeping only `fields`.
fn parse_fields(text: &str, fields: Fields<'_>) -> LogRead {
    /// Entries a thread parses at least: a log is read whole by a recovery, which at 100,000
    /// tasks parsed 200,000 entries on one core.
    const PER_THREAD: usize = 16_384;
    let starts = block_starts(text);
    let parts = crate::parallel::in_parts(&starts, PER_THREAD, |part, first| {
        let mut records = Vec::with_capacity(part.len());
        let mut damaged = Vec::new();
        for (offset, &start) in part.iter().enumerate() {
            let index = first + offset;
            let end = starts.get(index + 1).copied().unwrap_or(text.len());
            let (record, damage) = parse_block(&text[start..end], fields);
            records.extend(record);
            damaged.extend(damage.map(|damage| (index, damage)));
        }
        (records, damaged)
    });
    let mut read = LogRead::default();
    for (records, damaged) in parts {
        read.records.extend(records);
        for (index, damage) in damaged {
            if index + 1 == starts.len() {
                read.torn_tail = Some(damage.to_owned());
            } else {
                read.skipped.push(damage.to_owned());
            }
        }
    }
    read
}

/// Where each block of `text` starts: every heading at the start of a line.
fn block_starts(text: &str) -> Vec<usize> {
    let mut starts: Vec<usize> = memchr::memmem::find_iter(text.as_bytes(), HEADING_START)
        .map(|at| at + 1)
        .collect();
    if text.starts_with("## ") {
        starts.insert(0, 0);
    }
    starts
}

/// What one block (a heading up to the next one) holds: its entry, and its damaged text, if any.
fn parse_block<'a>(block: &'a str, fields: Fields<'_>) -> (Option<LogRecord>, Option<&'a str>) {
    match split_entry(block) {
        Some((entry, rest)) => match parse_entry(entry, fields) {
            // Anything but whitespace after the closing blank line is not cairn's: the first
            // bytes of an append cut off before its heading was complete, or notes.
            Some(record) => (Some(record), (!rest.trim().is_empty()).then_some(rest)),
            None => (None, Some(block)),
        },
        None => (None, Some(block)),
    }
}

/// One block of the log as [`find_back`] reads it.
#[derive(Debug)]
pub struct Block {
    /// Where the block starts (its heading) and ends (the next heading, or the end of the file).
    pub span: (u64, u64),
    /// Its entry, every line cut to the clip length; `None` when it holds none.
    pub record: Option<LogRecord>,
    /// Whether it is damaged: no entry, or stray text after the entry's blank line (see the
    /// module docs). The last block of the log damaged is its torn tail.
    pub damaged: bool,
    /// Whether a line was cut: [`read_block`] reads the entry whole.
    pub clipped: bool,
}

/// Walks the log's blocks from its end backwards, handing each to `look` until it returns
/// something, and looks no further back than the block starting within the last `limit` bytes.
/// Every line of a block is cut to its first `clip` bytes, so memory stays small however long an
/// entry is: a replay payload can be a whole task list of tens of megabytes, of which a writer
/// needs the first hundred bytes. Blocks are parsed as [`read_all`] parses them. A missing file
/// is an empty log.
pub fn find_back<T>(
    path: &Path,
    limit: u64,
    clip: usize,
    mut look: impl FnMut(Block) -> Option<T>,
) -> Result<Option<T>, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io_error("open progress log", path)(source)),
    };
    let len = file
        .metadata()
        .map_err(io_error("stat progress log", path))?
        .len();
    let floor = len.saturating_sub(limit);
    let mut window = Window {
        lo: len,
        bytes: Vec::new(),
    };
    let mut chunk = Vec::new();
    let mut end = len;
    while let Some(start) = heading_before(&mut file, end, floor, &mut window)
        .map_err(io_error("read progress log", path))?
    {
        let (bytes, clipped) = read_clipped(&mut file, (start, end), clip, &mut chunk)
            .map_err(io_error("read progress log", path))?;
        let text = text(&bytes);
        let (record, damage) = parse_block(&text, Fields::All);
        let block = Block {
            span: (start, end),
            damaged: damage.is_some(),
            record,
            clipped,
        };
        if let Some(found) = look(block) {
            return Ok(Some(found));
        }
        end = start;
    }
    Ok(None)
}

/// The entry of the block at `span` (as [`find_back`] found it), read whole.
pub fn read_block(path: &Path, span: (u64, u64)) -> Result<Option<LogRecord>, StoreError> {
    read_block_fields(path, span, Fields::All)
}

/// [`read_block`], keeping only `fields`.
pub fn read_block_fields(
    path: &Path,
    span: (u64, u64),
    fields: Fields<'_>,
) -> Result<Option<LogRecord>, StoreError> {
    let mut file = File::open(path).map_err(io_error("open progress log", path))?;
    file.seek(SeekFrom::Start(span.0))
        .map_err(io_error("seek in progress log", path))?;
    let mut bytes = Vec::with_capacity(usize::try_from(span.1 - span.0).unwrap_or(0));
    file.take(span.1 - span.0)
        .read_to_end(&mut bytes)
        .map_err(io_error("read progress log", path))?;
    Ok(parse_block(&text(&bytes), fields).0)
}

/// Which of `needles` occur in the bytes of `span` (as [`find_back`] found it), as the log
/// holds them — escaped: a needle without `\`, a line feed or a carriage return occurs there
/// exactly where it occurs in the unescaped text, or in another field of the entry. Reads a chunk
/// at a time: a search through a payload of tens of megabytes that allocates nothing of its size.
pub fn block_contains(
    path: &Path,
    span: (u64, u64),
    needles: &[&[u8]],
) -> Result<Vec<bool>, StoreError> {
    let mut file = File::open(path).map_err(io_error("open progress log", path))?;
    let overlap = needles.iter().map(|n| n.len()).max().unwrap_or(1).max(1) as u64 - 1;
    let mut found = vec![false; needles.len()];
    let mut chunk = Vec::new();
    let mut at = span.0;
    while at < span.1 && found.contains(&false) {
        let to = span.1.min(at + CHUNK as u64);
        read_range(&mut file, (at, to), &mut chunk).map_err(io_error("read progress log", path))?;
        for (needle, seen) in needles.iter().zip(&mut found) {
            *seen |= memchr::memmem::find(&chunk, needle).is_some();
        }
        if to >= span.1 || chunk.len() as u64 <= overlap {
            break;
        }
        // The next chunk repeats this one's last bytes, so a needle across the seam is seen.
        at = to - overlap;
    }
    Ok(found)
}

/// How much of the log [`find_back`] reads at a time. The tests read a few bytes at a time, so
/// that headings, needles and line ends fall across chunks' seams.
const CHUNK: usize = if cfg!(test) { 97 } else { 64 * 1024 };

/// The log's bytes from `lo` on, as far as [`heading_before`] has read them backwards.
struct Window {
    lo: u64,
    bytes: Vec<u8>,
}

/// The start of the last heading that starts at or after `floor` and before `before`, searching
/// `window` and reading further back a chunk at a time. `before` is the file's end or a heading
/// this found, so the window already holds the bytes before it: a walk over many small entries
/// reads each chunk once.
fn heading_before(
    file: &mut File,
    before: u64,
    floor: u64,
    window: &mut Window,
) -> std::io::Result<Option<u64>> {
    // A heading at `at` shows as "\n## " from `at - 1` to `at + 3`: one before `before` ends by
    // `before + 2`, and one at `floor` starts at `floor - 1`.
    let reach = before.saturating_add(2);
    let bottom = floor.saturating_sub(1);
    loop {
        let end = usize::try_from(reach.saturating_sub(window.lo))
            .unwrap_or(usize::MAX)
            .min(window.bytes.len());
        if let Some(m) = memchr::memmem::rfind(&window.bytes[..end], HEADING_START) {
            let at = window.lo + m as u64 + 1;
            return Ok((at >= floor).then_some(at));
        }
        if window.lo <= bottom {
            let first = floor == 0 && before > 0 && window.lo == 0;
            return Ok((first && window.bytes.starts_with(b"## ")).then_some(0));
        }
        // The next chunk down keeps the three bytes a heading across the seam needs.
        let hi = window.lo + HEADING_START.len() as u64 - 1;
        window.lo = hi.saturating_sub(CHUNK as u64).max(bottom);
        read_range(file, (window.lo, hi), &mut window.bytes)?;
    }
}

/// Reads the bytes of `span` (clamped to the file) into `chunk`.
fn read_range(file: &mut File, span: (u64, u64), chunk: &mut Vec<u8>) -> std::io::Result<()> {
    chunk.clear();
    file.seek(SeekFrom::Start(span.0))?;
    file.take(span.1.saturating_sub(span.0))
        .read_to_end(chunk)
        .map(drop)
}

/// The bytes of `span` with every field line (`- key: value`) cut to its first `clip` bytes (at
/// least its `- `), and whether one was. Nothing else changes: the block splits, parses and is
/// damaged as it is whole (a cut line keeps its line ending, carriage return included, and is
/// never blank); only the values of cut fields are shortened.
fn read_clipped(
    file: &mut File,
    span: (u64, u64),
    clip: usize,
    chunk: &mut Vec<u8>,
) -> std::io::Result<(Vec<u8>, bool)> {
    let clip = clip.max(2);
    let mut out = Vec::new();
    let mut clipped = false;
    // The line being copied: how long it is so far, counting what was cut, and whether it is a
    // field line (known from its second byte on), and whether its last byte cut was `\r`.
    let mut line = 0usize;
    let mut field = false;
    let mut cut_cr = false;
    let mut at = span.0;
    while at < span.1 {
        let to = span.1.min(at + CHUNK as u64);
        read_range(file, (at, to), chunk)?;
        if chunk.is_empty() {
            break;
        }
        at += chunk.len() as u64;
        let mut rest = chunk.as_slice();
        while !rest.is_empty() {
            let (part, ends_line) = match memchr::memchr(b'\n', rest) {
                Some(lf) => (&rest[..lf], true),
                None => (rest, false),
            };
            for (i, &b) in part.iter().take(2usize.saturating_sub(line)).enumerate() {
                field = if line + i == 0 {
                    b == b'-'
                } else {
                    field && b == b' '
                };
            }
            let keep = if field || line + part.len() < 2 {
                part.len().min(clip.saturating_sub(line))
            } else {
                part.len()
            };
            out.extend_from_slice(&part[..keep]);
            if keep < part.len() {
                clipped = true;
                cut_cr = part.last() == Some(&b'\r');
            } else if !part.is_empty() {
                cut_cr = false;
            }
            line += part.len();
            rest = &rest[part.len()..];
            if ends_line {
                if cut_cr {
                    out.push(b'\r');
                }
                out.push(b'\n');
                (line, field, cut_cr) = (0, false, false);
                rest = &rest[1..];
            }
        }
    }
    if cut_cr {
        out.push(b'\r');
    }
    Ok((out, clipped))
}

/// Splits a block at the blank line that closes its entry, the entry's commit marker: without it
/// the append may have been cut short. Returns the entry (with its blank line) and what follows.
fn split_entry(block: &str) -> Option<(&str, &str)> {
    let lf = memchr::memmem::find(block.as_bytes(), b"\n\n").map(|at| at + 2);
    // Only a block with a carriage return before its first blank line can end at a CRLF one.
    let crlf = memchr::memchr(b'\r', &block.as_bytes()[..lf.unwrap_or(block.len())])
        .and_then(|_| memchr::memmem::find(block.as_bytes(), b"\r\n\r\n"))
        .map(|at| at + 4);
    let end = match (lf, crlf) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some(block.split_at(end))
}

fn parse_entry(entry: &str, fields: Fields<'_>) -> Option<LogRecord> {
    let mut lines = entry.lines();
    let heading = lines.next()?.strip_prefix("## ")?;
    let (at, kind) = heading.split_once(HEADING_SEPARATOR)?;
    let at = parse_rfc3339(at)?;
    let kind = kind.trim();
    if !is_token(kind) {
        return None;
    }
    let mut record = LogRecord::new(at, kind);
    for line in lines {
        let Some((key, value)) = line
            .strip_prefix("- ")
            .and_then(|field| field.split_once(':'))
        else {
            continue;
        };
        let key = key.trim();
        if !fields.keep(key) {
            continue;
        }
        let value = value.strip_prefix(' ').unwrap_or(value);
        record.fields.push((key.to_owned(), unescape(value)));
    }
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(seconds: i64) -> Timestamp {
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 22, 2, 20, 0)
            .unwrap()
            + chrono::Duration::seconds(seconds)
    }

    fn complete(task: &str, minutes: u32) -> LogRecord {
        LogRecord::new(at(60), "TASK_COMPLETE")
            .with("task", task)
            .with("from", "IN_PROGRESS")
            .with("to", "COMPLETE")
            .with("actual_minutes", minutes)
    }

    #[test]
    fn renders_the_documented_block() {
        let record = complete("T-007", 42);
        assert_eq!(
            render(&record).unwrap(),
            "## 2026-11-22T02:21:00Z \u{2014} TASK_COMPLETE\n\
             - task: T-007\n- from: IN_PROGRESS\n- to: COMPLETE\n- actual_minutes: 42\n\n"
        );
    }

    #[test]
    fn drops_sub_second_precision_in_the_heading() {
        let precise = at(0) + chrono::Duration::milliseconds(987);
        assert_eq!(format_heading_time(&precise), "2026-11-22T02:20:00Z");
    }

    #[test]
    fn values_with_newlines_and_backslashes_round_trip() {
        let tricky =
            "line one\nline two\r\n## 2026-01-01T00:00:00Z \u{2014} FORGED\n\nC:\\Users\\n\\";
        let record = LogRecord::new(at(0), "ERROR")
            .with("detail", tricky)
            .with("empty", "")
            .with("colon", "a: b");
        let text = render(&record).unwrap();
        assert_eq!(
            text.lines().count(),
            5,
            "every value stays on one line: {text:?}"
        );

        let read = parse(&text);
        assert_eq!(read.records, vec![record]);
        assert_eq!(read.torn_tail, None);
    }

    #[test]
    fn unknown_escapes_written_by_others_are_kept_verbatim() {
        let text = "## 2026-11-18T21:46:40Z \u{2014} ERROR\n- detail: a\\tb\\\n\n";
        assert_eq!(parse(text).records[0].get("detail"), Some("a\\tb\\"));
    }

    #[test]
    fn refuses_kinds_and_keys_that_would_break_the_format() {
        assert_eq!(
            render(&LogRecord::new(at(0), "")),
            Err(RenderError::Kind(String::new()))
        );
        assert!(matches!(
            render(&LogRecord::new(at(0), "TWO WORDS")),
            Err(RenderError::Kind(_))
        ));
        assert!(matches!(
            render(&LogRecord::new(at(0), "OK").with("a: b", 1)),
            Err(RenderError::Key(_))
        ));
        assert!(matches!(
            render(&LogRecord::new(at(0), "OK").with("x\ny", 1)),
            Err(RenderError::Key(_))
        ));
        assert!(
            render(&LogRecord::new(at(0), "SYNC_TO_AZURE-DEVOPS").with("external_id", "AB#12"))
                .is_ok()
        );
    }

    #[test]
    fn append_writes_exactly_the_rendered_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("progress").join("log.md");
        let first = complete("T-001", 5);
        let second = LogRecord::new(at(120), "TASK_STARTED").with("task", "T-002");

        append(&path, &first).unwrap();
        append(&path, &second).unwrap();

        let expected = render(&first).unwrap() + &render(&second).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), expected);
        assert_eq!(
            read_all(&path).unwrap(),
            LogRead {
                records: vec![first, second],
                ..LogRead::default()
            }
        );
    }

    /// A field written straight into the block is escaped there as any value is: the log holds
    /// the bytes the same field given in the record makes, and reads it back.
    #[test]
    fn a_field_written_into_the_block_is_the_field_given_in_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let tricky = "{\"a\":\"x\\\"y\"}\nline\r\n\\\\ end\\";
        for value in ["", "plain", tricky, "\\", "\n\n"] {
            let given = dir.path().join("given.md");
            let written = dir.path().join("written.md");
            let records = [
                complete("T-001", 5),
                LogRecord::new(at(120), "TASK_STARTED").with("task", "T-002"),
            ];
            let mut with_field = records.clone();
            with_field[1].fields.push(("replay".into(), value.into()));
            append_all(&given, &with_field).unwrap();
            let write = |out: &mut Vec<u8>| out.extend_from_slice(value.as_bytes());
            let last = Written {
                key: "replay",
                size_hint: value.len(),
                write: &write,
            };
            append_all_then(&written, records.iter(), Some(last)).unwrap();
            assert_eq!(
                fs::read(&written).unwrap(),
                fs::read(&given).unwrap(),
                "{value:?}"
            );
            assert_eq!(read_all(&written).unwrap().records, with_field);
            fs::remove_file(&given).unwrap();
            fs::remove_file(&written).unwrap();
        }
        let refused = append_all_then(
            &dir.path().join("x.md"),
            [complete("T-1", 1)],
            Some(Written {
                key: "bad key",
                size_hint: 0,
                write: &|_: &mut Vec<u8>| {},
            }),
        );
        assert!(matches!(refused, Err(StoreError::Invalid { .. })));
        assert!(!dir.path().join("x.md").exists());
    }

    #[test]
    fn append_refuses_an_invalid_record_without_touching_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        fs::write(&path, "# My log\n").unwrap();
        let error = append(&path, &LogRecord::new(at(0), "BAD KIND")).unwrap_err();
        let StoreError::Invalid {
            path: reported,
            detail,
        } = error
        else {
            panic!("expected Invalid")
        };
        assert_eq!(reported, path.display().to_string());
        assert!(detail.contains("BAD KIND"), "{detail}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "# My log\n");
    }

    /// A merge's conflict markers near the end refuse an append, naming their first line, and
    /// leave the file as it was; a title underlined with `=` does not, nor does a marker further
    /// back than an append reads, which only `doctor --full`, reading it all, finds.
    #[test]
    fn an_append_to_a_log_a_merge_left_conflicted_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        let entry = render(&complete("T-001", 5)).unwrap();
        let conflicted =
            format!("{entry}<<<<<<< HEAD\n{entry}=======\n{entry}>>>>>>> other\n{entry}");
        fs::write(&path, &conflicted).unwrap();
        let error = append(&path, &complete("T-002", 1)).unwrap_err();
        assert!(
            matches!(&error, StoreError::Unmerged { line: 7, .. }),
            "{error:?}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), conflicted);
        assert_eq!(unmerged_end(&path).unwrap(), Some(7));

        let titled = format!("My log\n=======\n\n{entry}");
        fs::write(&path, &titled).unwrap();
        append(&path, &complete("T-002", 1)).unwrap();
        assert_eq!(unmerged_end(&path).unwrap(), None);

        let far = format!(
            ">>>>>>> other\n{}",
            entry.repeat(1 + END_CHECKED as usize / entry.len())
        );
        fs::write(&path, &far).unwrap();
        append(&path, &complete("T-002", 1)).unwrap();
        assert_eq!(unmerged_anywhere(&fs::read(&path).unwrap()), Some(1));
        assert_eq!(merge_marker(b">>>>>>> x\n", true), Some(0));
        assert_eq!(merge_marker(b">>>>>>> x\n", false), None, "a partial line");
        assert_eq!(unmerged_end(&dir.path().join("missing.md")).unwrap(), None);
    }

    /// A conflict whose last marker line starts right where the [`END_CHECKED`] bytes an append
    /// reads begin — its shared tail one line short of them — refuses the append too: the byte
    /// before them says that their first starts a line (read alone, it was taken for the end of
    /// a line cut short, and the entry went into the conflict).
    #[test]
    fn a_marker_line_starting_where_the_end_read_begins_refuses_an_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        let entry = render(&complete("T-001", 5)).unwrap();
        let marker = ">>>>>>> other\n";
        // The branches' shared tail: one entry whose note fills it to the marker's line.
        let shared =
            |note: usize| render(&complete("T-003", 1).with("note", "n".repeat(note))).unwrap();
        let room = END_CHECKED as usize - marker.len();
        let tail = shared(room - shared(0).len());
        assert_eq!(tail.len(), room);
        let ours = entry.repeat(1 + END_CHECKED as usize / entry.len());
        let conflicted = format!("<<<<<<< HEAD\n{ours}=======\n{entry}{marker}{tail}");
        fs::write(&path, &conflicted).unwrap();
        let line = conflicted[..conflicted.len() - room - marker.len()]
            .lines()
            .count()
            + 1;
        assert_eq!(unmerged_end(&path).unwrap(), Some(line));
        let error = append(&path, &complete("T-002", 1)).unwrap_err();
        assert!(
            matches!(&error, StoreError::Unmerged { line: l, .. } if *l == line),
            "{error:?}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), conflicted);
    }

    #[test]
    fn text_before_the_first_heading_is_ignored() {
        let text = format!(
            "# Progress log\n\nSome notes.\n- not: a field\n\n{}",
            render(&complete("T-1", 1)).unwrap()
        );
        let read = parse(&text);
        assert_eq!(read.records, vec![complete("T-1", 1)]);
        assert!(read.skipped.is_empty() && read.torn_tail.is_none());
    }

    #[test]
    fn a_torn_tail_is_reported_and_the_complete_entries_are_kept() {
        let whole = render(&complete("T-1", 1)).unwrap();
        let next = render(&complete("T-2", 2)).unwrap();
        // Every proper prefix of the second block is an interrupted append.
        for cut in 1..next.len() {
            if !next.is_char_boundary(cut) {
                continue;
            }
            let text = format!("{whole}{}", &next[..cut]);
            let read = parse(&text);
            assert_eq!(
                read.records,
                vec![complete("T-1", 1)],
                "cut at {cut}: {:?}",
                &next[..cut]
            );
            assert_eq!(
                read.torn_tail.as_deref(),
                Some(&next[..cut]),
                "cut at {cut}"
            );
            assert!(read.skipped.is_empty());
        }
    }

    #[test]
    fn unparsable_headings_are_torn_or_skipped_depending_on_position() {
        let good = render(&complete("T-1", 1)).unwrap();
        let text = format!(
            "## Notes by a human\nkeep calm\n\n{good}## 2026-13-45T99:00:00Z \u{2014} TASK_STARTED\n\n"
        );
        let read = parse(&text);
        assert_eq!(read.records, vec![complete("T-1", 1)]);
        assert_eq!(
            read.skipped,
            vec!["## Notes by a human\nkeep calm\n\n".to_owned()]
        );
        assert_eq!(
            read.torn_tail.as_deref(),
            Some("## 2026-13-45T99:00:00Z \u{2014} TASK_STARTED\n\n")
        );
    }

    #[test]
    fn appending_after_a_torn_tail_keeps_the_log_parsable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        let torn = "## 2026-11-18T21:46:40Z \u{2014} TASK_COMPLETE\n- task: T-0";
        fs::write(
            &path,
            format!("{}{torn}", render(&complete("T-1", 1)).unwrap()),
        )
        .unwrap();
        assert_eq!(read_all(&path).unwrap().torn_tail.as_deref(), Some(torn));

        append(&path, &complete("T-2", 2)).unwrap();

        let read = read_all(&path).unwrap();
        assert_eq!(read.records, vec![complete("T-1", 1), complete("T-2", 2)]);
        assert_eq!(
            read.skipped,
            vec![format!("{torn}\n")],
            "the torn entry is kept, never rewritten"
        );
        assert_eq!(read.torn_tail, None);
        assert!(fs::read_to_string(&path).unwrap().contains(torn));
    }

    #[test]
    fn a_missing_log_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read_all(&dir.path().join("log.md")).unwrap(),
            LogRead::default()
        );
        assert_eq!(
            read_tail(&dir.path().join("log.md"), 100).unwrap(),
            LogRead::default()
        );
    }

    #[test]
    fn read_tail_resynchronises_on_the_next_heading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        let records: Vec<LogRecord> = (0..20).map(|i| complete(&format!("T-{i:03}"), i)).collect();
        for record in &records {
            append(&path, record).unwrap();
        }
        // The last blocks all have the same length (two-digit minutes).
        let block_len = render(&records[19]).unwrap().len() as u64;

        let all = read_tail(&path, u64::MAX).unwrap();
        assert_eq!(all.records, records);

        // Exactly three blocks: the window starts on a heading, which must not be lost.
        assert_eq!(
            read_tail(&path, 3 * block_len).unwrap().records,
            records[17..]
        );
        // A little more than three blocks: the cut-off fourth is dropped, not misparsed.
        let partial = read_tail(&path, 3 * block_len + 10).unwrap();
        assert_eq!(partial.records, records[17..]);
        assert!(partial.skipped.is_empty() && partial.torn_tail.is_none());
        // A little less than one block: nothing complete is visible.
        assert_eq!(read_tail(&path, block_len - 1).unwrap(), LogRead::default());
    }

    #[test]
    fn read_tail_reports_a_torn_tail_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        append(&path, &complete("T-1", 1)).unwrap();
        append(&path, &complete("T-2", 2)).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all("## 2026-11-18T21:47:40Z \u{2014} TASK_ST".as_bytes())
            .unwrap();

        let read = read_tail(&path, 150).unwrap();
        assert_eq!(read.records, vec![complete("T-2", 2)]);
        assert_eq!(
            read.torn_tail.as_deref(),
            Some("## 2026-11-18T21:47:40Z \u{2014} TASK_ST")
        );
    }

    #[test]
    fn crlf_edited_logs_still_parse() {
        let text = render(&complete("T-1", 1)).unwrap().replace('\n', "\r\n");
        assert_eq!(parse(&text).records, vec![complete("T-1", 1)]);
    }

    /// The log's blocks as the whole-file parse splits them, each with its entry and whether it
    /// is damaged: what [`find_back`] must find, newest first.
    fn blocks_forward(text: &str) -> Vec<(u64, Option<LogRecord>, bool)> {
        let starts = block_starts(text);
        starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let end = starts.get(i + 1).copied().unwrap_or(text.len());
                let (record, damage) = parse_block(&text[start..end], Fields::All);
                (start as u64, record, damage.is_some())
            })
            .collect()
    }

    fn piece() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        // Long values cross find_back's chunks; the other pieces are the damage a log can hold.
        let value = prop_oneof![
            "[a-z \\\n#]{0,12}",
            (0usize..3_000, "[a-z#\n]").prop_map(|(n, c)| c.repeat(n)),
        ];
        prop_oneof![
            4 => (value, 0i64..1000).prop_map(|(v, s)| {
                render(&LogRecord::new(at(s), "STATE_SAVED").with("replay", v).with("n", s))
                    .unwrap()
            }),
            1 => (0usize..500, 0i64..9).prop_map(|(n, s)| {
                let record = LogRecord::new(at(s), "STATE_SAVED").with("replay", "y".repeat(n));
                render(&record).unwrap().replace('\n', "\r\n")
            }),
            1 => Just("notes a person wrote\n".to_owned()),
            1 => Just("## 2026-11-18T21:47:40Z \u{2014} TASK_ST".to_owned()),
            1 => Just("## not a heading\n\n".to_owned()),
            1 => Just("\n## ".to_owned()),
            1 => (0usize..300).prop_map(|n| format!("x{}\n", "#".repeat(n))),
        ]
    }

    /// A needle is found wherever it falls against the chunks' seams, and only where it is.
    #[test]
    fn block_contains_finds_a_needle_across_every_seam() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.md");
        for offset in 0..2 * CHUNK {
            let text = format!("## x\n- a: {}\"tasks\":{{\n\n", "z".repeat(offset));
            fs::write(&path, &text).unwrap();
            let span = (0, text.len() as u64);
            let needles: [&[u8]; 2] = [b"\"tasks\":{", b"\"project\":{"];
            assert_eq!(
                block_contains(&path, span, &needles).unwrap(),
                [true, false],
                "{offset}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Backwards, a block at a time and with its lines cut, the log reads as the whole-file
        /// parse reads it: the same blocks, entries and damage, a cut entry read whole by
        /// `read_block`, `block_contains` as a search of the block's bytes, and `limit` keeping
        /// exactly the blocks that start within it.
        #[test]
        fn find_back_reads_the_blocks_the_whole_parse_reads(
            pieces in proptest::collection::vec(piece(), 0..8),
            clip in proptest::prop_oneof![proptest::strategy::Just(usize::MAX), 1usize..200],
            limit in proptest::prop_oneof![proptest::strategy::Just(u64::MAX), 0u64..12_000],
        ) {
            use proptest::prelude::*;
            let text = pieces.concat();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("log.md");
            fs::write(&path, &text).unwrap();
            let len = text.len() as u64;
            let expected: Vec<_> = blocks_forward(&text)
                .into_iter()
                .rev()
                .filter(|(start, _, _)| *start >= len.saturating_sub(limit))
                .collect();
            let mut found = Vec::new();
            let none = find_back(&path, limit, clip, |block| {
                found.push(block);
                None::<()>
            })
            .unwrap();
            prop_assert!(none.is_none());
            prop_assert_eq!(found.len(), expected.len());
            let mut end = len;
            for (block, (start, record, damaged)) in found.iter().zip(&expected) {
                prop_assert_eq!(block.span, (*start, end));
                prop_assert_eq!(block.damaged, *damaged);
                let whole = read_block(&path, block.span).unwrap();
                prop_assert_eq!(&whole, record);
                if !block.clipped {
                    prop_assert_eq!(&block.record, record);
                }
                prop_assert_eq!(block.record.is_some(), record.is_some());
                let bytes = &text.as_bytes()[*start as usize..end as usize];
                let needles: [&[u8]; 3] = [b"y\r\n", b"replay", b"\n## "];
                let contains = block_contains(&path, block.span, &needles).unwrap();
                for (needle, found) in needles.iter().zip(contains) {
                    prop_assert_eq!(found, memchr::memmem::find(bytes, needle).is_some());
                }
                end = *start;
            }
        }
    }
}
