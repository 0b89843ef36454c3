//! The replay payload of the project store's progress log: what makes `progress/log.md` a
//! write-ahead log from which tasks.json and project.json can be rebuilt (SPEC §2, issue #16).
//!
//! Every transaction that changes state puts one `- replay: {json}` line on its last log entry.
//! The JSON is one line (the log escapes nothing in it but `\`), so the entry keeps the SPEC's
//! `- key: value` shape and tools that read the log see one more key they do not know. It holds:
//!
//! - `seq`: the commit number, one more than the last one the store knows of;
//! - `base`: the `log_seq` markers of tasks.json and project.json the transaction read, which is
//!   how recovery tells a file that missed this commit from one another tool rewrote since;
//! - `tasks`: the tasks written or changed, whole, as they are after the commit, the ids removed,
//!   the new order when it is not "old order, then the new ones", the document's top-level fields
//!   when they changed; and, when the change does not start from the previous commit's list, a
//!   `reset`: `true` to start from an empty list, or `{"checkpoint": N, "sum": "…"}` to start from
//!   checkpoint N — the tasks.json another tool left, kept under a second name by the first write
//!   over it, instead of logging all of it (see [`Start`]);
//! - `project`: the whole project record when it changed.
//!
//! Each state file carries the `seq` of the commit that last wrote it as a top-level `log_seq`
//! field (both schemas allow unknown top-level fields; cairn strips it on read, so the domain
//! never sees it). A checkpoint is a copy of tasks.json, so it carries its `seq` too: recovery
//! starts from the newest base it can trust — a checkpoint or a `reset` — and replays every later
//! commit, in order, without a gap.

use cairn_domain::log::LogRecord;
use cairn_domain::project::{Project, Task, TaskDoc, TaskId};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::task_cache::Encoded;

/// The log field holding a commit's payload.
pub(crate) const FIELD: &str = "replay";

/// The top-level field of tasks.json, project.json and checkpoints naming the commit that wrote
/// them.
pub(crate) const MARKER: &str = "log_seq";

/// The kind of the entry that carries a payload when the transaction logged no event of its own.
pub(crate) const STATE_ENTRY: &str = "STATE_SAVED";

/// A commit's payload; `P` is how the tasks it puts are held: decoded ([`Task`]), or, as a replay
/// reads the log ([`Deferred`]), as their JSON until the commit is applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub(crate) struct Payload<P = Task> {
    pub seq: u64,
    #[serde(default)]
    pub base: Base,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksChange<P>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<Project>,
}

/// The markers the committing transaction read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Base {
    pub tasks: u64,
    pub project: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub(crate) struct TasksChange<P = Task> {
    /// The list the change applies to.
    #[serde(default, rename = "reset", skip_serializing_if = "Start::is_previous")]
    pub start: Start,
    /// Tasks after the commit that are new or differ from before, in document order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub put: Vec<P>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<TaskId>,
    /// Every id in its new order, when the order is not the old one with new tasks at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<TaskId>>,
    /// The document's top-level fields (its `tasks` empty), when they changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top: Option<TaskDoc>,
    /// More of `put`, named by position in the list after the commit instead of copied: a
    /// writer's change, which [`Payload::encode_onto`] logs from that list — from the lines
    /// tasks.json was just rendered with, where it has them. Never read back: a logged payload
    /// holds all its tasks in `put`.
    #[serde(skip)]
    pub put_at: Vec<usize>,
    /// Whether `put` is as cairn logged it: the bytes of its array are the ones whose sum the
    /// payload carries right after it (see [`seal_onto`]), so its tasks passed the schema before
    /// they were logged, as every logged task does. Found by [`Deferred::deferred`], never
    /// written as such; a list edited by hand, or logged by a cairn that did not seal, is not.
    #[serde(skip)]
    pub sealed: bool,
}

impl<P> Default for TasksChange<P> {
    fn default() -> Self {
        Self {
            start: Start::Previous,
            put: Vec::new(),
            removed: Vec::new(),
            order: None,
            top: None,
            put_at: Vec::new(),
            sealed: false,
        }
    }
}

/// A payload as a replay reads the log: each task it puts checked as JSON only, and decoded when
/// the replay applies the commit ([`TasksChange::decoded`]; a replay that meets one that does
/// not decode starts over without it). An import logs every task it made
/// in one payload; a replay from a later base never decodes it, and one that applies it decodes
/// it on every core and moves the tasks into its list — decoding 100,000 tasks on one core up
/// front, then copying them out of the payload, was half of a rebuild.
pub(crate) type Deferred<'a> = Payload<&'a RawValue>;

impl<'a> Deferred<'a> {
    /// [`Payload::of`], the tasks deferred.
    pub fn deferred(record: &'a LogRecord) -> Option<Result<Self, String>> {
        let text = record.get(FIELD)?;
        Some(
            serde_json::from_str::<Self>(text)
                .map(|mut payload| {
                    if let Some(tasks) = &mut payload.tasks {
                        tasks.sealed = is_sealed(text, &tasks.put);
                    }
                    payload
                })
                .map_err(|e| e.to_string()),
        )
    }
}

/// What opens the sum of a payload's `put`, right after the array's `]`; 16 hex digits and a
/// closing quote follow.
const SEAL_OPENING: &[u8] = b",\"put_sum\":\"";

/// The key of the sum of a payload's `put` ([`crate::task_cache::checksum`]).
const SEAL_KEY: &str = "put";

