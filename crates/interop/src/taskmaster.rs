//! Task Master's `.taskmaster/tasks/tasks.json` (documented in the claude-task-master repository,
//! `docs/task-structure.md` and `docs/tutorial.md`; tags in `docs/command-reference.md`). The
//! tagged form holds one task list per tag, `{"master": {"tasks": [...], "metadata": {...}}}`;
//! the legacy form is one untagged list, `{"tasks": [...]}`. A task:
//!
//! ```json
//! {"id": 1, "title": "…", "description": "…", "details": "…", "testStrategy": "…",
//!  "status": "pending", "priority": "high", "dependencies": [2],
//!  "subtasks": [{"id": 1, "title": "…", "status": "done", "dependencies": [2, "3.1"]}]}
//! ```
//!
//! External ids: a task is `5`, its subtask `5.2` (Task Master's own spelling); tasks of a tag
//! other than `master` are `tag:5` and carry the tag as a cairn tag. A subtask's numeric
//! dependency names a sibling subtask, a string one (`"3.1"`, `"4"`) a task by full id; a task's
//! dependency is a task id, or a full subtask id as a string.
//!
//! | Task Master | cairn | back |
//! |---|---|---|
//! | `pending` | PENDING | PENDING, IN_RESEARCH, RESEARCHED → `pending` |
//! | `deferred` | PENDING | |
//! | `in-progress` | IN_PROGRESS | IN_PROGRESS → `in-progress` |
//! | `review` | VALIDATING | VALIDATING → `review` |
//! | `done` | COMPLETE | COMPLETE → `done` |
//! | `blocked` | BLOCKED | BLOCKED → `blocked` |
//! | `cancelled` | CANCELLED | CANCELLED → `cancelled` |
//!
//! Priorities `high`, `medium`, `low` are HIGH, MEDIUM, LOW (`critical` is read as CRITICAL and
//! written as `high`). Task Master nests one level: on export, a task deeper than a subtask is
//! written as a subtask of its top-level ancestor.

use std::collections::{HashMap, HashSet};

use cairn_domain::project::import::{Incoming, IncomingTask};
use cairn_domain::project::{Level, Priority, Task, TaskDoc, TaskId, TaskStatus};
use serde_json::{Map, Value, json};

use crate::Failed;
use crate::common::{export_key, json_error, kind, object, opt_string, string, tree, unknown};

pub const SOURCE: &str = "taskmaster";
const DEFAULT_TAG: &str = "master";

const STATUSES: [&str; 7] = [
    "pending",
    "in-progress",
    "review",
    "done",
    "blocked",
    "deferred",
    "cancelled",
];

fn status(text: &str, at: &str) -> Result<TaskStatus, Failed> {
    Ok(match text {
        "pending" | "deferred" => TaskStatus::Pending,
        "in-progress" => TaskStatus::InProgress,
        "review" => TaskStatus::Validating,
        "done" => TaskStatus::Complete,
        "blocked" => TaskStatus::Blocked,
        "cancelled" => TaskStatus::Cancelled,
        other => return Err(unknown(format!("{at}.status"), "status", other, &STATUSES)),
    })
}

fn priority(text: &str, at: &str) -> Result<Priority, Failed> {
    Ok(match text {
        "critical" => Priority::Critical,
        "high" => Priority::High,
        "medium" => Priority::Medium,
        "low" => Priority::Low,
        other => {
            return Err(unknown(
                format!("{at}.priority"),
                "priority",
                other,
                &["high", "medium", "low"],
            ));
        }
    })
}

