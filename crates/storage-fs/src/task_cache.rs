//! The binary read cache of tasks.json: `.tasks.json.cache` beside it, the task list in a compact
//! binary form that decodes several times faster than the JSON parses, so that a read-only
//! command (`task next`, `status`, the SessionStart hook) on a large store skips JSON entirely.
//!
//! The cache is keyed by the identity of the tasks.json it was made from (the validation stamp's
//! key: inode, size, modification time), and is trusted only when that key is the identity of
//! the tasks.json being read. A file stamped as cairn's own is keyed by its identity alone; a
//! file another tool wrote is cached only once a read has validated it in full, under its
//! identity and a word that says so, so that the two can never be taken for each other. Any change to tasks.json
//! — by cairn, another tool, an editor, a restore — changes its identity and makes the cache
//! stale. The payload carries its length and a checksum: a truncated, garbled or foreign file is
//! not trusted either. A cache that is not trusted is ignored (the JSON is read instead) and
//! replaced; losing it only costs time. It is overwritten in place (see [`write`]) and never
//! fsynced: it is never the only copy of anything. A writer finds the tasks a change touched by
//! comparing their encodings before and after it ([`Encoded`]) — only those of the tasks the
//! change was handed, when the list says which ([`Encoded::remade`]) — and writes the new
//! encoding as the cache.
//!
//! The payload is the document's top-level fields, each task's encoding, then the length of each
//! task's encoding: with those lengths a reader finds every task at once, and decodes (and a
//! writer encodes) the list on every core ([`parallel`]).

use std::path::{Path, PathBuf};

use cairn_domain::project::{
    Exact, Level, Minutes, Priority, Task, TaskDoc, TaskId, TaskList, TaskStatus,
};
use cairn_domain::time::Timestamp;
use cairn_lease::Contents;
use serde_json::{Map, Value};

use crate::parallel;

const MAGIC: &[u8] = b"cairn tasks.json cache v4\n";

/// Below this many tasks a thread decodes or encodes for less than it costs (see
/// [`parallel::in_parts`]).
const PER_THREAD: usize = 2048;

/// How many tasks a decoding thread takes at a time (see [`parallel::collect_from_both_ends`]):
/// about a tenth of a millisecond of work.
const DECODE_CHUNK: usize = 256;

/// Where the cache of a project's tasks.json lives (in the project directory).
pub(crate) fn path(project_dir: &Path) -> PathBuf {
    project_dir.join(".tasks.json.cache")
}

/// A task list in the cache's encoding, with where each task's encoding lies: either a cache as it
/// was read, or a list just encoded ([`Encoded::of`]). A writer compares the two, task by task,
/// to find what a change touched, instead of keeping a copy of the list it read; the new one is
/// then written as the cache as it is.
pub(crate) struct Encoded {
    /// Made or read into memory, or mapped (see `cairn_lease::Contents`).
    bytes: Contents,
    /// Where the payload (what is written after the cache's header) starts in `bytes`.
    payload: usize,
    spans: Vec<(usize, usize)>,
}

impl Encoded {
    /// `doc` with its marker `seq`, encoded. `None` only if a field cannot be encoded, which no
    /// list cairn reads or builds has.
    pub(crate) fn of(doc: &TaskDoc, seq: u64) -> Option<Self> {
        encode_doc(doc, seq)
    }

    /// `doc`, the list `self` encodes after a change that touched only the tasks at `touched`
    /// (ascending, as `TaskList::touched_since` gives them), with its marker `seq`: those tasks
    /// and the top encoded again — [`Remade::splice`] then copies every other task's encoding
    /// from `self` around them. With, for each task, whether it is exactly the task at its
    /// position in `self`, as [`Self::unchanged_since`] would say. `None` if a field cannot be
    /// encoded.
    pub(crate) fn remade(
        &self,
        doc: &TaskDoc,
        seq: u64,
        touched: &[usize],
    ) -> Option<(Remade, Vec<bool>)> {
        // The untouched tasks are copied in runs, so their encodings must lie end to end, as every
        // encoding this module makes them.
        if self.spans.windows(2).any(|w| w[0].1 != w[1].0) {
            return None;
        }
        let tasks = &doc.tasks;
        let kept = self.len().min(tasks.len());
        let positions = touched
            .iter()
            .copied()
            .filter(|&i| i < kept)
            .chain(kept..tasks.len());
        let mut enc = Enc(Vec::new());
        encode_top(&mut enc, doc, seq)?;
        let top = enc.0.len();
        let mut remade = Vec::new();
        let mut unchanged = vec![true; tasks.len()];
        for i in positions {
            let start = enc.0.len();
            encode_task(&mut enc, tasks.get(i)?)?;
            let span = (start, enc.0.len());
            unchanged[i] = self.task(i) == enc.0.get(span.0..span.1);
            remade.push((i, span));
        }
        let remade = Remade {
            bytes: enc.0,
            top,
            tasks: remade,
            len: tasks.len(),
        };
        Some((remade, unchanged))
    }

