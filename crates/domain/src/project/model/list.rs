//! [`TaskList`]: the tasks of a [`super::TaskDoc`], which remembers which of them a change was
//! handed, so that an adapter that read the list rewrites only what the change may have touched.
//!
//! A write on a large store changes one task or a handful (a completion and its parents' cascade)
//! out of thousands. Finding which by comparing every task after the change with the list as read
//! was a tenth of `task complete` at 10,000 tasks; knowing it is free. The list cannot be changed
//! without the change being recorded: there is no `DerefMut`, and every method that gives a task
//! out mutably records its position — or, for the ones that reach every task or move tasks
//! around (`iter_mut`, `retain`, `truncate`, …), gives up and says that anything may differ.

use std::num::NonZeroU64;
use std::ops::{Deref, Index, IndexMut};
use std::slice::SliceIndex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};

use super::{Task, TaskId};

/// The tasks of a document, in file order. Read it as a slice (`list.iter()`, `list[i]`,
/// `list.len()`); change it through the methods below, each of which records what it touched.
#[derive(Clone, Default)]
pub struct TaskList {
    tasks: Vec<Task>,
    touched: Touched,
    counted: Counted,
    lookup: Lookup,
}

/// Where each id's first copy is, for [`TaskList::position`]. A command looks up a handful of
/// tasks and scans for them; work that looks up task after task (an import of 100,000 tasks moves
/// each through its statuses, and every move looks up the task, its parents and its dependencies)
/// made a scan per lookup minutes of work. So once lookups have scanned the list
/// [`Lookup::BUILD_AFTER`] times over, the positions are kept in a map, updated as tasks are added
/// and handed out. Behind a mutex: a list is looked into through `&self`, from several threads;
/// boxed, so a list stays small to move.
#[derive(Default)]
struct Lookup(Mutex<Box<Positions>>);

#[derive(Default)]
struct Positions {
    /// The first position of each number among the first `covered` tasks, once built.
    first: Option<FxHashMap<u64, usize>>,
    covered: usize,
    /// Positions handed out to be changed since `first` was brought up to date: their ids may
    /// have changed.
    suspects: Vec<usize>,
    /// Tasks looked at by scans, to tell when a map pays for itself.
    scanned: usize,
}

impl Clone for Lookup {
    /// A copy starts without positions: it is often made to be changed wholesale, and its map
    /// would be built again if it is looked into as often.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl Lookup {
    /// Lookups scan the list this many times over before its positions are kept in a map (which
    /// costs about as much to build as that many scans).
    const BUILD_AFTER: usize = 16;

    fn positions(&self) -> MutexGuard<'_, Box<Positions>> {
        // Every change to `Positions` leaves it whole (at worst with a map to rebuild), so a
        // panic elsewhere while it was held does not make it wrong.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the map: the list was reshaped.
    fn forget(&mut self) {
        let positions = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        **positions = Positions::default();
    }

    /// The task at `i` is handed out: its id may change.
    fn suspect(&mut self, i: usize, len: usize) {
        let positions = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        if positions.first.is_some() {
            positions.suspects.push(i);
            if positions.suspects.len() > len {
                // Handed out wholesale without being looked into: cheaper to build anew.
                **positions = Positions::default();
            }
        }
    }
}

impl Positions {
    fn find(&mut self, tasks: &[Task], number: u64) -> Option<usize> {
        if self.first.is_none() {
            let at = tasks.iter().position(|t| t.id.number() == number);
            self.scanned = self
                .scanned
                .saturating_add(at.map_or(tasks.len(), |i| i + 1));
            if self.scanned >= Lookup::BUILD_AFTER.saturating_mul(tasks.len()) {
                self.build(tasks);
            }
            return at;
        }
        if !self.bring_up_to_date(tasks) {
            self.build(tasks);
        }
        let first = self.first.as_ref()?;
        match first.get(&number) {
            Some(&at) if tasks.get(at).is_some_and(|t| t.id.number() == number) => Some(at),
            // The task there took another id: where its old one's other copies are is unknown.
            Some(_) => {
                self.build(tasks);
                self.first.as_ref()?.get(&number).copied()
            }
            None => None,
        }
    }

    fn build(&mut self, tasks: &[Task]) {
        let mut first = FxHashMap::with_capacity_and_hasher(tasks.len(), Default::default());
        for (i, t) in tasks.iter().enumerate() {
            first.entry(t.id.number()).or_insert(i);
        }
        *self = Self {
            first: Some(first),
            covered: tasks.len(),
            suspects: Vec::new(),
            scanned: 0,
        };
    }