/// Writes the sum of the bytes of `put`'s array (`out[array..]`, just written) after it: what
/// tells a rebuild that those tasks are as cairn logged them, and so need no validation again
/// (see [`TasksChange::sealed`]). Other readers see one more field they do not know.
fn seal_onto(out: &mut Vec<u8>, array: usize) {
    let sum = crate::task_cache::checksum(SEAL_KEY, &out[array..]);
    out.extend_from_slice(SEAL_OPENING);
    out.extend_from_slice(format!("{sum:016x}\"").as_bytes());
}

/// Whether `put`, the tasks of the payload `text` deferred as they lie in it, is sealed: the
/// array they make up is followed by the sum of its bytes (see [`seal_onto`]). Anything else —
/// no sum, another sum, the array spread out or moved by a hand edit — is not.
fn is_sealed(text: &str, put: &[&RawValue]) -> bool {
    let bytes = text.as_bytes();
    // Where a task's JSON lies in `text`: each borrows its bytes from there.
    let span = |raw: &RawValue| {
        let at = raw
            .get()
            .as_ptr()
            .addr()
            .checked_sub(text.as_ptr().addr())?;
        (at + raw.get().len() <= bytes.len()).then_some((at, at + raw.get().len()))
    };
    let (Some(first), Some(last)) = (put.first(), put.last()) else {
        return false;
    };
    let (Some((start, _)), Some((_, end))) = (span(first), span(last)) else {
        return false;
    };
    let Some(open) = start.checked_sub(1) else {
        return false;
    };
    if bytes[open] != b'[' || bytes.get(end) != Some(&b']') {
        return false;
    }
    let logged = bytes[end + 1..]
        .strip_prefix(SEAL_OPENING)
        .and_then(|rest| rest.get(..17))
        .filter(|sum| sum[16] == b'"')
        .and_then(|sum| std::str::from_utf8(&sum[..16]).ok())
        .and_then(|hex| u64::from_str_radix(hex, 16).ok());
    logged == Some(crate::task_cache::checksum(SEAL_KEY, &bytes[open..=end]))
}

impl TasksChange<&RawValue> {
    /// The change with its tasks decoded, a long list on every core; `None` when one of them is
    /// not a task.
    pub fn decoded(&self) -> Option<TasksChange> {
        /// Tasks a thread takes at a time, and below which the calling thread decodes them all.
        const CHUNK: usize = 2048;
        const ON_ONE_CORE: usize = 8192;
        let put = crate::parallel::collect_from_both_ends(&self.put, CHUNK, ON_ONE_CORE, |raw| {
            serde_json::from_str::<Task>(raw.get()).ok()
        })?;
        Some(TasksChange {
            start: self.start.clone(),
            put,
            removed: self.removed.clone(),
            order: self.order.clone(),
            top: self.top.clone(),
            put_at: Vec::new(),
            sealed: self.sealed,
        })
    }
}

/// The list a change applies to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Start {
    /// The previous commit's: nearly every change.
    #[default]
    Previous,
    /// An empty list, the change holding every task: a new project, a restore, a recovery that
    /// could not replay, a list whose duplicate ids cannot be named in a change. Logged as
    /// `"reset": true`.
    Empty,
    /// A checkpoint's list: the first write after another tool's edit (a `git pull`, a copy of
    /// the store) keeps the file it found as a checkpoint — a second name, not a copy — and
    /// logs only its change from there instead of the whole list (48 MB at 100,000 tasks, which
    /// a git history then kept once per pull). Logged as `"reset": {"checkpoint": N, "sum": S}`,
    /// which a cairn that knows only `true` refuses as unreadable instead of misreading.
    Checkpoint(CheckpointRef),
}

impl Start {
    fn is_previous(&self) -> bool {
        *self == Start::Previous
    }
}

/// A checkpoint a change starts from: its number, and the sum of its bytes
/// ([`crate::task_cache::checksum`] under [`CheckpointRef::SUM_KEY`], in hex), which tells it from
/// another file of that number (pruned and taken again, or brought by a `git pull`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CheckpointRef {
    pub checkpoint: u64,
    pub sum: String,
}

impl CheckpointRef {
    const SUM_KEY: &str = "checkpoint";

    /// Checkpoint `checkpoint`, whose bytes are `bytes`.
    pub fn of(checkpoint: u64, bytes: &[u8]) -> Self {
        Self::summed(
            checkpoint,
            crate::task_cache::checksum(Self::SUM_KEY, bytes),
        )
    }

    /// Checkpoint `checkpoint`, whose bytes `file` holds from where it is read, `len` of them:
    /// summed as they are read, never held whole.
    pub fn read(checkpoint: u64, len: u64, file: impl std::io::Read) -> std::io::Result<Self> {
        let sum = crate::task_cache::checksum_read(Self::SUM_KEY, len, file)?;
        Ok(Self::summed(checkpoint, sum))
    }

    fn summed(checkpoint: u64, sum: u64) -> Self {
        Self {
            checkpoint,
            sum: format!("{sum:016x}"),
        }
    }

    /// Whether `bytes` are the ones this names.
    pub fn names(&self, bytes: &[u8]) -> bool {
        *self == Self::of(self.checkpoint, bytes)
    }
}

impl Serialize for Start {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Start::Previous => serializer.serialize_bool(false),
            Start::Empty => serializer.serialize_bool(true),
            Start::Checkpoint(named) => named.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Start {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Logged {
            Reset(bool),
            Checkpoint(CheckpointRef),
        }
        Ok(match Logged::deserialize(deserializer)? {
            Logged::Reset(false) => Start::Previous,
            Logged::Reset(true) => Start::Empty,
            Logged::Checkpoint(named) => Start::Checkpoint(named),
        })
    }
}

/// A commit's number and the markers it read: all a reader needs to tell whether the state files
/// are behind the log, without the change (which can be the whole list: an import, a restore).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct Head {
    pub seq: u64,
    #[serde(default)]
    pub base: Base,
}