/// An id as Task Master writes it: a whole number, or a string (`"3"`, `"3.1"`).
fn id_text(value: Option<&Value>, at: &str) -> Result<String, Failed> {
    match value {
        Some(Value::Number(n)) if n.is_u64() => Ok(n.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        Some(other) => Err((
            format!("{at}.id"),
            format!("expected a number or a string, found {}", kind(other)),
        )),
        None => Err((format!("{at}.id"), "is missing".to_owned())),
    }
}

pub fn parse(text: &str) -> Result<Incoming, Failed> {
    let tasks = match typed::tasks(text) {
        Some(tasks) => tasks,
        None => tasks_of_tree(text)?,
    };
    Ok(Incoming::Foreign {
        source: SOURCE.to_owned(),
        tasks,
    })
}

/// The tasks of the file, read as a JSON tree whose every field is checked: what is wrong is said
/// with where it is.
fn tasks_of_tree(text: &str) -> Result<Vec<IncomingTask>, Failed> {
    let root: Value = serde_json::from_str(text).map_err(|e| json_error(&e, ""))?;
    let root = object(&root, "(top level)")?;
    let mut tasks = Vec::new();
    if root.contains_key("tasks") {
        read_list(root, "tasks", "", None, &mut tasks)?;
    } else {
        if root.is_empty() {
            return Err((
                "(top level)".to_owned(),
                "no tasks: expected {\"master\": {\"tasks\": [...]}} or {\"tasks\": [...]}"
                    .to_owned(),
            ));
        }
        for (tag, list) in root {
            let list = object(list, tag)?;
            let (prefix, label) = tagged(tag);
            read_list(list, &format!("{tag}.tasks"), &prefix, label, &mut tasks)?;
        }
    }
    Ok(tasks)
}

/// What the tasks of tag `tag` are known by: the prefix of their ids (none for `master`), and
/// the cairn tag they carry (none for `master`).
fn tagged(tag: &str) -> (String, Option<&str>) {
    if tag == DEFAULT_TAG {
        (String::new(), None)
    } else {
        (format!("{tag}:"), Some(tag))
    }
}

fn read_list(
    list: &Map<String, Value>,
    at_list: &str,
    prefix: &str,
    tag: Option<&str>,
    out: &mut Vec<IncomingTask>,
) -> Result<(), Failed> {
    let at_list = at_list.to_owned();
    let items = match list.get("tasks") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err((at_list, format!("expected an array, found {}", kind(other))));
        }
        None => return Err((at_list, "is missing".to_owned())),
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("{at_list}[{i}]");
        let o = object(item, &at)?;
        let id = id_text(o.get("id"), &at)?;
        let key = format!("{prefix}{id}");
        let fields = read_fields(o, &at)?;
        let dependencies = deps(o, &at)?;
        out.push(task_of(
            fields,
            dependencies,
            key.clone(),
            None,
            prefix,
            tag,
        ));
        let subtasks = match o.get("subtasks") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(s)) => s,
            Some(other) => {
                return Err((
                    format!("{at}.subtasks"),
                    format!("expected an array, found {}", kind(other)),
                ));
            }
        };
        for (j, sub) in subtasks.iter().enumerate() {
            let at = format!("{at}.subtasks[{j}]");
            let so = object(sub, &at)?;
            let sid = id_text(so.get("id"), &at)?;
            let fields = read_fields(so, &at)?;
            let dependencies = deps(so, &at)?;
            let subtask = format!("{key}.{sid}");
            out.push(task_of(
                fields,
                dependencies,
                subtask,
                Some(&key),
                prefix,
                tag,
            ));
        }
    }
    Ok(())
}

/// What a task of the file says, as either way of reading it ([`typed`], [`tasks_of_tree`])
/// finds it: absent, `null` and blank optional fields are `None`.
struct Fields {
    title: String,
    status: TaskStatus,
    description: Option<String>,
    details: Option<String>,
    priority: Option<Priority>,
}

fn read_fields(o: &Map<String, Value>, at: &str) -> Result<Fields, Failed> {
    let title = string(o, "title", at)?;
    let status = match opt_string(o, "status", at)? {
        Some(s) => status(&s, at)?,
        None => TaskStatus::Pending,
    };
    let description = opt_string(o, "description", at)?;
    let details = opt_string(o, "details", at)?;
    let priority = match opt_string(o, "priority", at)? {
        Some(p) => Some(priority(&p, at)?),
        None => None,
    };
    Ok(Fields {
        title,
        status,
        description,
        details,
        priority,
    })
}

/// The task `fields` and `dependencies` describe, under `key`: a subtask of `parent` when it has
/// one, whose number dependencies name its siblings; `prefix` (the tag's) begins every other id.
fn task_of(
    fields: Fields,
    dependencies: Vec<Dep>,
    key: String,
    parent: Option<&str>,
    prefix: &str,
    tag: Option<&str>,
) -> IncomingTask {
    let mut task = IncomingTask::new(key, fields.title, fields.status);
    task.description = match (fields.description, fields.details) {
        (Some(d), Some(x)) => Some(format!("{d}\n\n{x}")),
        (d, x) => d.or(x),
    };
    task.priority = fields.priority;
    task.tags.extend(tag.map(str::to_owned));
    task.dependencies = dependencies
        .into_iter()
        .map(|d| match (d, parent) {
            (Dep::Number(n), Some(parent)) => format!("{parent}.{n}"),
            (Dep::Number(n), None) => format!("{prefix}{n}"),
            (Dep::Text(s), _) => format!("{prefix}{s}"),
        })
        .collect();
    if let Some(parent) = parent {
        task.parent = Some(parent.to_owned());
        task.level.get_or_insert(Level::Subtask);
    }
    task
}