    /// Takes in the ids of the tasks handed out and of the tasks added since; `false` when that
    /// cannot be done exactly (an entry points at a task that took another id, so where that id's
    /// other copies are is unknown) and the map must be built anew.
    fn bring_up_to_date(&mut self, tasks: &[Task]) -> bool {
        let Some(first) = self.first.as_mut() else {
            return false;
        };
        if self.covered > tasks.len() {
            return false;
        }
        let suspects = self.suspects.drain(..).filter(|&s| s < self.covered);
        for i in suspects.chain(self.covered..tasks.len()) {
            let number = tasks[i].id.number();
            match first.get_mut(&number) {
                None => {
                    first.insert(number, i);
                }
                Some(at) if tasks[*at].id.number() != number => return false,
                Some(at) => *at = (*at).min(i),
            }
        }
        self.covered = tasks.len();
        true
    }
}

/// The largest task number among the first `k` tasks, as `k << 32 | max` in one word (0: none
/// counted), for [`TaskList::max_number`]: adding tasks one at a time then counts only the new
/// ones, where a scan of the whole list for each made a first import of 100,000 tasks take
/// minutes. A change handed out for any of the first `k` tasks forgets it; a task added at the end
/// does not. An atomic, not a `Cell`: a list is read from several threads at once.
#[derive(Default)]
struct Counted(AtomicU64);