/// A logged commit as found: its [`Head`], and its payload's text, parsed only when asked.
#[derive(Debug)]
pub(crate) struct Commit {
    pub head: Head,
    text: String,
}

impl Commit {
    /// The commit `record` carries: `None` when it has no payload, `Some(Err)` when the payload is
    /// unreadable.
    pub fn of(mut record: LogRecord) -> Option<Result<Self, String>> {
        let at = record.fields.iter().position(|(key, _)| key == FIELD)?;
        let text = record.fields.swap_remove(at).1;
        Some(Head::of(&text).map(|head| Self { head, text }))
    }

    /// Whether the payload may hold a `tasks` change, and a `project` record: never false when
    /// it does (the key is there, outside any string), sometimes true when it does not (a task's
    /// own field of that name). A search, not a parse, of what can be the whole list.
    pub fn may_carry(&self) -> (bool, bool) {
        let has = |key: &[u8]| memchr::memmem::find(self.text.as_bytes(), key).is_some();
        (has(CARRIES[0]), has(CARRIES[1]))
    }

    pub fn payload(&self) -> Result<Payload, String> {
        serde_json::from_str(&self.text).map_err(|e| e.to_string())
    }
}

/// What [`Commit::may_carry`] looks for: a `tasks` change, a `project` record. Neither holds a
/// character the log escapes, so a search of the log's own bytes finds them too.
pub(crate) const CARRIES: [&[u8]; 2] = [b"\"tasks\":{", b"\"project\":{"];

/// The payloads' lines of `log` (the log's bytes), each as the value after `- replay: `, found
/// by that opening without parsing an entry: a line break cannot be inside a value, so only a
/// payload's own line starts that way. Only complete ones: a payload line its entry's blank line
/// does not end (LF or, after git's `autocrlf`, CRLF, as the log's parser reads both) is a torn
/// append, no commit. `newest_first` walks them from the end.
fn payload_lines(log: &[u8], newest_first: bool) -> impl Iterator<Item = &[u8]> {
    static OPENING: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("\n- {FIELD}: "));
    let opening = OPENING.as_bytes();
    let starts: Box<dyn Iterator<Item = usize> + '_> = if newest_first {
        Box::new(memchr::memmem::rfind_iter(log, opening))
    } else {
        Box::new(memchr::memmem::find_iter(log, opening))
    };
    starts.filter_map(move |at| {
        let value = &log[at + opening.len()..];
        let end = memchr::memchr(b'\n', value)?;
        let after = &value[end + 1..];
        (after.starts_with(b"\n") || after.starts_with(b"\r\n")).then_some(&value[..end])
    })
}

/// The head of a payload line, read from its first bytes only (one can be the whole list), and
/// the text after it: `encode` writes `seq`, then `base` (numbers only: its `}` is the first).
fn head_of_line(value: &[u8]) -> Option<(Head, &str)> {
    const HEAD_ROOM: usize = 4096;
    let room = &value[..value.len().min(HEAD_ROOM)];
    let room = match std::str::from_utf8(room) {
        Ok(text) => text,
        Err(cut) => std::str::from_utf8(&room[..cut.valid_up_to()]).ok()?,
    };
    let head = Head::of(room).ok()?;
    Some((head, &room[room.find('}')? + 1..]))
}

/// The highest commit number among the complete entries of `log` (the log's bytes); 0 for a log
/// without one.
pub(crate) fn highest_seq(log: &[u8]) -> u64 {
    payload_lines(log, false)
        .filter_map(|value| Some(head_of_line(value)?.0.seq))
        .max()
        .unwrap_or(0)
}

/// The newest commit of `log` (the log's bytes) that starts its list anew — `"tasks":{"reset":`
/// right after its head — with the checkpoint it starts from (`None`: a whole list).
pub(crate) fn newest_base(log: &[u8]) -> Option<(u64, Option<CheckpointRef>)> {
    const RESET: &str = ",\"tasks\":{\"reset\":";
    payload_lines(log, true).find_map(|value| {
        let (head, after) = head_of_line(value)?;
        let rest = after.strip_prefix(RESET)?;
        let named = serde_json::Deserializer::from_str(rest)
            .into_iter::<CheckpointRef>()
            .next()
            .and_then(Result::ok);
        Some((head.seq, named))
    })
}

impl Head {
    pub fn of(text: &str) -> Result<Self, String> {
        // `encode` writes `seq` and `base` first, and `base` holds only numbers, so its first `}`
        // closes it: the head parses from that prefix. Any other shape is parsed whole.
        let prefix = text.strip_prefix("{\"seq\":").and_then(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let base = rest[digits..].strip_prefix(",\"base\":{")?;
            let close = base.find('}')?;
            Some(&text[..text.len() - base.len() + close + 1])
        });
        if let Some(Ok(head)) = prefix.map(|p| serde_json::from_str(&format!("{p}}}"))) {
            return Ok(head);
        }
        serde_json::from_str::<Payload>(text)
            .map(|p| Self {
                seq: p.seq,
                base: p.base,
            })
            .map_err(|e| e.to_string())
    }
}

impl Payload {
    /// The payload as one line of JSON: the bytes `serde_json::to_string` gives (`Head::of` reads
    /// its prefix), but a long list of tasks serialized in parts on every core — the payload of
    /// an import or a restore is the whole list, and serializing 100,000 tasks on one core was a
    /// third of a restore.
    pub fn encode(&self) -> String {
        let mut out = Vec::new();
        self.encode_onto(&mut out, &[], |_| None);
        String::from_utf8(out).unwrap_or_default()
    }