    /// How many tasks.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// The encoding of the `i`-th task: equal encodings are equal tasks.
    pub(crate) fn task(&self, i: usize) -> Option<&[u8]> {
        let &(start, end) = self.spans.get(i)?;
        self.bytes.get(start..end)
    }

    /// For each task, whether it is exactly the task at the same position in `before`.
    pub(crate) fn unchanged_since(&self, before: &Encoded) -> Vec<bool> {
        (0..self.len())
            .map(|i| {
                before
                    .task(i)
                    .is_some_and(|task| Some(task) == self.task(i))
            })
            .collect()
    }

    /// The encoded id of the `i`-th task (its first field): equal bytes are the same id.
    pub(crate) fn id(&self, i: usize) -> Option<&[u8]> {
        let mut dec = Dec {
            bytes: self.task(i)?,
        };
        let len = usize::try_from(dec.u32()?).ok()?;
        dec.take(len)
    }

    /// The `i`-th task, decoded.
    pub(crate) fn decoded(&self, i: usize) -> Option<Task> {
        decode_at(&self.bytes, *self.spans.get(i)?)
    }

    /// Every task, decoded.
    pub(crate) fn tasks(&self) -> Option<Vec<Task>> {
        decode_tasks(&self.bytes, &self.spans)
    }
}

/// The cached task list and its `log_seq` marker (taken out of the list, as a read of tasks.json
/// does), if the cache is of exactly the tasks.json whose identity is `key`, and whole; with
/// `keep`, also the cache's encoding (see [`Encoded`]).
///
/// A reader of a cache big enough to be decoded on several cores has its helper threads started
/// before it is read (see [`parallel::prepare_then_collect`]): on a virtual machine a new thread
/// can take longer to first run than the read takes. A writer (`keep`) does not: it reads
/// tasks.json on a thread of its own meanwhile (see `project_store::read_task_doc`), and a helper
/// spinning beside the two would take that thread's core (no faster, measured).
pub(crate) fn read(path: &Path, key: &str, keep: bool) -> Option<(TaskDoc, u64, Option<Encoded>)> {
    use std::io::{Read, Seek};
    let mut file = std::fs::File::open(path).ok()?;
    let size = usize::try_from(file.metadata().ok()?.len()).ok()?;
    let prepare = move || {
        // The header first: a cache of another file (after a `git pull`, a write by another
        // tool) is not read through — at 100,000 tasks, 30 MB.
        let mut bytes = Vec::with_capacity(if keep { size } else { 0 });
        let head = MAGIC.len() + key.len() + 1;
        (&mut file).take(head as u64).read_to_end(&mut bytes).ok()?;
        if key_of(&bytes) != Some(key) {
            return None;
        }
        if keep {
            file.read_to_end(&mut bytes).ok()?;
            return Located::of(bytes.into(), key);
        }
        // A reader decodes the bytes and lets them go: mapped, they are the page cache's own
        // pages — no fresh memory to zero and fill (3 MB at 10,000 tasks). A writer keeps them
        // (its `Encoded`) while it overwrites this very file, so it reads them.
        file.rewind().ok()?;
        Located::of(Contents::of_file(file).ok()?, key)
    };
    let (read, tasks, whole) = parallel::prepare_then_collect(
        !keep && size >= EARLY_HELPERS_FROM,
        prepare,
        |read| &read.spans,
        DECODE_CHUNK,
        2 * PER_THREAD,
        |read, &span| decode_at(&read.bytes, span),
        // Checked beside the decoding, which reads untrusted bytes safely: a cache that fails it
        // is thrown away with whatever was decoded from it.
        |read| checksum(key, &read.bytes[read.payload..]) == read.sum,
    )?;
    if !whole {
        return None;
    }
    let Located {
        bytes,
        payload,
        spans,
        seq,
        top,
        ..
    } = read;
    let doc = TaskDoc {
        tasks: TaskList::as_read(tasks?),
        ..top
    };
    let encoded = keep.then_some(Encoded {
        bytes,
        payload,
        spans,
    });
    Some((doc, seq, encoded))
}

/// The read cache whatever tasks.json it was made from — its key is not checked, its checksum is:
/// the list cairn last validated, wrote or read in full for this project. A tasks.json another tool
/// wrote (a `git pull`, a merge, a copy of the store) is mostly those same tasks, each written as
/// cairn writes it, which a reader can then take from here instead of parsing and validating
/// them (see `project_store::Known`). `None` when there is no whole cache.
///
/// Mapped (see `cairn_lease::Contents`): what it is read for is done before the cache is written
/// again, and 30 MB at 100,000 tasks are then the page cache's pages, not fresh memory. (Were it
/// still mapped, the write would make the cache anew: see [`write`].)
pub(crate) fn read_any(path: &Path) -> Option<Encoded> {
    let bytes = Contents::of(path).ok()?;
    let key = key_of(&bytes)?.to_owned();
    let read = Located::of(bytes, &key)?;
    (checksum(&key, &read.bytes[read.payload..]) == read.sum).then(|| Encoded {
        bytes: read.bytes,
        payload: read.payload,
        spans: read.spans,
    })
}