impl Clone for Counted {
    fn clone(&self) -> Self {
        Self(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

/// Which read of a store a list descends from: [`TaskList::as_read`] gives every list it makes a
/// mark of its own, so a list put in another's place is never taken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListRead(NonZeroU64);

#[derive(Clone, Default)]
struct Touched {
    /// `None`: a list made anew, whose tasks are all new to whoever stored the list.
    read: Option<ListRead>,
    /// Set once every task may differ (the list was reshaped or handed out whole).
    all: bool,
    /// One bit per position handed out mutably.
    bits: Vec<u64>,
}

impl Touched {
    fn mark(&mut self, i: usize) {
        let word = i / 64;
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= 1 << (i % 64);
    }
}

impl TaskList {
    /// An empty list, made anew: to whoever stores it, every task is new.
    pub fn new() -> Self {
        Self::default()
    }

    /// A list as an adapter read it from its store: nothing touched yet, under a mark no other
    /// list has (see [`Self::touched_since`]).
    pub fn as_read(tasks: Vec<Task>) -> Self {
        static READS: AtomicU64 = AtomicU64::new(1);
        let mark = NonZeroU64::new(READS.fetch_add(1, Ordering::Relaxed)).map(ListRead);
        Self {
            tasks,
            touched: Touched {
                read: mark,
                all: false,
                bits: Vec::new(),
            },
            counted: Counted::default(),
            lookup: Lookup::default(),
        }
    }

    /// The read this list descends from, if an adapter made it with [`Self::as_read`].
    pub fn read(&self) -> Option<ListRead> {
        self.touched.read
    }

    /// The positions, ascending, of the tasks that may differ from the list as read at `read`:
    /// every other task is exactly as read, at the same position. `None` when that cannot be
    /// told — the list does not descend from that read (it was made anew or put in its place), or
    /// it was reshaped or handed out whole since — and every task must be compared.
    ///
    /// Positions past the length as read are tasks added since.
    pub fn touched_since(&self, read: ListRead) -> Option<Vec<usize>> {
        if self.touched.read != Some(read) || self.touched.all {
            return None;
        }
        let mut at = Vec::new();
        for (word, &bits) in self.touched.bits.iter().enumerate() {
            let mut rest = bits;
            while rest != 0 {
                let bit = rest.trailing_zeros() as usize;
                let i = word * 64 + bit;
                if i < self.tasks.len() {
                    at.push(i);
                }
                rest &= rest - 1;
            }
        }
        Some(at)
    }

    /// Every task may differ from here on.
    fn reshaped(&mut self) -> &mut Vec<Task> {
        self.touched.all = true;
        self.counted.0.store(0, Ordering::Relaxed);
        self.lookup.forget();
        &mut self.tasks
    }

    /// The task at `i` is handed out to be changed.
    fn handing_out(&mut self, i: usize) {
        self.touched.mark(i);
        self.lookup.suspect(i, self.tasks.len());
        let counted = self.counted.0.load(Ordering::Relaxed) >> 32;
        if u64::try_from(i).is_ok_and(|i| i < counted) {
            self.counted.0.store(0, Ordering::Relaxed);
        }
    }

    /// The largest task number in the list, 0 when it is empty: counted once, then only for the
    /// tasks added since (see `Counted`).
    pub fn max_number(&self) -> u64 {
        let counted = self.counted.0.load(Ordering::Relaxed);
        let (k, max) = match usize::try_from(counted >> 32) {
            Ok(k) if k <= self.tasks.len() => (k, counted & u64::from(u32::MAX)),
            _ => (0, 0),
        };
        let max = self.tasks[k..]
            .iter()
            .map(|t| t.id.number())
            .fold(max, u64::max);
        if let (Ok(len), Ok(max32)) = (u32::try_from(self.tasks.len()), u32::try_from(max)) {
            self.counted
                .0
                .store(u64::from(len) << 32 | u64::from(max32), Ordering::Relaxed);
        }
        max
    }

    /// Where the first task with the id `id` is — what a scan would find, found in a map once
    /// lookups have scanned the list often enough (see `Lookup`).
    pub fn position(&self, id: &TaskId) -> Option<usize> {
        self.lookup.positions().find(&self.tasks, id.number())
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut Task> {
        if i < self.tasks.len() {
            self.handing_out(i);
        }
        self.tasks.get_mut(i)
    }

    /// The first task `pick` chooses, to change it.
    pub fn find_mut(&mut self, pick: impl FnMut(&Task) -> bool) -> Option<&mut Task> {
        let i = self.tasks.iter().position(pick)?;
        self.get_mut(i)
    }

    /// Every task, to change any of them: afterwards every task may differ.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Task> {
        self.reshaped().iter_mut()
    }

    pub fn push(&mut self, task: Task) {
        self.touched.mark(self.tasks.len());
        self.tasks.push(task);
    }

    /// Room for `more` tasks, so that adding them one by one does not move the list again and
    /// again (an import of 100,000 tasks).
    pub fn reserve(&mut self, more: usize) {
        self.tasks.reserve(more);
    }

    pub fn extend(&mut self, tasks: impl IntoIterator<Item = Task>) {
        for task in tasks {
            self.push(task);
        }
    }

    pub fn truncate(&mut self, len: usize) {
        if len < self.tasks.len() {
            self.reshaped().truncate(len);
        }
    }

    pub fn retain(&mut self, keep: impl FnMut(&Task) -> bool) {
        self.reshaped().retain(keep);
    }

    /// Takes every task out, leaving the list empty.
    pub fn take_all(&mut self) -> Vec<Task> {
        std::mem::take(self.reshaped())
    }

    pub fn into_vec(mut self) -> Vec<Task> {
        std::mem::take(&mut self.tasks)
    }
}

/// Set by [`forget_lists_when_dropped`]: lists are not taken apart when dropped.
static FORGET_WHEN_DROPPED: AtomicBool = AtomicBool::new(false);

/// For a process that ends right after its one piece of work (a `cairn` command, a hook event):
/// from now on a task list it drops is not taken apart task by task — its memory goes back to
/// the system with the process, all at once. Walking 10,000 tasks to drop their strings was
/// 0.5 ms of every command on a large store, after the work was done. A process that lives on
/// (`cairn mcp`, `cairn board`, a test) never calls it, and frees as usual. So work must not drop
/// list after list: an import that tried each status move on a copy of the list grew to 24 GB
/// (`import::move_along` now moves in place).
pub fn forget_lists_when_dropped() {
    FORGET_WHEN_DROPPED.store(true, Ordering::Relaxed);
}

impl Drop for TaskList {
    fn drop(&mut self) {
        if FORGET_WHEN_DROPPED.load(Ordering::Relaxed) {
            std::mem::forget(std::mem::take(&mut self.tasks));
        }
    }
}

impl Deref for TaskList {
    type Target = [Task];

    fn deref(&self) -> &[Task] {
        &self.tasks
    }
}

impl<I: SliceIndex<[Task]>> Index<I> for TaskList {
    type Output = I::Output;

    fn index(&self, i: I) -> &I::Output {
        &self.tasks[i]
    }
}

impl IndexMut<usize> for TaskList {
    fn index_mut(&mut self, i: usize) -> &mut Task {
        if i < self.tasks.len() {
            self.handing_out(i);
        }
        &mut self.tasks[i]
    }
}

impl From<Vec<Task>> for TaskList {
    /// A list made anew: to whoever stores it, every task is new.
    fn from(tasks: Vec<Task>) -> Self {
        Self {
            tasks,
            touched: Touched::default(),
            counted: Counted::default(),
            lookup: Lookup::default(),
        }
    }
}

impl FromIterator<Task> for TaskList {
    fn from_iter<I: IntoIterator<Item = Task>>(tasks: I) -> Self {
        Vec::from_iter(tasks).into()
    }
}

impl IntoIterator for TaskList {
    type Item = Task;
    type IntoIter = std::vec::IntoIter<Task>;

    fn into_iter(mut self) -> Self::IntoIter {
        std::mem::take(&mut self.tasks).into_iter()
    }
}

impl<'a> IntoIterator for &'a TaskList {
    type Item = &'a Task;
    type IntoIter = std::slice::Iter<'a, Task>;

    fn into_iter(self) -> Self::IntoIter {
        self.tasks.iter()
    }
}

impl<'a> IntoIterator for &'a mut TaskList {
    type Item = &'a mut Task;
    type IntoIter = std::slice::IterMut<'a, Task>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// Lists are equal when their tasks are: what was touched is bookkeeping, not content.
impl PartialEq for TaskList {
    fn eq(&self, other: &Self) -> bool {
        self.tasks == other.tasks
    }
}

impl PartialEq<Vec<Task>> for TaskList {
    fn eq(&self, other: &Vec<Task>) -> bool {
        &self.tasks == other
    }
}

impl PartialEq<TaskList> for Vec<Task> {
    fn eq(&self, other: &TaskList) -> bool {
        self == &other.tasks
    }
}

impl std::fmt::Debug for TaskList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.tasks.fmt(f)
    }
}

impl Serialize for TaskList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.tasks.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::TaskId;
    use crate::project::fixtures;

    fn list(n: u64) -> TaskList {
        TaskList::as_read((1..=n).map(|i| fixtures::pending_task(i, "Task")).collect())
    }

    #[test]
    fn every_way_to_change_a_task_is_recorded() {
        let mut l = list(200);
        let read = l.read().unwrap();
        assert_eq!(l.touched_since(read), Some(vec![]));
        l[130].title = "a".into();
        l.get_mut(0).unwrap().title = "b".into();
        l.find_mut(|t| t.id.number() == 65).unwrap().title = "c".into();
        let _ = &l[199].title; // a read is not a change
        l.push(fixtures::pending_task(201, "Task"));
        assert_eq!(l.touched_since(read), Some(vec![0, 64, 130, 200]));
    }

    #[test]
    fn a_reshaped_or_replaced_list_says_nothing_of_its_tasks() {
        type Reshape = fn(&mut TaskList);
        let reshapes: [Reshape; 5] = [
            |l| drop(l.iter_mut()),
            |l| l.retain(|t| t.id.number() != 3),
            |l| l.truncate(2),
            |l| drop(l.take_all()),
            |l| *l = list(5),
        ];
        for reshape in reshapes {
            let mut l = list(5);
            let read = l.read().unwrap();
            reshape(&mut l);
            assert_eq!(l.touched_since(read), None);
        }
        // A clone descends from the same read, and records its own changes.
        let l = list(5);
        let read = l.read().unwrap();
        let mut copy = l.clone();
        copy[4].title = "x".into();
        assert_eq!(copy.touched_since(read), Some(vec![4]));
        assert_eq!(l.touched_since(read), Some(vec![]));
        // A list made anew descends from no read.
        let fresh: TaskList = (1..=5).map(|i| fixtures::pending_task(i, "Task")).collect();
        assert_eq!(fresh.read(), None);
        assert_eq!(fresh.touched_since(read), None);
    }

    proptest::proptest! {
        /// Whatever is done to the list — ids repeated, tasks added, ids changed through any way
        /// of handing a task out, the list reshaped or copied — what it keeps to answer quickly
        /// answers as a scan would: a lookup finds the first task with the id, and the largest
        /// number is the largest. Every step looks up every id, so the map is built early and
        /// then kept up to date through the rest.
        #[test]
        fn what_the_list_keeps_answers_as_a_scan_would(
            ids in proptest::collection::vec(1u64..20, 0..30),
            steps in proptest::collection::vec((0u8..8, 0usize..40, 1u64..30), 0..40),
        ) {
            let mut l: TaskList = ids.iter().map(|&n| fixtures::pending_task(n, "Task")).collect();
            for (how, at, n) in steps {
                let id = TaskId::from_number(n);
                match how {
                    0 | 1 => l.push(fixtures::pending_task(n, "Task")),
                    2 => {
                        if let Some(task) = l.get_mut(at) {
                            task.id = id;
                        }
                    }
                    3 => {
                        if at < l.len() {
                            l[at] = fixtures::pending_task(n, "Task");
                        }
                    }
                    4 => l.retain(|t| t.id.number() % 7 != n % 7),
                    5 => l = l.clone(),
                    6 => {
                        if let Some(task) = l.find_mut(|t| t.id.number() == n) {
                            task.id = TaskId::from_number(at as u64);
                        }
                    }
                    _ => {
                        let _ = l.max_number();
                    }
                }
                let largest = l.iter().map(|t| t.id.number()).max().unwrap_or(0);
                proptest::prop_assert_eq!(l.max_number(), largest);
                proptest::prop_assert_eq!(l.clone().max_number(), largest);
                for asked in 0..45 {
                    let id = TaskId::from_number(asked);
                    let scan = l.iter().position(|t| t.id == id);
                    proptest::prop_assert_eq!(l.position(&id), scan, "{}", id);
                }
            }
        }
    }
}