    /// [`Payload::encode`] onto the end of `out` (the log's block, see
    /// [`crate::progress_log::append_all_then`]), for a writer's payload, whose change names tasks
    /// of `after` (the list after the commit) by position (`put_at`): each is written as
    /// `line(i)` gives it when it does — the bytes tasks.json was just rendered with for that
    /// task, which are exactly its JSON here — else serialized. The first write after another
    /// tool's edit logs the whole list: copying and serializing 100,000 tasks again was a fifth
    /// of it.
    pub fn encode_onto<'a>(
        &self,
        out: &mut Vec<u8>,
        after: &[Task],
        line: impl Fn(usize) -> Option<&'a [u8]>,
    ) {
        let start = out.len();
        // Serializing plain data with string keys into memory cannot fail, nor can a position
        // past `after`: the writer's change names positions of its own list. Were either to,
        // the payload would be empty, which a reader reports as unreadable.
        if self
            .encode_into(out, Listed { after, line: &line })
            .is_err()
        {
            out.truncate(start);
        }
    }

    /// About how many bytes [`Self::encode_onto`] writes with `line`, and the log's escaping of
    /// them: the lines of the tasks it names by position, a comma each, room for an escape in
    /// every eighth byte, and the rest (a change of a few tasks) within a margin.
    pub fn size_hint<'a>(&self, line: impl Fn(usize) -> Option<&'a [u8]>) -> usize {
        let lines: usize = (self.tasks.iter())
            .flat_map(|change| &change.put_at)
            .filter_map(|&i| line(i))
            .map(|json| json.len() + 1)
            .sum();
        lines + lines / 8 + 4096
    }

    fn encode_into(&self, out: &mut Vec<u8>, listed: Listed<'_, '_>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"seq\":");
        serde_json::to_writer(&mut *out, &self.seq)?;
        out.extend_from_slice(b",\"base\":");
        serde_json::to_writer(&mut *out, &self.base)?;
        if let Some(tasks) = &self.tasks {
            out.extend_from_slice(b",\"tasks\":");
            tasks.encode_into(out, listed)?;
        }
        if let Some(project) = &self.project {
            out.extend_from_slice(b",\"project\":");
            serde_json::to_writer(&mut *out, project)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// The payload of `record`: `None` when it has none, `Some(Err)` when it is unreadable.
    pub fn of(record: &LogRecord) -> Option<Result<Self, String>> {
        record
            .get(FIELD)
            .map(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
    }
}

/// Where a writer's change finds the tasks it names by position: the list after the commit, and
/// the JSON tasks.json was rendered with for those it has (see [`Payload::encode_onto`]).
#[derive(Clone, Copy)]
struct Listed<'s, 'a> {
    after: &'s [Task],
    line: &'s dyn Fn(usize) -> Option<&'a [u8]>,
}

impl TasksChange {
    /// Serialized as serde serializes it, in its fields' order, `put_at` after `put` (see
    /// [`Payload::encode_onto`]).
    fn encode_into(&self, out: &mut Vec<u8>, listed: Listed<'_, '_>) -> serde_json::Result<()> {
        out.push(b'{');
        let mut first = true;
        let mut key = |out: &mut Vec<u8>, key: &[u8]| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            out.extend_from_slice(key);
        };
        match &self.start {
            Start::Previous => {}
            Start::Empty => key(out, b"\"reset\":true"),
            Start::Checkpoint(named) => {
                key(out, b"\"reset\":");
                serde_json::to_writer(&mut *out, named)?;
            }
        }
        if self.put_at.is_empty() && !self.put.is_empty() {
            key(out, b"\"put\":");
            let array = out.len();
            tasks_in_parts(&self.put, out)?;
            seal_onto(out, array);
        } else if !self.put_at.is_empty() {
            key(out, b"\"put\":");
            let array = out.len();
            // serde's compact array: the elements' JSON, separated by commas.
            let mut before = b'[';
            let mut element = |out: &mut Vec<u8>| out.push(std::mem::replace(&mut before, b','));
            for task in &self.put {
                element(out);
                serde_json::to_writer(&mut *out, task)?;
            }
            for &i in &self.put_at {
                element(out);
                match (listed.line)(i) {
                    Some(json) => out.extend_from_slice(json),
                    None => {
                        let task = listed.after.get(i).ok_or_else(|| {
                            serde::ser::Error::custom("a change names a task the list lacks")
                        })?;
                        serde_json::to_writer(&mut *out, task)?;
                    }
                }
            }
            out.push(b']');
            seal_onto(out, array);
        }
        if !self.removed.is_empty() {
            key(out, b"\"removed\":");
            serde_json::to_writer(&mut *out, &self.removed)?;
        }
        if let Some(order) = &self.order {
            key(out, b"\"order\":");
            serde_json::to_writer(&mut *out, order)?;
        }
        if let Some(top) = &self.top {
            key(out, b"\"top\":");
            serde_json::to_writer(&mut *out, top)?;
        }
        out.push(b'}');
        Ok(())
    }
}

/// `tasks` as a JSON array, a long list in parts on every core, joined.
fn tasks_in_parts(tasks: &[Task], out: &mut Vec<u8>) -> serde_json::Result<()> {
    /// Below this many tasks a thread costs more than it saves.
    const PER_THREAD: usize = 4096;
    if tasks.len() < 2 * PER_THREAD {
        return serde_json::to_writer(out, tasks);
    }
    let parts = crate::parallel::in_parts(tasks, PER_THREAD, |part, _| {
        let mut text = Vec::with_capacity(part.len() * 512);
        serde_json::to_writer(&mut text, part).map(|()| text)
    });
    out.push(b'[');
    for (i, part) in parts.into_iter().enumerate() {
        let part = part?;
        if i > 0 {
            out.push(b',');
        }
        // Each part is a non-empty array: its elements are what lies between its brackets.
        out.extend_from_slice(&part[1..part.len() - 1]);
    }
    out.push(b']');
    Ok(())
}