/// The key in a cache's header, if `bytes` begin with one.
fn key_of(bytes: &[u8]) -> Option<&str> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let newline = memchr::memchr(b'\n', rest)?;
    std::str::from_utf8(&rest[..newline]).ok()
}

/// A cache of this many bytes or more holds enough tasks (at a few hundred bytes each) to be
/// decoded on several cores: its helpers are started before it is read.
const EARLY_HELPERS_FROM: usize = 2 * PER_THREAD * 128;

/// A cache file as read, its header checked against the key and its tasks located; not yet
/// decoded or checksummed.
struct Located {
    bytes: Contents,
    /// Where the payload (what the checksum covers) starts in `bytes`.
    payload: usize,
    sum: u64,
    spans: Vec<(usize, usize)>,
    seq: u64,
    top: TaskDoc,
}

impl Located {
    fn of(bytes: Contents, key: &str) -> Option<Self> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let newline = rest.iter().position(|&b| b == b'\n')?;
        if &rest[..newline] != key.as_bytes() {
            return None;
        }
        let mut dec = Dec {
            bytes: &rest[newline + 1..],
        };
        let sum = dec.u64()?;
        let len = usize::try_from(dec.u64()?).ok()?;
        if dec.bytes.len() != len {
            return None;
        }
        let payload = bytes.len() - len;
        let seq = dec.u64()?;
        let (top, count) = decode_top(&mut dec)?;
        // The table of lengths ends the payload; the tasks lie between the top and the table.
        let table = dec.bytes.len().checked_sub(count.checked_mul(4)?)?;
        let tasks_at = bytes.len() - dec.bytes.len();
        let mut spans = Vec::with_capacity(count);
        let mut at = tasks_at;
        for len in dec.bytes[table..].chunks_exact(4) {
            let end =
                at.checked_add(usize::try_from(u32::from_le_bytes(len.try_into().ok()?)).ok()?)?;
            spans.push((at, end));
            at = end;
        }
        if at != tasks_at + table {
            return None;
        }
        Some(Self {
            bytes,
            payload,
            sum,
            spans,
            seq,
            top,
        })
    }
}