enum Dep {
    Number(u64),
    Text(String),
}

fn deps(o: &Map<String, Value>, at: &str) -> Result<Vec<Dep>, Failed> {
    let items = match o.get("dependencies") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err((
                format!("{at}.dependencies"),
                format!("expected an array, found {}", kind(other)),
            ));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, d)| match d {
            Value::Number(n) if n.is_u64() => Ok(Dep::Number(n.as_u64().expect("checked"))),
            Value::String(s) if !s.trim().is_empty() => Ok(Dep::Text(s.trim().to_owned())),
            other => Err((
                format!("{at}.dependencies[{i}]"),
                format!("expected a task id, found {}", kind(other)),
            )),
        })
        .collect()
}

fn status_text(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending | TaskStatus::InResearch | TaskStatus::Researched => "pending",
        TaskStatus::InProgress => "in-progress",
        TaskStatus::Validating => "review",
        TaskStatus::Complete => "done",
        TaskStatus::Blocked => "blocked",
        TaskStatus::Cancelled => "cancelled",
    }
}

fn priority_text(priority: Priority) -> &'static str {
    match priority {
        Priority::Critical | Priority::High => "high",
        Priority::Medium => "medium",
        Priority::Low => "low",
    }
}

/// The smallest number from 1 up that a set, which only ever grows, does not hold: since the set
/// only grows, the answer never goes down, and the search resumes where it stopped.
#[derive(Default)]
struct FirstFree(u64);

impl FirstFree {
    fn next(&mut self, taken: &HashSet<u64>) -> u64 {
        self.0 = self.0.max(1);
        while taken.contains(&self.0) {
            self.0 += 1;
        }
        self.0
    }
}

/// The tagged form, every task under `master`.
pub fn render(doc: &TaskDoc) -> String {
    // Top-level tasks and, per top-level task, its descendants in tree order.
    let mut tops: Vec<(&Task, Vec<&Task>)> = Vec::new();
    for (task, depth) in tree(doc) {
        match tops.last_mut() {
            Some((_, subs)) if depth > 0 => subs.push(task),
            _ => tops.push((task, Vec::new())),
        }
    }
    // Numbers: the id a task was imported with when it fits and is free, else cairn's number,
    // else the next free one.
    let mut full: HashMap<&TaskId, String> = HashMap::new();
    let mut taken: HashSet<u64> = HashSet::new();
    let wanted: Vec<Option<u64>> = tops
        .iter()
        .map(|(t, _)| export_key(t, SOURCE, String::new).parse::<u64>().ok())
        .collect();
    // Sets and a cursor, not scans: an export of 100,000 tasks scanned them for every task.
    let wanted_any: HashSet<u64> = wanted.iter().flatten().copied().collect();
    let mut free = FirstFree::default();
    let mut top_numbers = Vec::new();
    for (i, (t, _)) in tops.iter().enumerate() {
        let preferred = wanted[i].filter(|n| !taken.contains(n)).or_else(|| {
            Some(t.id.number()).filter(|n| !taken.contains(n) && !wanted_any.contains(n))
        });
        let n = preferred.unwrap_or_else(|| free.next(&taken));
        taken.insert(n);
        top_numbers.push(n);
        full.insert(&t.id, n.to_string());
    }
    let mut sub_numbers: Vec<Vec<u64>> = Vec::new();
    for (i, (_, subs)) in tops.iter().enumerate() {
        let top = top_numbers[i];
        let mut used = HashSet::new();
        let mut free = FirstFree::default();
        let mut numbers = Vec::new();
        for s in subs {
            let link = export_key(s, SOURCE, String::new);
            let preferred = link
                .strip_prefix(&format!("{top}."))
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|n| !used.contains(n));
            let n = preferred.unwrap_or_else(|| free.next(&used));
            used.insert(n);
            numbers.push(n);
            full.insert(&s.id, format!("{top}.{n}"));
        }
        sub_numbers.push(numbers);
    }
    let dep_values = |t: &Task, sub_of: Option<u64>| -> Vec<Value> {
        t.dependencies
            .iter()
            .filter_map(|d| full.get(d))
            .map(|id| match (sub_of, id.split_once('.')) {
                (Some(top), Some((p, n))) if p == top.to_string() => {
                    json!(n.parse::<u64>().expect("a number"))
                }
                (Some(_), _) => json!(id),
                (None, None) => json!(id.parse::<u64>().expect("a number")),
                (None, Some(_)) => json!(id),
            })
            .collect()
    };
    let fields = |t: &Task, id: u64, deps: Vec<Value>| {
        let mut o = Map::new();
        o.insert("id".into(), json!(id));
        o.insert("title".into(), json!(t.title));
        o.insert(
            "description".into(),
            json!(t.description.clone().unwrap_or_default()),
        );
        o.insert("status".into(), json!(status_text(t.status)));
        o.insert("priority".into(), json!(priority_text(t.priority)));
        o.insert("dependencies".into(), Value::Array(deps));
        o
    };
    // Each top-level task's tree is made as it is printed, and dropped before the next: at
    // 100,000 tasks the trees of all of them at once were hundreds of megabytes.
    let tasks = tops.iter().enumerate().map(|(i, (t, subs))| {
        let mut o = fields(t, top_numbers[i], dep_values(t, None));
        let subtasks: Vec<Value> = subs
            .iter()
            .enumerate()
            .map(|(j, s)| {
                Value::Object(fields(
                    s,
                    sub_numbers[i][j],
                    dep_values(s, Some(top_numbers[i])),
                ))
            })
            .collect();
        o.insert("subtasks".into(), Value::Array(subtasks));
        Value::Object(o)
    });
    #[derive(serde::Serialize)]
    struct Tag<T> {
        tasks: T,
    }
    let document = std::collections::BTreeMap::from([(
        DEFAULT_TAG,
        Tag {
            tasks: AsPrinted(std::cell::Cell::new(Some(tasks))),
        },
    )]);
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values serialize");
    text.push('\n');
    text
}