/// The document's top-level fields without its tasks.
pub(crate) fn top_of(doc: &TaskDoc) -> TaskDoc {
    doc.without_tasks()
}

fn same_top(a: &TaskDoc, b: &TaskDoc) -> bool {
    a.version == b.version
        && a.project_id == b.project_id
        && a.completions_since_checkpoint == b.completions_since_checkpoint
        && a.extra == b.extra
}

/// A change that rebuilds `doc` from nothing.
pub(crate) fn whole(doc: &TaskDoc) -> TasksChange {
    TasksChange {
        start: Start::Empty,
        put: doc.tasks.to_vec(),
        top: Some(top_of(doc)),
        ..TasksChange::default()
    }
}

/// [`whole`] for a writer: `doc`'s tasks named by position (see [`TasksChange::put_at`]).
pub(crate) fn whole_at(doc: &TaskDoc) -> TasksChange {
    TasksChange {
        start: Start::Empty,
        put_at: (0..doc.tasks.len()).collect(),
        top: Some(top_of(doc)),
        ..TasksChange::default()
    }
}

/// Whether the ids of `doc` are all different.
fn unique(doc: &TaskDoc) -> bool {
    unique_ids(&doc.tasks)
}

/// Whether the ids of `tasks` are all different.
fn unique_ids(tasks: &[Task]) -> bool {
    let mut seen = FxHashSet::with_capacity_and_hasher(tasks.len(), Default::default());
    tasks.iter().all(|t| seen.insert(&t.id))
}

/// What turns `before` into `after`; `None` when nothing changed.
/// `unchanged[i]` may say that `after`'s `i`-th task is exactly `before`'s (the caller compared
/// them already); an empty slice says nothing.
pub(crate) fn diff(before: &TaskDoc, after: &TaskDoc, unchanged: &[bool]) -> Option<TasksChange> {
    if !unique(after) || !unique(before) {
        // Ids name tasks in a change; with duplicates only the whole list says what it is.
        return Some(whole(after));
    }
    let old: FxHashMap<&TaskId, &Task> = before.tasks.iter().map(|t| (&t.id, t)).collect();
    let mut change = TasksChange::default();
    for (i, task) in after.tasks.iter().enumerate() {
        // Most tasks sit where they were and are unchanged: compare in place first.
        if unchanged.get(i) == Some(&true) || before.tasks.get(i) == Some(task) {
            continue;
        }
        if old.get(&task.id) != Some(&task) {
            change.put.push(task.clone());
        }
    }
    let kept: FxHashSet<&TaskId> = after.tasks.iter().map(|t| &t.id).collect();
    change.removed = before
        .tasks
        .iter()
        .filter(|t| !kept.contains(&t.id))
        .map(|t| t.id.clone())
        .collect();
    let expected = before
        .tasks
        .iter()
        .map(|t| &t.id)
        .filter(|id| kept.contains(id))
        .chain(
            after
                .tasks
                .iter()
                .map(|t| &t.id)
                .filter(|id| !old.contains_key(id)),
        );
    if !expected.eq(after.tasks.iter().map(|t| &t.id)) {
        change.order = Some(after.tasks.iter().map(|t| t.id.clone()).collect());
    }
    if !same_top(before, after) {
        change.top = Some(top_of(after));
    }
    (change != TasksChange::default()).then_some(change)
}

/// [`diff`] for a writer that kept the list before as its encoding instead of a copy: `top` is
/// its top-level fields, `before` and `encoded` the encodings of its tasks and of `after`'s, and
/// `unchanged[i]` whether `after`'s `i`-th task is `before`'s. A change that edits tasks where
/// they are, or adds some at the end — nearly every change — is found without decoding anything;
/// any other decodes the list before; the tasks it puts are named by position in `after`
/// ([`TasksChange::put_at`]) when found in place. `None` if an encoding does not decode.
pub(crate) fn diff_encoded(
    top: &TaskDoc,
    before: &Encoded,
    after: &TaskDoc,
    encoded: &Encoded,
    unchanged: &[bool],
) -> Option<Option<TasksChange>> {
    let in_place = before.len() <= encoded.len()
        && (0..before.len()).all(|i| before.id(i).is_some_and(|id| Some(id) == encoded.id(i)));
    // Every id before is where it was, so `after` repeats an id only if it repeats one of its own.
    if !in_place || !unique(after) {
        let before = TaskDoc {
            tasks: before.tasks()?.into(),
            ..top.without_tasks()
        };
        return Some(diff(&before, after, unchanged));
    }
    let mut change = TasksChange {
        put_at: (0..after.tasks.len())
            .filter(|&i| unchanged.get(i) != Some(&true))
            .collect(),
        ..TasksChange::default()
    };
    if !same_top(top, after) {
        change.top = Some(top_of(after));
    }
    Some((change != TasksChange::default()).then_some(change))
}

/// Applies `change` to `doc`, its tasks moved in — for a change that starts from a checkpoint,
/// `doc` is that checkpoint's list, which the caller reads. Fails (leaving `doc` in an
/// unspecified state) when the change does not fit the document.
pub(crate) fn apply(doc: &mut TaskDoc, change: TasksChange) -> Result<(), String> {
    let TasksChange {
        start,
        put,
        removed,
        order,
        top,
        put_at: _,
        sealed: _,
    } = change;
    if start == Start::Empty {
        // Whole lists may hold duplicate ids: taken as they are, not merged by id.
        doc.tasks = put.into();
    } else {
        merge(doc, put, &removed, order.as_deref())?;
    }
    if let Some(top) = top {
        doc.version = top.version;
        doc.project_id = top.project_id;
        doc.completions_since_checkpoint = top.completions_since_checkpoint;
        doc.extra = top.extra;
    }
    Ok(())
}