/// Replaces the cache with `encoded` (see [`Encoded::of`]), keyed by `key` (the identity of the
/// tasks.json it is). Best effort: a failure leaves no cache, or a stale or damaged one, which is
/// not trusted.
///
/// The file is overwritten in place rather than replaced by rename: replacing it unlinks the
/// old file, which costs several times the write on a large store. A reader racing the write
/// may see a mix of old and new bytes; the length and the checksum (over the key and the
/// payload) make it ignore them. A reader that maps the file holds a read lease on it, which an
/// open to write would wait on: the file is then unlinked — the reader keeps its pages — and
/// made anew.
pub(crate) fn write(path: &Path, key: &str, encoded: &Encoded) {
    use std::io::Write;
    let payload = &encoded.bytes[encoded.payload..];
    let mut head = Vec::with_capacity(MAGIC.len() + key.len() + 17);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(key.as_bytes());
    head.push(b'\n');
    head.extend_from_slice(&checksum(key, payload).to_le_bytes());
    head.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let fresh = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
    };
    let opened = match cairn_lease::open_to_overwrite(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => fresh(),
        // A reader maps it (`WouldBlock`), or this user cannot write it (a file `sudo cairn`
        // left, say): made anew — a reader keeps its pages.
        Err(_) => {
            let _ = std::fs::remove_file(path);
            fresh()
        }
        opened => opened,
    };
    // Another process made it anew meanwhile: its cache stands.
    let Ok(mut file) = opened else {
        return;
    };
    let written = (|| {
        file.write_all(&head)?;
        file.write_all(payload)?;
        file.set_len((head.len() + payload.len()) as u64)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
}

/// A fast 64-bit checksum of `key` and `payload`: it guards against damage and torn writes, not
/// against an adversary — whoever can write the cache can write tasks.json.
pub(crate) fn checksum(key: &str, payload: &[u8]) -> u64 {
    let mut sum = Checksum::new(key, payload.len() as u64);
    sum.blocks(payload);
    sum.end(payload)
}

/// [`checksum`] of `len` bytes read from `reader` a megabyte at a time: the same sum, without
/// the bytes in memory at once (`doctor --full` sums checkpoints of 48 MB it then drops).
pub(crate) fn checksum_read(
    key: &str,
    len: u64,
    mut reader: impl std::io::Read,
) -> std::io::Result<u64> {
    // Whole blocks until the last read: the remainder is summed byte by byte at the end.
    let mut buffer = vec![0; 32 << 15];
    let mut sum = Checksum::new(key, len);
    let mut filled = 0;
    loop {
        let read = reader.read(&mut buffer[filled..])?;
        filled += read;
        if read == 0 || filled == buffer.len() {
            let whole = filled - filled % 32;
            sum.blocks(&buffer[..whole]);
            if read == 0 {
                return Ok(sum.end(&buffer[whole..filled]));
            }
            buffer.copy_within(whole..filled, 0);
            filled -= whole;
        }
    }
}

/// Four lanes of eight bytes: one multiply chain over the whole payload was most of the
/// checksum's cost.
struct Checksum {
    lanes: [u64; 4],
}

impl Checksum {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    fn mix(h: u64, w: u64) -> u64 {
        (h ^ w).wrapping_mul(Self::K).rotate_left(29)
    }

    fn new(key: &str, len: u64) -> Self {
        let mut sum = Self {
            lanes: [len ^ Self::K, 1, 2, 3],
        };
        sum.blocks(key.as_bytes());
        sum.bytes(key.as_bytes());
        sum
    }

    /// Sums the whole 32-byte blocks of `bytes`.
    fn blocks(&mut self, bytes: &[u8]) {
        for block in bytes.chunks_exact(32) {
            for (lane, word) in self.lanes.iter_mut().zip(block.chunks_exact(8)) {
                *lane = Self::mix(*lane, u64::from_le_bytes(word.try_into().unwrap_or([0; 8])));
            }
        }
    }

    /// Sums the bytes after the whole blocks of `bytes`, one at a time.
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes.chunks_exact(32).remainder() {
            self.lanes[0] = Self::mix(self.lanes[0], u64::from(b));
        }
    }

    /// The sum, once the payload's whole blocks are summed; `rest` holds (at least) its last,
    /// partial block.
    fn end(mut self, rest: &[u8]) -> u64 {
        self.bytes(rest);
        let h = self.lanes.into_iter().fold(0, Self::mix);
        h ^ (h >> 32)
    }
}

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(u32::try_from(s.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(s.as_bytes());
    }
    /// Presence as one byte, then the value.
    fn opt<T>(&mut self, v: Option<T>, f: impl FnOnce(&mut Self, T)) {
        self.u8(u8::from(v.is_some()));
        if let Some(v) = v {
            f(self, v);
        }
    }
    fn strs<S: AsRef<str>>(&mut self, list: &[S]) {
        self.u32(u32::try_from(list.len()).unwrap_or(u32::MAX));
        for s in list {
            self.str(s.as_ref());
        }
    }
    fn time(&mut self, at: &Timestamp) {
        self.u64(at.timestamp() as u64);
        self.u32(at.timestamp_subsec_nanos());
    }
    fn index<T: PartialEq>(&mut self, all: &[T], v: &T) -> Option<()> {
        self.u8(u8::try_from(all.iter().position(|x| x == v)?).ok()?);
        Some(())
    }
    /// Fields another tool wrote, as JSON; nothing at all (length 0) in the common case.
    fn extra(&mut self, extra: &Map<String, Value>) -> Option<()> {
        if extra.is_empty() {
            self.str("");
        } else {
            self.str(&serde_json::to_string(extra).ok()?);
        }
        Some(())
    }
}

struct Dec<'a> {
    bytes: &'a [u8],
}

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<&'a str> {
        let len = usize::try_from(self.u32()?).ok()?;
        std::str::from_utf8(self.take(len)?).ok()
    }
    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_owned)
    }
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.u8()? {
            0 => Some(None),
            1 => f(self).map(Some),
            _ => None,
        }
    }
    fn list<T>(&mut self, mut f: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let len = usize::try_from(self.u32()?).ok()?;
        // Each element takes at least 4 bytes: a length that claims more is damage, not a reason
        // to allocate.
        if len > self.bytes.len() / 4 + 1 {
            return None;
        }
        // Sized once: collecting through `Option` would grow the vector by doubling.
        let mut list = Vec::with_capacity(len);
        for _ in 0..len {
            list.push(f(self)?);
        }
        Some(list)
    }
    /// A number of minutes as written: the common whole number without a JSON parser.
    fn minutes(&mut self) -> Option<Minutes> {
        let text = self.str()?;
        match text.parse::<u32>() {
            // `Minutes::from` makes the same JSON number as parsing the text would.
            Ok(whole) if !text.starts_with(['+', '0']) || text == "0" => Some(whole.into()),
            _ => serde_json::from_str(text).ok(),
        }
    }
    fn id(&mut self) -> Option<TaskId> {
        TaskId::try_from(self.str()?).ok()
    }
    fn time(&mut self) -> Option<Timestamp> {
        let secs = i64::try_from(self.u64()?).ok()?;
        Timestamp::from_timestamp(secs, self.u32()?)
    }
    fn index<T: Copy>(&mut self, all: &[T]) -> Option<T> {
        all.get(usize::from(self.u8()?)).copied()
    }
    fn extra(&mut self) -> Option<Map<String, Value>> {
        match self.str()? {
            "" => Some(Map::new()),
            json => match serde_json::from_str(json).ok()? {
                Exact(Value::Object(extra)) => Some(extra),
                Exact(_) => None,
            },
        }
    }
}