/// A sequence printed as its items are made: serialized once.
struct AsPrinted<I>(std::cell::Cell<Option<I>>);

impl<I: Iterator<Item = Value>> serde::Serialize for AsPrinted<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.take().into_iter().flatten())
    }
}

/// The fast way in: the file straight into typed fields, without the JSON tree [`tasks_of_tree`]
/// walks (building and dropping that tree was a quarter of a 100,000-task import). It takes a file
/// only as the tree takes it, and gives up (`None`) at anything else — a field of another type, a
/// repeated key, an id that is not a whole number, an unknown status, an array where an object
/// belongs — for the tree to say what is wrong and where (a repeated key, which the tree reads as
/// its last value, it then takes).
mod typed {
    use std::fmt;

    use serde::Deserialize;
    use serde::de::{Deserializer, MapAccess, Visitor};
    use serde_json::value::RawValue;

    use super::{Dep, Fields, IncomingTask, TaskStatus, priority, status, tagged, task_of};

    impl<'de> Deserialize<'de> for Dep {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Expected;
            impl Visitor<'_> for Expected {
                type Value = Dep;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a whole number or a string")
                }
                fn visit_u64<E>(self, n: u64) -> Result<Dep, E> {
                    Ok(Dep::Number(n))
                }
                fn visit_str<E>(self, s: &str) -> Result<Dep, E> {
                    Ok(Dep::Text(s.to_owned()))
                }
            }
            deserializer.deserialize_any(Expected)
        }
    }

    impl Dep {
        /// As the tree reads an id or a dependency: a string trimmed, a blank one none.
        fn given(self) -> Option<Self> {
            match self {
                Dep::Text(s) => {
                    let s = s.trim();
                    (!s.is_empty()).then(|| Dep::Text(s.to_owned()))
                }
                number => Some(number),
            }
        }

        /// As an id's text.
        fn text(self) -> String {
            match self {
                Dep::Number(n) => n.to_string(),
                Dep::Text(s) => s,
            }
        }
    }

    /// A task's fields; `subtasks` as text, each checked to be an object before it is read. A
    /// subtask is read as one too, and its own `subtasks`, which the tree ignores, are too (but
    /// for their type: a subtask's `subtasks` that is not a list gives up).
    #[derive(Deserialize)]
    struct Task<'a> {
        id: Option<Dep>,
        title: Option<String>,
        status: Option<String>,
        description: Option<String>,
        details: Option<String>,
        priority: Option<String>,
        dependencies: Option<Vec<Dep>>,
        #[serde(borrow)]
        subtasks: Option<Vec<&'a RawValue>>,
    }

    /// A tag's list: its `tasks`, each as text.
    #[derive(Deserialize)]
    struct List<'a> {
        #[serde(borrow)]
        tasks: Option<Vec<&'a RawValue>>,
    }

    /// An object's entries in file order, each value as text; `None` for a repeated key.
    fn entries(text: &str) -> Option<Vec<(String, &RawValue)>> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Vec<(String, &'de RawValue)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    entries.push((key, map.next_value()?));
                }
                Ok(entries)
            }
        }
        let mut reader = serde_json::Deserializer::from_str(text);
        let entries = reader.deserialize_map(Entries).ok()?;
        reader.end().ok()?;
        let mut keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        let repeated = keys.windows(2).any(|pair| pair[0] == pair[1]);
        (!repeated).then_some(entries)
    }

    /// `text` read as a `T` if it is an object: a derived struct would also take an array, its
    /// fields by position, which the tree refuses.
    fn object<'a, T: Deserialize<'a>>(text: &'a RawValue) -> Option<T> {
        text.get()
            .starts_with('{')
            .then(|| serde_json::from_str(text.get()).ok())
            .flatten()
    }

    /// What a task of the file says — its id's text, its fields, its dependencies, its
    /// subtasks' texts — as the tree reads it, or `None`.
    fn said(t: Task<'_>) -> Option<(String, Fields, Vec<Dep>, Vec<&RawValue>)> {
        let given = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
        let fields = Fields {
            title: given(t.title)?,
            status: match given(t.status) {
                Some(s) => status(&s, "").ok()?,
                None => TaskStatus::Pending,
            },
            description: given(t.description),
            details: given(t.details),
            priority: match given(t.priority) {
                Some(p) => Some(priority(&p, "").ok()?),
                None => None,
            },
        };
        let dependencies = (t.dependencies.unwrap_or_default().into_iter())
            .map(Dep::given)
            .collect::<Option<_>>()?;
        let id = t.id?.given()?.text();
        Some((id, fields, dependencies, t.subtasks.unwrap_or_default()))
    }

    fn list(
        items: &[&RawValue],
        prefix: &str,
        tag: Option<&str>,
        out: &mut Vec<IncomingTask>,
    ) -> Option<()> {
        out.reserve(items.len());
        for item in items {
            let (id, fields, dependencies, subtasks) = said(object(item)?)?;
            let key = format!("{prefix}{id}");
            out.push(task_of(
                fields,
                dependencies,
                key.clone(),
                None,
                prefix,
                tag,
            ));
            for sub in subtasks {
                let (id, fields, dependencies, _) = said(object(sub)?)?;
                let subtask = format!("{key}.{id}");
                out.push(task_of(
                    fields,
                    dependencies,
                    subtask,
                    Some(&key),
                    prefix,
                    tag,
                ));
            }
        }
        Some(())
    }

    /// Every value of a text read as the tree reads it, and dropped at once: strings unescaped (a
    /// lone surrogate refused), numbers in range, nesting within serde_json's limit. The typed
    /// reading skips what it does not use without those checks (`IgnoredAny`, `RawValue`), and
    /// a file the tree refuses must not be taken.
    struct Checked;

    impl<'de> Deserialize<'de> for Checked {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Each;
            impl<'de> Visitor<'de> for Each {
                type Value = Checked;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("JSON")
                }
                fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
                    Ok(Checked)
                }
                fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
                    Ok(Checked)
                }
                fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
                    Ok(Checked)
                }
                fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
                    Ok(Checked)
                }
                fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
                    Ok(Checked)
                }
                fn visit_unit<E>(self) -> Result<Checked, E> {
                    Ok(Checked)
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Checked, A::Error> {
                    while seq.next_element::<Checked>()?.is_some() {}
                    Ok(Checked)
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
                    while map.next_entry::<Checked, Checked>()?.is_some() {}
                    Ok(Checked)
                }
            }
            deserializer.deserialize_any(Each)
        }
    }

    /// From this many bytes on, the file is checked ([`Checked`]) on another core while its
    /// tasks are read: one pass each over the 34 MB of 100,000 tasks, a third of reading them.
    const CHECKED_BESIDE: usize = 1 << 20;

    /// The file's tasks, as [`super::tasks_of_tree`] would give them, or `None`.
    pub(super) fn tasks(text: &str) -> Option<Vec<IncomingTask>> {
        let checked = || serde_json::from_str::<Checked>(text).is_ok();
        if text.len() < CHECKED_BESIDE {
            return checked().then(|| read(text)).flatten();
        }
        let (checked, tasks) = std::thread::scope(|scope| {
            let beside = std::thread::Builder::new()
                .spawn_scoped(scope, checked)
                .ok();
            let tasks = read(text);
            let checked = match beside {
                Some(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => checked(),
            };
            (checked, tasks)
        });
        // What the tasks' reading found counts only for a text the tree reads.
        tasks.filter(|_| checked)
    }

    /// [`tasks`] of a text that [`Checked`] takes.
    fn read(text: &str) -> Option<Vec<IncomingTask>> {
        let root = entries(text)?;
        let mut out = Vec::new();
        if let Some((_, items)) = root.iter().find(|(key, _)| key == "tasks") {
            let items: Vec<&RawValue> = serde_json::from_str(items.get()).ok()?;
            list(&items, "", None, &mut out)?;
            return Some(out);
        }
        if root.is_empty() {
            return None;
        }
        for (tag, raw) in &root {
            let tasks = object::<List<'_>>(raw)?.tasks?;
            let (prefix, label) = tagged(tag);
            list(&tasks, &prefix, label, &mut out)?;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtask_numbers_are_siblings_and_strings_are_full_ids() {
        let text = r#"{"master": {"tasks": [
            {"id": 1, "title": "Set up", "status": "done", "dependencies": []},
            {"id": 2, "title": "Build", "status": "in-progress", "dependencies": [1],
             "subtasks": [{"id": 1, "title": "Parser", "status": "done"},
                          {"id": 2, "title": "Printer", "status": "pending", "dependencies": [1, "1"]}]}
        ]}}"#;
        let Incoming::Foreign { tasks, .. } = parse(text).unwrap() else {
            panic!("foreign")
        };
        let printer = tasks.iter().find(|t| t.key == "2.2").unwrap();
        assert_eq!(printer.parent.as_deref(), Some("2"));
        assert_eq!(printer.dependencies, ["2.1", "1"]);
    }

    #[test]
    fn legacy_form_and_bad_status() {
        assert!(parse(r#"{"tasks": [{"id": 1, "title": "One"}]}"#).is_ok());
        let err = parse(r#"{"tasks": [{"id": 1, "title": "One", "status": "nope"}]}"#).unwrap_err();
        assert_eq!(err.0, "tasks[0].status");
    }

    use proptest::prelude::*;

    /// A value of another type than the field's, or none it allows.
    fn wild() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!("")),
            Just(json!("  ")),
            Just(json!("nope")),
            Just(json!(-1)),
            Just(json!(1.5)),
            Just(Value::Null),
            Just(json!(true)),
            Just(json!([1, "2"])),
            Just(json!({"id": 1})),
        ]
    }

    /// A value for `field`: one it allows mostly, now and then a wild one, or none.
    fn field(field: &'static str) -> impl Strategy<Value = Option<(String, Value)>> {
        let fitting: BoxedStrategy<Value> = match field {
            "id" => prop_oneof![
                (1u64..6).prop_map(|n| json!(n)),
                Just(json!("3")),
                Just(json!(" 4 ")),
            ]
            .boxed(),
            "status" => proptest::sample::select(vec![
                "pending",
                "done",
                "in-progress",
                "review",
                "blocked",
                "deferred",
                "cancelled",
            ])
            .prop_map(|s| json!(s))
            .boxed(),
            "priority" => proptest::sample::select(vec!["high", "medium", "low", "critical"])
                .prop_map(|s| json!(s))
                .boxed(),
            "dependencies" => proptest::collection::vec(
                prop_oneof![
                    (1u64..6).prop_map(|n| json!(n)),
                    Just(json!(" 2 ")),
                    Just(json!("1.1"))
                ],
                0..3,
            )
            .prop_map(Value::Array)
            .boxed(),
            _ => Just(json!("Write \"it\" \u{e9}\n")).boxed(),
        };
        proptest::option::weighted(
            0.8,
            prop_oneof![8 => fitting, 1 => wild()].prop_map(move |v| (field.to_owned(), v)),
        )
    }

    /// A task (or subtask) object, each usual field present or not and mostly of its type; now
    /// and then an array in its place.
    fn task(depth: u32) -> BoxedStrategy<Value> {
        let fields = [
            "id",
            "title",
            "status",
            "description",
            "details",
            "priority",
            "dependencies",
            "testStrategy",
        ];
        let object = fields
            .map(|f| field(f).boxed())
            .to_vec()
            .prop_map(|entries| Value::Object(entries.into_iter().flatten().collect()));
        // An array a derived struct would take field by field: 8, one per field.
        let array = |fields: usize| {
            let mut a = vec![json!(1), json!("A task")];
            a.resize(fields, Value::Null);
            Just(Value::Array(a))
        };
        if depth == 0 {
            return prop_oneof![9 => object, 1 => array(8)].boxed();
        }
        let object = (
            object,
            proptest::option::of(proptest::collection::vec(task(depth - 1), 0..3)),
        )
            .prop_map(|(mut t, subtasks)| {
                if let (Some(subtasks), Some(o)) = (subtasks, t.as_object_mut()) {
                    o.insert("subtasks".into(), Value::Array(subtasks));
                }
                t
            });
        prop_oneof![9 => object, 1 => array(8)].boxed()
    }

    /// A whole file: legacy or tagged, with a list or something else where it belongs.
    fn file() -> impl Strategy<Value = String> {
        let tasks = proptest::collection::vec(task(1), 0..5);
        prop_oneof![
            tasks.clone().prop_map(|t| json!({"tasks": t}).to_string()),
            (tasks.clone(), tasks.clone()).prop_map(|(a, b)| {
                json!({"master": {"tasks": a, "metadata": {}}, "feature": {"tasks": b}}).to_string()
            }),
            tasks
                .clone()
                .prop_map(|t| json!({"master": {"tasks": [t]}}).to_string()),
            tasks.prop_map(|t| format!(r#"{{"master": {{"tasks": {}, "tasks": []}}}}"#, json!(t))),
            Just(r#"{"master": [1]}"#.to_owned()),
            Just("{}".to_owned()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// The fast reading takes a file only as the tree takes it, task for task.
        #[test]
        fn the_typed_reading_agrees_with_the_tree(text in file()) {
            if let Some(typed) = typed::tasks(&text) {
                prop_assert_eq!(Ok(typed), tasks_of_tree(&text), "{}", text);
            }
        }
    }

    /// What the typed reading skips is still checked as the tree checks it: a lone surrogate, a
    /// number out of range, nesting past serde_json's limit — in a field it does not use, a tag's
    /// other fields, another root key — and the tree refuses each.
    #[test]
    fn the_typed_reading_refuses_what_the_tree_refuses_in_what_it_skips() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for text in [
            r#"{"tasks":[{"id":1,"title":"A","testStrategy":"\ud800"}]}"#.to_owned(),
            r#"{"tasks":[{"id":1,"title":"A","testStrategy":1e400}]}"#.to_owned(),
            format!(r#"{{"tasks":[{{"id":1,"title":"A","testStrategy":{deep}}}]}}"#),
            format!(r#"{{"master":{{"tasks":[],"metadata":{deep}}}}}"#),
            r#"{"tasks":[{"id":1,"title":"A"}],"other":"\udc00"}"#.to_owned(),
            r#"{"tasks":[{"id":1,"title":"A","subtasks":[{"id":1,"title":"B","subtasks":[1e400]}]}]}"#
                .to_owned(),
        ] {
            assert!(tasks_of_tree(&text).is_err(), "{text}");
            assert!(typed::tasks(&text).is_none(), "{text}");
        }
    }

    /// And it does take the usual file: Task Master's own shape, every field well typed.
    #[test]
    fn the_typed_reading_takes_a_well_formed_file() {
        let text = r#"{"master": {"tasks": [
            {"id": 1, "title": "Set up", "description": "d", "details": "x", "status": "done",
             "priority": "high", "dependencies": [], "testStrategy": "t", "subtasks": []},
            {"id": "2", "title": "Build", "status": "in-progress", "dependencies": [1, "1"],
             "subtasks": [{"id": 1, "title": "Parser", "status": null, "dependencies": [2]}]}
        ], "metadata": {"created": "2026-01-01"}}}"#;
        let typed = typed::tasks(text).expect("taken");
        assert_eq!(Ok(typed), tasks_of_tree(text));
    }
}