fn merge(
    doc: &mut TaskDoc,
    put: Vec<Task>,
    removed: &[TaskId],
    order: Option<&[TaskId]>,
) -> Result<(), String> {
    if !removed.is_empty() {
        let removed: FxHashSet<&TaskId> = removed.iter().collect();
        doc.tasks.retain(|t| !removed.contains(&t.id));
    }
    // Onto an empty list (the first commit after a new project's: an import), tasks that are all
    // new are the list: moved in whole. Pushed one by one they were copied into fresh memory,
    // the list grown by doubling, a tenth of a rebuild of 100,000 imported tasks.
    if doc.tasks.is_empty() && order.is_none() && unique_ids(&put) {
        doc.tasks = put.into();
        return Ok(());
    }
    let mut index: FxHashMap<TaskId, usize> = doc
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect();
    doc.tasks.reserve(put.len());
    for task in put {
        match index.get(&task.id) {
            Some(&i) => doc.tasks[i] = task,
            None => {
                index.insert(task.id.clone(), doc.tasks.len());
                doc.tasks.push(task);
            }
        }
    }
    if let Some(order) = order {
        if order.len() != doc.tasks.len() {
            return Err("the logged order does not name every task".into());
        }
        let mut slots: Vec<Option<Task>> = doc.tasks.take_all().into_iter().map(Some).collect();
        for id in order {
            let task = index
                .get(id)
                .and_then(|&i| slots[i].take())
                .ok_or_else(|| format!("the logged order names {id} twice or unknown"))?;
            doc.tasks.push(task);
        }
    }
    Ok(())
}

/// Removes the [`MARKER`] from a document's unknown fields and returns it (0 when absent).
pub(crate) fn take_marker(extra: &mut Map<String, Value>) -> u64 {
    extra
        .remove(MARKER)
        .and_then(|v| v.as_u64())
        .unwrap_or_default()
}