fn encode_doc(doc: &TaskDoc, seq: u64) -> Option<Encoded> {
    let tasks = &doc.tasks;
    let parts = parallel::in_parts(tasks, PER_THREAD, |part, start| {
        // The first part holds the top, and is made big enough for the rest.
        let capacity = parallel::part_capacity(tasks.len(), part.len(), start);
        let mut enc = Enc(Vec::with_capacity(capacity * 320 + 64));
        if start == 0 {
            encode_top(&mut enc, doc, seq)?;
        }
        let mut spans = Vec::with_capacity(capacity);
        for task in part {
            let start = enc.0.len();
            encode_task(&mut enc, task)?;
            spans.push((start, enc.0.len()));
        }
        Some((enc.0, spans))
    });
    let mut parts = parts.into_iter();
    let (mut bytes, mut spans) = parts.next()??;
    for part in parts {
        let (part, part_spans) = part?;
        let at = bytes.len();
        bytes.extend_from_slice(&part);
        spans.extend(part_spans.into_iter().map(|(s, e)| (at + s, at + e)));
    }
    close(bytes, spans)
}

/// The tasks a change may have touched, encoded again: what [`Remade::splice`] puts between the
/// unchanged encodings of the list as read to encode the list after the change.
pub(crate) struct Remade {
    /// The top's encoding, then each remade task's.
    bytes: Vec<u8>,
    top: usize,
    /// Each remade task's position in the list and span in `bytes`, ascending.
    tasks: Vec<(usize, (usize, usize))>,
    len: usize,
}

impl Remade {
    /// The list after the change, encoded: the remade tasks between runs of `before`'s
    /// encodings, copied as they are. `before` is the list [`Encoded::remade`] was called on.
    pub(crate) fn splice(&self, before: &Encoded) -> Option<Encoded> {
        let added = self.len.saturating_sub(before.len());
        let mut bytes =
            Vec::with_capacity(before.bytes.len() - before.payload + self.bytes.len() + 4 * added);
        bytes.extend_from_slice(&self.bytes[..self.top]);
        let mut spans = Vec::with_capacity(self.len);
        // Copies the untouched tasks `from..to` of `before` as one run.
        let copy_run =
            |bytes: &mut Vec<u8>, spans: &mut Vec<(usize, usize)>, from: usize, to: usize| {
                if from >= to {
                    return;
                }
                let (start, end) = (before.spans[from].0, before.spans[to - 1].1);
                let at = bytes.len();
                bytes.extend_from_slice(&before.bytes[start..end]);
                spans.extend(
                    before.spans[from..to]
                        .iter()
                        .map(|&(s, e)| (s - start + at, e - start + at)),
                );
            };
        let kept = before.len().min(self.len);
        let mut run = 0;
        for &(i, (start, end)) in &self.tasks {
            copy_run(&mut bytes, &mut spans, run, i.min(kept));
            let at = bytes.len();
            bytes.extend_from_slice(self.bytes.get(start..end)?);
            spans.push((at, bytes.len()));
            run = i + 1;
        }
        copy_run(&mut bytes, &mut spans, run, kept);
        if spans.len() != self.len {
            return None;
        }
        close(bytes, spans)
    }
}

/// The top-level fields of `doc`, with the marker `seq`, then how many tasks follow.
fn encode_top(enc: &mut Enc, doc: &TaskDoc, seq: u64) -> Option<()> {
    let TaskDoc {
        version,
        project_id,
        tasks,
        completions_since_checkpoint,
        extra,
    } = doc;
    enc.u64(seq);
    enc.u32(*version);
    enc.opt(project_id.as_ref(), |e, id| e.str(id.as_str()));
    enc.u32(*completions_since_checkpoint);
    enc.extra(extra)?;
    enc.u32(u32::try_from(tasks.len()).ok()?);
    Some(())
}

/// The encoded top and tasks, ended by the table of each task's length.
fn close(mut bytes: Vec<u8>, spans: Vec<(usize, usize)>) -> Option<Encoded> {
    bytes.reserve(spans.len() * 4);
    for &(start, end) in &spans {
        bytes.extend_from_slice(&u32::try_from(end - start).ok()?.to_le_bytes());
    }
    Some(Encoded {
        bytes: bytes.into(),
        payload: 0,
        spans,
    })
}

/// The document's top-level fields, with no tasks yet, and how many tasks follow.
fn decode_top(dec: &mut Dec<'_>) -> Option<(TaskDoc, usize)> {
    let version = dec.u32()?;
    let project_id = dec.opt(|d| d.string()?.try_into().ok())?;
    let completions_since_checkpoint = dec.u32()?;
    let extra = dec.extra()?;
    let count = usize::try_from(dec.u32()?).ok()?;
    let top = TaskDoc {
        version,
        project_id,
        tasks: TaskList::new(),
        completions_since_checkpoint,
        extra,
    };
    Some((top, count))
}

/// The tasks encoded at `spans` of `bytes`, each span exactly one task, decoded on every core.
fn decode_tasks(bytes: &[u8], spans: &[(usize, usize)]) -> Option<Vec<Task>> {
    parallel::collect_from_both_ends(spans, DECODE_CHUNK, 2 * PER_THREAD, |&span| {
        decode_at(bytes, span)
    })
}

/// The one task encoded at `bytes[start..end]`, exactly.
fn decode_at(bytes: &[u8], (start, end): (usize, usize)) -> Option<Task> {
    let mut dec = Dec {
        bytes: bytes.get(start..end)?,
    };
    let task = decode_task(&mut dec)?;
    dec.bytes.is_empty().then_some(task)
}

fn encode_task(enc: &mut Enc, task: &Task) -> Option<()> {
    // Destructured without `..`: a field added to `Task` must be added here (and below), or the
    // build fails.
    let Task {
        id,
        title,
        level,
        status,
        priority,
        dependencies,
        completion_criteria,
        created_at,
        description,
        phase_id,
        parent_id,
        subtasks,
        estimate_minutes,
        actual_minutes,
        started_at,
        completed_at,
        blocked_reason,
        research_file,
        tags,
        external_id,
        stale_count,
        claimed_by,
        lease_expires_at,
        extra,
    } = task;
    enc.str(id.as_str());
    enc.str(title);
    enc.index(Level::ALL, level)?;
    enc.index(TaskStatus::ALL, status)?;
    enc.index(Priority::ALL, priority)?;
    enc.strs(&ids(dependencies));
    enc.strs(completion_criteria);
    enc.time(created_at);
    enc.opt(description.as_deref(), Enc::str);
    enc.opt(phase_id.as_deref(), Enc::str);
    enc.opt(parent_id.as_ref(), |e, id| e.str(id.as_str()));
    enc.opt(subtasks.as_deref(), |e, list| e.strs(&ids(list)));
    enc.opt(*estimate_minutes, Enc::u32);
    // Kept as the JSON number it was written as (`12.5`, `12.0`).
    let minutes = actual_minutes
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .ok()?;
    enc.opt(minutes.as_deref(), Enc::str);
    enc.opt(started_at.as_ref(), Enc::time);
    enc.opt(completed_at.as_ref(), Enc::time);
    enc.opt(blocked_reason.as_deref(), Enc::str);
    enc.opt(research_file.as_deref(), Enc::str);
    enc.opt(tags.as_deref(), |e, list| e.strs(list));
    enc.opt(external_id.as_deref(), Enc::str);
    enc.opt(*stale_count, Enc::u32);
    enc.opt(claimed_by.as_deref(), Enc::str);
    enc.opt(lease_expires_at.as_ref(), Enc::time);
    enc.extra(extra)
}

fn ids(list: &[TaskId]) -> Vec<&str> {
    list.iter().map(TaskId::as_str).collect()
}