/// Adds `"log_seq": seq` as the last field of a pretty-printed JSON object, without reparsing
/// it (a 10,000-task document is megabytes). The bytes come from cairn's own serializer: an
/// object with at least one field, ending in `\n}` and an optional line feed.
pub(crate) fn with_marker(mut bytes: Vec<u8>, seq: u64) -> Vec<u8> {
    let end = bytes
        .iter()
        .rposition(|&b| b == b'}')
        .expect("a serialized JSON object ends with `}`");
    let field = format!(",\n  \"{MARKER}\": {seq}\n");
    // Drop the line feed before `}` so the new field follows the last one directly.
    let cut = if end > 0 && bytes[end - 1] == b'\n' {
        end - 1
    } else {
        end
    };
    bytes.splice(cut..end, field.into_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a complete payload line counts: the highest number, wherever it is in the file; a
    /// torn append at the end is no commit.
    #[test]
    fn the_highest_commit_is_found_by_the_lines_that_open_payloads() {
        let log = "# Log\n\n## t \u{2014} TASK_ADDED\n- task: T-001\n- replay: {\"seq\":3,\"base\":{\"tasks\":2,\"project\":1}}\n\n\
                   ## t \u{2014} ERROR\n- message: see - replay: {\"seq\":99}\n\n\
                   ## t \u{2014} STATE_SAVED\n- replay: {\"seq\":10,\"base\":{\"tasks\":9,\"project\":1}}\n\n\
                   ## t \u{2014} STATE_SAVED\n- replay: {\"seq\":7,\"base\":{\"tasks\":6,\"project\":1}}\n\n\
                   ## t \u{2014} STATE_SAVED\n- replay: {\"seq\":12,\"base\":{\"tas";
        assert_eq!(highest_seq(log.as_bytes()), 10);
        assert_eq!(highest_seq(log.replace('\n', "\r\n").as_bytes()), 10);
        assert_eq!(highest_seq(b"# Log\n"), 0);
    }

    /// The newest base, read from the end: a later commit that continues its list is passed
    /// over, and so is a torn append at the end, which is no commit.
    #[test]
    fn the_newest_base_is_found_from_the_end() {
        let named = CheckpointRef::of(2, b"{}");
        let reset = serde_json::to_string(&named).expect("json");
        let entry = |payload: &str| format!("## t \u{2014} STATE_SAVED\n- replay: {payload}\n\n");
        let log = [
            "# Log\n\n".to_owned(),
            entry(r#"{"seq":1,"base":{"tasks":0,"project":0},"tasks":{"reset":true,"top":{}}}"#),
            entry(&format!(
                r#"{{"seq":2,"base":{{"tasks":1,"project":1}},"tasks":{{"reset":{reset},"put":[]}}}}"#
            )),
            entry(r#"{"seq":3,"base":{"tasks":2,"project":1},"tasks":{"put":[]}}"#),
        ]
        .concat();
        assert_eq!(newest_base(log.as_bytes()), Some((2, Some(named.clone()))));
        assert_eq!(
            newest_base(log.replace('\n', "\r\n").as_bytes()),
            Some((2, Some(named)))
        );
        let torn = format!(
            "{log}## t \u{2014} STATE_SAVED\n- replay: {{\"seq\":4,\"base\":{{\"tasks\":3,\"project\":1}},\"tasks\":{{\"reset\":true"
        );
        assert_eq!(newest_base(torn.as_bytes()).map(|(seq, _)| seq), Some(2));
        let whole = [
            log.clone(),
            entry(r#"{"seq":4,"base":{"tasks":3,"project":1},"tasks":{"reset":true,"top":{}}}"#),
        ]
        .concat();
        assert_eq!(newest_base(whole.as_bytes()), Some((4, None)));
        assert_eq!(newest_base(b"# Log\n"), None);
    }

    impl Payload {
        /// [`Payload::encode_onto`] an empty buffer.
        fn encoded_with<'a>(
            &self,
            after: &[Task],
            line: impl Fn(usize) -> Option<&'a [u8]>,
        ) -> Vec<u8> {
            let mut out = Vec::new();
            self.encode_onto(&mut out, after, line);
            out
        }
    }

    use cairn_domain::project::fixtures::{doc_of as doc, pending_task as task};

    fn round_trip(before: &TaskDoc, after: &TaskDoc) {
        let mut replayed = before.clone();
        let change = diff(before, after, &[]);
        let encoded_before = Encoded::of(before, 1).expect("encodes");
        let encoded_after = Encoded::of(after, 2).expect("encodes");
        let logged = |change: Option<TasksChange>| {
            change.map(|change| {
                Payload {
                    seq: 1,
                    base: Base::default(),
                    tasks: Some(change),
                    project: None,
                }
                .encoded_with(&after.tasks, |_| None)
            })
        };
        let found = diff_encoded(
            &top_of(before),
            &encoded_before,
            after,
            &encoded_after,
            &encoded_after.unchanged_since(&encoded_before),
        )
        .expect("the encodings decode");
        assert_eq!(
            logged(found),
            logged(change.clone()),
            "the change found from the encodings is logged as the change found from the lists"
        );
        if let Some(change) = change {
            let text = Payload {
                seq: 1,
                base: Base::default(),
                tasks: Some(change),
                project: None,
            }
            .encode();
            let payload: Payload = serde_json::from_str(&text).expect("decodes");
            apply(&mut replayed, payload.tasks.expect("tasks")).expect("applies");
        }
        assert_eq!(&replayed, after);
    }

    /// A commit's head is read from the front of its payload, and agrees with the whole parse;
    /// a payload of another shape falls back to the whole parse, and one torn after its head
    /// still numbers (its head) but applies nothing.
    #[test]
    fn a_commits_head_agrees_with_its_whole_payload() {
        let record = |text: &str| {
            let mut r = LogRecord::new(chrono::Utc::now(), STATE_ENTRY);
            r.fields.push(("task".into(), "T-001".into()));
            r.fields.push((FIELD.into(), text.into()));
            r
        };
        let base = Base {
            tasks: 4,
            project: 2,
        };
        let with_tasks = Payload {
            seq: 9,
            base,
            tasks: diff(&doc(vec![]), &doc(vec![task(1, "one")]), &[]),
            project: None,
        };
        let commit = Commit::of(record(&with_tasks.encode()))
            .expect("a commit")
            .expect("readable");
        assert_eq!(commit.head, Head { seq: 9, base });
        assert_eq!(commit.may_carry(), (true, false));
        assert_eq!(commit.payload(), Ok(with_tasks));

        let reordered = r#"{"base":{"project":2,"tasks":4},"seq":9}"#;
        let commit = Commit::of(record(reordered))
            .expect("a commit")
            .expect("readable");
        assert_eq!(commit.head, Head { seq: 9, base });
        assert_eq!(commit.may_carry(), (false, false));

        let torn = r#"{"seq":9,"base":{"tasks":4,"project":2},"tasks":{"put":[{"id":"#;
        let commit = Commit::of(record(torn)).expect("a commit").expect("a head");
        assert_eq!(commit.head, Head { seq: 9, base });
        assert!(commit.payload().is_err());

        assert!(Commit::of(record("{\"seq\":")).expect("a commit").is_err());
        assert!(Commit::of(LogRecord::new(chrono::Utc::now(), STATE_ENTRY)).is_none());
    }

    /// `encode` gives the bytes serde gives, whatever the payload holds, a long list serialized
    /// in parts on every core.
    #[test]
    fn a_payload_encodes_as_serde_encodes_it() {
        for n in [0, 3, 8191, 8192, 20_001] {
            let mut tasks: Vec<Task> = (1..=n).map(|i| task(i, "Task")).collect();
            if let Some(first) = tasks.first_mut() {
                first.title = "a \"quoted\" title\nover two lines".into();
            }
            let doc = doc(tasks.clone());
            let mut partial = whole(&doc);
            partial.start = Start::Previous;
            partial.removed = vec![TaskId::from_number(n + 1)];
            partial.order = Some(tasks.iter().rev().map(|t| t.id.clone()).collect());
            let changes = [
                Some(whole(&doc)),
                Some(partial),
                Some(TasksChange::default()),
                None,
            ];
            let project: Project = serde_json::from_value(serde_json::json!({
                "id": "demo", "name": "Demo", "goal": "a goal of some length", "type": "software",
                "status": "READY", "created_at": "2026-11-22T00:00:00Z",
                "updated_at": "2026-11-22T00:00:00Z", "phases": []
            }))
            .expect("project");
            let projects = [None, Some(project)];
            for (change, project) in changes
                .iter()
                .flat_map(|c| projects.iter().map(move |p| (c, p)))
            {
                let payload = Payload {
                    seq: 7,
                    base: Base {
                        tasks: 5,
                        project: 6,
                    },
                    tasks: change.clone(),
                    project: project.clone(),
                };
                let text = payload.encode();
                let serde = serde_json::to_string(&payload).expect("serializes");
                assert!(
                    unsealed(&text) == serde,
                    "{n} tasks: encode and serde differ"
                );
                let back: Payload = serde_json::from_str(&text).expect("decodes");
                assert_eq!(back, payload, "{n} tasks");
            }
            // A writer's change names its tasks by position: logged from the lines it has and
            // serialized where it has none, it is the payload that copies them.
            let (copied, by_position, lines) = whole_both_ways(&doc);
            let logged =
                by_position.encoded_with(&doc.tasks, |i| (i % 3 != 1).then(|| &lines[i][..]));
            assert!(
                logged == copied.encode().into_bytes(),
                "{n} tasks: by position differs"
            );
        }
    }

    /// `doc`'s whole list as a commit's payload, its tasks copied and named by position, and the
    /// JSON of each task: a writer's lines.
    fn whole_both_ways(doc: &TaskDoc) -> (Payload, Payload, Vec<Vec<u8>>) {
        let copied = Payload {
            seq: 7,
            base: Base::default(),
            tasks: Some(whole(doc)),
            project: None,
        };
        let by_position = Payload {
            tasks: Some(whole_at(doc)),
            ..copied.clone()
        };
        let lines = (doc.tasks.iter())
            .map(|t| serde_json::to_vec(t).expect("serializes"))
            .collect();
        (copied, by_position, lines)
    }

    /// `text` without the sum of its `put` (see [`seal_onto`]), which serde does not write.
    fn unsealed(text: &str) -> String {
        let opening = std::str::from_utf8(SEAL_OPENING).expect("ascii");
        match text.find(opening) {
            Some(at) => format!("{}{}", &text[..at], &text[at + opening.len() + 17..]),
            None => text.to_owned(),
        }
    }

    /// The tasks of `text`'s payload, as a replay reads them: whether they are sealed.
    fn sealed(text: &str) -> bool {
        let record = LogRecord::new(chrono::Utc::now(), STATE_ENTRY).with(FIELD, text);
        let payload = Deferred::deferred(&record)
            .expect("a payload")
            .expect("reads");
        let tasks = payload.tasks.expect("a change");
        assert_eq!(tasks.decoded().expect("decodes").sealed, tasks.sealed);
        tasks.sealed
    }

    /// A payload's tasks are sealed as logged, by either way of logging them (serialized, or the
    /// lines tasks.json was rendered with) and however long the list; any change to the bytes
    /// of the array, or to the sum, or a sum away from the array's end, unseals them.
    #[test]
    fn a_payloads_tasks_are_sealed_as_logged_and_unsealed_by_any_edit() {
        for n in [1, 3, 8192, 20_001] {
            let doc = doc((1..=n).map(|i| task(i, "Task")).collect());
            let (copied, by_position, lines) = whole_both_ways(&doc);
            let logged =
                String::from_utf8(by_position.encoded_with(&doc.tasks, |i| Some(&lines[i])))
                    .expect("utf-8");
            for text in [copied.encode(), logged] {
                assert!(sealed(&text), "{n} tasks: logged, sealed");
                let last = text.rfind("\"Task\"").expect("a title");
                let edited = format!("{}\"Tusk\"{}", &text[..last], &text[last + 6..]);
                assert!(!sealed(&edited), "{n} tasks: a title edited");
                let spread = text.replacen("[{", "[ {", 1);
                assert!(!sealed(&spread), "{n} tasks: the array spread out");
                let opening = std::str::from_utf8(SEAL_OPENING).expect("ascii");
                let at = text.find(opening).expect("a seal") + opening.len();
                let digit = if &text[at..=at] == "0" { "1" } else { "0" };
                let other = format!("{}{digit}{}", &text[..at], &text[at + 1..]);
                assert!(!sealed(&other), "{n} tasks: another sum");
                assert!(!sealed(&unsealed(&text)), "{n} tasks: no sum");
            }
        }
        // A change that puts nothing is not sealed: there is nothing to vouch for.
        let removal = Payload {
            seq: 2,
            base: Base::default(),
            tasks: Some(TasksChange {
                removed: vec![TaskId::from_number(1)],
                ..TasksChange::default()
            }),
            project: None,
        };
        assert!(!sealed(&removal.encode()));
    }

    #[test]
    fn a_diff_applied_to_the_old_document_gives_the_new_one() {
        let a = doc(vec![task(1, "one"), task(2, "two"), task(3, "three")]);
        round_trip(&a, &a);
        round_trip(
            &a,
            &doc(vec![task(1, "one"), task(2, "TWO"), task(3, "three")]),
        );
        round_trip(
            &a,
            &doc(vec![task(1, "one"), task(3, "three"), task(4, "four")]),
        );
        round_trip(&a, &doc(vec![task(3, "three"), task(1, "one")]));
        round_trip(
            &a,
            &doc(vec![
                task(1, "ONE"),
                task(2, "two"),
                task(3, "three"),
                task(4, "four"),
            ]),
        );
        round_trip(
            &a,
            &doc(vec![
                task(1, "one"),
                task(2, "two"),
                task(3, "three"),
                task(2, "dup"),
            ]),
        );
        round_trip(&a, &doc(vec![task(1, "one"), task(1, "dup")]));
        let mut top = a.clone();
        top.completions_since_checkpoint = 4;
        round_trip(&a, &top);
        round_trip(&doc(vec![]), &a);
        round_trip(&a, &doc(vec![]));
    }

    #[test]
    fn the_marker_is_added_as_a_last_field_and_taken_back() {
        let bytes = serde_json::to_vec_pretty(&serde_json::json!({"a": 1})).expect("json");
        let marked = with_marker(bytes, 7);
        assert_eq!(
            String::from_utf8_lossy(&marked),
            "{\n  \"a\": 1,\n  \"log_seq\": 7\n}"
        );
        let marked = with_marker(b"{\n  \"a\": 1\n}\n".to_vec(), 8);
        let mut value: Map<String, Value> = serde_json::from_slice(&marked).expect("valid JSON");
        assert_eq!(take_marker(&mut value), 8);
        assert_eq!(value.len(), 1);
    }
}