fn decode_task(dec: &mut Dec<'_>) -> Option<Task> {
    Some(Task {
        id: dec.id()?,
        title: dec.string()?,
        level: dec.index(Level::ALL)?,
        status: dec.index(TaskStatus::ALL)?,
        priority: dec.index(Priority::ALL)?,
        dependencies: dec.list(Dec::id)?,
        completion_criteria: dec.list(Dec::string)?,
        created_at: dec.time()?,
        description: dec.opt(Dec::string)?,
        phase_id: dec.opt(Dec::string)?,
        parent_id: dec.opt(Dec::id)?,
        subtasks: dec.opt(|d| d.list(Dec::id))?,
        estimate_minutes: dec.opt(Dec::u32)?,
        actual_minutes: dec.opt(Dec::minutes)?,
        started_at: dec.opt(Dec::time)?,
        completed_at: dec.opt(Dec::time)?,
        blocked_reason: dec.opt(Dec::string)?,
        research_file: dec.opt(Dec::string)?,
        tags: dec.opt(|d| d.list(Dec::string))?,
        external_id: dec.opt(Dec::string)?,
        stale_count: dec.opt(Dec::u32)?,
        claimed_by: dec.opt(Dec::string)?,
        lease_expires_at: dec.opt(Dec::time)?,
        extra: dec.extra()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(n: usize) -> TaskDoc {
        let tasks = (1..=n)
            .map(|i| {
                serde_json::from_value(serde_json::json!({
                    "id": format!("T-{i:03}"), "title": "t".repeat(i % 97),
                    "level": "task", "status": "PENDING", "priority": "LOW",
                    "dependencies": if i > 1 { vec![format!("T-{:03}", i - 1)] } else { vec![] },
                    "completion_criteria": ["criterion"],
                    "created_at": "2026-05-06T08:00:00Z",
                    "description": (i % 3 == 0).then(|| "d".repeat(i % 1500)),
                }))
                .expect("a task")
            })
            .collect();
        let mut doc = TaskDoc::new("demo".to_owned().try_into().expect("id"));
        doc.tasks = tasks;
        doc
    }

    /// A list long enough to be encoded and decoded in parts (on a machine with more than one
    /// core) reads back whole and in order, and its encoding is the one a single part makes.
    #[test]
    fn a_list_split_across_cores_reads_back_as_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cache");
        let long = doc(3 * PER_THREAD + 17);
        let encoded = Encoded::of(&long, 7).expect("encodes");
        assert_eq!(encoded.len(), long.tasks.len());
        let mut one_part = Enc(Vec::new());
        for (i, task) in long.tasks.iter().enumerate() {
            one_part.0.clear();
            encode_task(&mut one_part, task).expect("encodes");
            assert_eq!(encoded.task(i), Some(&one_part.0[..]), "task {i}");
        }
        write(&path, "k", &encoded);
        let (read_back, seq, kept) = read(&path, "k", true).expect("a whole cache");
        assert_eq!((&read_back, seq), (&long, 7));
        let kept = kept.expect("kept");
        assert_eq!(kept.unchanged_since(&encoded), vec![true; long.tasks.len()]);
        assert_eq!(kept.tasks().expect("decodes"), long.tasks);
        // A reader's helpers start before the file is read (it is big enough), and find the same.
        assert!(std::fs::metadata(&path).expect("cache").len() >= EARLY_HELPERS_FROM as u64);
        let (read_back, seq, kept) = read(&path, "k", false).expect("a whole cache");
        assert_eq!((&read_back, seq, kept.is_none()), (&long, 7, true));
        assert!(
            read(&path, "other key", false).is_none(),
            "another file's cache"
        );
        // One byte garbled in the middle: the checksum beside the decoding throws it all away.
        let mut bytes = std::fs::read(&path).expect("cache");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x20;
        std::fs::write(&path, &bytes).expect("write");
        assert!(read(&path, "k", false).is_none(), "a garbled cache");
        assert!(
            read(&path, "k", true).is_none(),
            "a garbled cache, for a writer"
        );
    }

    /// A reader that maps the cache (under a read lease) neither keeps a writer waiting nor sees
    /// its bytes change: the writer makes the file anew, and the next read finds the new list.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_cache_a_reader_maps_is_made_anew_without_waiting() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cache");
        let (old, new) = (doc(5), doc(9));
        write(&path, "old", &Encoded::of(&old, 1).expect("encodes"));
        let (read_back, _, _) = read(&path, "old", false).expect("a whole cache");
        assert_eq!(read_back, old);
        let mapped = cairn_lease::Contents::of(&path).expect("contents");
        assert!(mapped.is_mapped());
        let before = mapped.to_vec();
        let started = std::time::Instant::now();
        write(&path, "new", &Encoded::of(&new, 2).expect("encodes"));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "the write waited for the reader"
        );
        assert_eq!(&*mapped, &before[..], "the reader's bytes changed");
        let (read_back, seq, _) = read(&path, "new", false).expect("the new cache");
        assert_eq!((read_back, seq), (new, 2));
        drop(mapped);
        // Nobody maps it now: overwritten in place, as a writer does.
        let inode = |path: &Path| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(path).expect("cache").ino()
        };
        let kept = inode(&path);
        write(&path, "old", &Encoded::of(&old, 1).expect("encodes"));
        assert_eq!(inode(&path), kept);
        assert_eq!(read(&path, "old", true).expect("whole").0, old);
    }

    /// A cache this user cannot open to write (one `sudo cairn` left) is replaced, not kept
    /// stale for good: every read would then parse tasks.json. (Root writes any file: run as
    /// another user, it checks.)
    #[cfg(unix)]
    #[test]
    fn a_cache_this_user_cannot_write_is_replaced() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cache");
        write(&path, "old", &Encoded::of(&doc(5), 1).expect("encodes"));
        if std::fs::metadata(&path).expect("cache").uid() == 0 {
            return;
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        let new = doc(9);
        write(&path, "new", &Encoded::of(&new, 2).expect("encodes"));
        let (read_back, seq, _) = read(&path, "new", false).expect("the stale cache was replaced");
        assert_eq!((read_back, seq), (new, 2));
    }

    /// A file summed as it is read, in reads of any size, sums as its bytes in memory do.
    #[test]
    fn a_sum_read_in_pieces_is_the_sum_of_the_bytes() {
        /// Hands out at most `step` bytes per read.
        struct Pieces<'a> {
            bytes: &'a [u8],
            step: usize,
        }
        impl std::io::Read for Pieces<'_> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let n = self.step.min(out.len()).min(self.bytes.len());
                out[..n].copy_from_slice(&self.bytes[..n]);
                self.bytes = &self.bytes[n..];
                Ok(n)
            }
        }
        let all: Vec<u8> = (0..(3 << 20) + 77)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect();
        let mega = 32 << 15;
        for len in [0, 1, 31, 32, 33, 1000, mega - 1, mega, mega + 1, all.len()] {
            for key in ["", "k", "a key of thirty-three bytes, yes!"] {
                let bytes = &all[..len];
                for step in [7_777, usize::MAX] {
                    let read = checksum_read(key, len as u64, Pieces { bytes, step });
                    assert_eq!(
                        read.ok(),
                        Some(checksum(key, bytes)),
                        "{len} {key:?} {step}"
                    );
                }
            }
        }
    }

    /// A table of lengths that does not add up to the tasks between it and the top, or that cuts
    /// a task short, is damage even under a good checksum.
    #[test]
    fn a_table_that_lies_is_not_trusted() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cache");
        let encoded = Encoded::of(&doc(5), 1).expect("encodes");
        let table = encoded.bytes.len() - 5 * 4;
        let lie = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut payload = encoded.bytes.to_vec();
            edit(&mut payload);
            let mut file = MAGIC.to_vec();
            file.extend_from_slice(b"k\n");
            file.extend_from_slice(&checksum("k", &payload).to_le_bytes());
            file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
            file.extend_from_slice(&payload);
            std::fs::write(&path, file).expect("write");
            read(&path, "k", false).is_none()
        };
        assert!(!lie(&|_| {}), "the honest file reads");
        // One byte moved from the second task's length to the first's: the sum holds, but each
        // task then decodes from the wrong bytes.
        assert!(lie(&|p| {
            p[table] += 1;
            p[table + 4] -= 1;
        }));
        assert!(lie(&|p| p[table + 8] += 1), "the lengths overrun the tasks");
        assert!(lie(&|p| p[table + 8] -= 1), "the lengths fall short");
        assert!(lie(&|p| p.truncate(table + 2)), "a cut table");
        assert!(lie(&|p| p[table + 3] = 0xFF), "a length past everything");
    }

    proptest::proptest! {
        /// A list encoded after a change from the tasks it touched and the encoding as read is
        /// byte for byte the list encoded whole, and says the same of which tasks changed —
        /// whether the encoding as read came from the cache file or was just made, and whether a
        /// touched task really changed, changed back, or was added.
        #[test]
        fn a_list_encoded_from_its_touched_tasks_is_the_list_encoded_whole(
            n in 0usize..200,
            edits in proptest::collection::vec((0usize..220, 0u8..3), 0..12),
            added in 0usize..3,
            from_file: bool,
        ) {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("cache");
            let mut doc = self::doc(n);
            doc.tasks = TaskList::as_read(doc.tasks.into_vec());
            let before = Encoded::of(&doc, 3).expect("encodes");
            let before = if from_file {
                write(&path, "k", &before);
                read(&path, "k", true).expect("a whole cache").2.expect("kept")
            } else {
                before
            };
            let read_mark = doc.tasks.read().expect("as read");
            for (at, how) in edits {
                let Some(task) = doc.tasks.get_mut(at) else { continue };
                match how {
                    0 => task.title.push('!'),
                    1 => task.status = TaskStatus::InProgress,
                    _ => task.title = task.title.clone(), // touched, not changed
                }
            }
            let longer = self::doc(n + added);
            doc.tasks.extend(longer.tasks.into_vec().into_iter().skip(n));
            let touched = doc.tasks.touched_since(read_mark).expect("not reshaped");
            let (remade, unchanged) = before.remade(&doc, 9, &touched).expect("encodes");
            let after = remade.splice(&before).expect("splices");
            let whole = Encoded::of(&doc, 9).expect("encodes");
            proptest::prop_assert_eq!(&after.bytes[..], &whole.bytes[..]);
            proptest::prop_assert_eq!(&after.spans, &whole.spans);
            proptest::prop_assert_eq!(unchanged, whole.unchanged_since(&before));
        }
    }
}
