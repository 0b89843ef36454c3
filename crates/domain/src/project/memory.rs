//! An in-memory [`ProjectStore`] for tests and for trying services without a disk.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::{Entity, Error, StoreError};
use crate::time::Timestamp;

use super::events::ProjectEvent;
use super::model::{Project, ProjectId, ProjectState, TaskDoc, TaskId};
use super::policy::{self, CHECKPOINT_RETENTION, Velocity};
use super::store::*;
use crate::log::LogRecord;

#[derive(Debug)]
struct Stored {
    state: ProjectState,
    log: Vec<LogRecord>,
    checkpoints: BTreeMap<u32, (TaskDoc, Timestamp)>,
    research: HashMap<TaskId, (String, Timestamp)>,
    velocity: Option<Velocity>,
}

/// Holds every project in one mutex: one transaction at a time, like a per-project lock but
/// coarser, which the contract allows.
#[derive(Debug, Default)]
pub struct MemoryProjectStore {
    projects: Mutex<BTreeMap<ProjectId, Stored>>,
}

impl MemoryProjectStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(
        &self,
        id: &ProjectId,
        f: impl FnOnce(&mut Stored) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        let stored = projects.get_mut(id).ok_or_else(|| not_found(id))?;
        f(stored)
    }
}

fn not_found(id: &ProjectId) -> StoreError {
    StoreError::NotFound {
        entity: Entity::Project,
        id: id.to_string(),
    }
}

fn checkpoint(stored: &mut Stored, at: Timestamp) -> CheckpointInfo {
    let number = stored.checkpoints.keys().next_back().copied().unwrap_or(0) + 1;
    stored
        .checkpoints
        .insert(number, (stored.state.tasks.clone(), at));
    while stored.checkpoints.len() > CHECKPOINT_RETENTION {
        stored.checkpoints.pop_first();
    }
    let tasks = stored.state.tasks.tasks.len();
    stored
        .log
        .push(ProjectEvent::CheckpointWritten { number, tasks }.to_record(at));
    info(number, at)
}

/// [`ProjectStore::write_checkpoint`]: the checkpoint also restarts the count of completions that
/// brings the next automatic one.
fn write_checkpoint_now(stored: &mut Stored, at: Timestamp) -> CheckpointInfo {
    stored.state.tasks.completions_since_checkpoint = 0;
    checkpoint(stored, at)
}

/// What [`ProjectStore::list_checkpoints`] says of checkpoint `number` (no file: no size).
fn info(number: u32, at: Timestamp) -> CheckpointInfo {
    CheckpointInfo {
        number,
        written_at: Some(at),
        size_bytes: 0,
    }
}

#[async_trait]
impl ProjectStore for MemoryProjectStore {
    async fn list(&self) -> Result<Vec<ProjectId>, StoreError> {
        Ok(self
            .projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect())
    }

    async fn create(
        &self,
        project: &Project,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        if projects.contains_key(&project.id) {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Project,
                id: project.id.to_string(),
            });
        }
        let state = ProjectState {
            project: project.clone(),
            tasks: TaskDoc::new(project.id.clone()),
        };
        let log = events.iter().map(|e| e.to_record(at)).collect();
        projects.insert(
            project.id.clone(),
            Stored {
                state,
                log,
                checkpoints: BTreeMap::new(),
                research: HashMap::new(),
                velocity: None,
            },
        );
        Ok(())
    }

    async fn load_project(&self, id: &ProjectId) -> Result<Project, StoreError> {
        self.with(id, |s| Ok(s.state.project.clone()))
    }

    async fn load(&self, id: &ProjectId) -> Result<Loaded, StoreError> {
        self.with(id, |s| {
            Ok(Loaded {
                state: s.state.clone(),
                recovered: None,
            })
        })
    }

    async fn transact(
        &self,
        id: &ProjectId,
        at: Timestamp,
        mutation: Mutation<'_>,
    ) -> Result<Committed, Error> {
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        let stored = projects.get_mut(id).ok_or_else(|| not_found(id))?;
        let mut next = stored.state.clone();
        let changes = mutation(&mut next)?;
        let velocity = changes.velocity.as_ref().and_then(|new| {
            policy::velocity_after(stored.velocity.as_ref()?, new, &next.tasks, at)
        });
        stored.state = next;
        stored
            .log
            .extend(changes.events.iter().map(|e| e.to_record(at)));
        if let Some(velocity) = &velocity {
            stored.velocity = Some(velocity.clone());
        }
        // After the events, as the contract orders the log.
        let number = changes.checkpoint.then(|| checkpoint(stored, at).number);
        Ok(Committed {
            state: stored.state.clone(),
            checkpoint: number,
            recovered: None,
            velocity,
        })
    }

    async fn append_log(
        &self,
        id: &ProjectId,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        self.with(id, |s| {
            s.log.extend(events.iter().map(|e| e.to_record(at)));
            Ok(())
        })
    }

    async fn read_log(&self, id: &ProjectId, tail: Option<usize>) -> Result<LogRead, StoreError> {
        self.with(id, |s| {
            let skip = tail.map_or(0, |n| s.log.len().saturating_sub(n));
            Ok(LogRead {
                records: s.log[skip..].to_vec(),
                torn_tail: None,
            })
        })
    }

    async fn research_modified(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<Timestamp>, StoreError> {
        self.with(id, |s| Ok(s.research.get(task).map(|(_, at)| *at)))
    }

    async fn read_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<String>, StoreError> {
        self.with(id, |s| {
            Ok(s.research.get(task).map(|(text, _)| text.clone()))
        })
    }

    async fn write_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
        text: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        self.with(id, |s| {
            s.research.insert(task.clone(), (text.to_owned(), at));
            Ok(())
        })
    }

    async fn list_checkpoints(&self, id: &ProjectId) -> Result<Vec<CheckpointInfo>, StoreError> {
        self.with(id, |s| {
            Ok(s.checkpoints
                .iter()
                .map(|(n, (_, at))| info(*n, *at))
                .collect())
        })
    }

    async fn keep_checkpoint(
        &self,
        id: &ProjectId,
        at: Timestamp,
    ) -> Result<(CheckpointInfo, bool), StoreError> {
        self.with(id, |s| {
            let newest = s.checkpoints.iter().next_back();
            if let Some((n, (_, written_at))) = newest.filter(|(_, (t, _))| *t == s.state.tasks) {
                return Ok((info(*n, *written_at), false));
            }
            Ok((write_checkpoint_now(s, at), true))
        })
    }

    async fn write_checkpoint(
        &self,
        id: &ProjectId,
        at: Timestamp,
    ) -> Result<CheckpointInfo, StoreError> {
        self.with(id, |s| Ok(write_checkpoint_now(s, at)))
    }

    async fn restore_checkpoint(
        &self,
        id: &ProjectId,
        number: u32,
        at: Timestamp,
    ) -> Result<Committed, StoreError> {
        self.with(id, |s| {
            let (tasks, _) =
                s.checkpoints
                    .get(&number)
                    .cloned()
                    .ok_or_else(|| StoreError::NotFound {
                        entity: Entity::Checkpoint,
                        id: number.to_string(),
                    })?;
            checkpoint(s, at);
            let count = tasks.tasks.len();
            s.state.tasks = tasks;
            s.log.push(
                ProjectEvent::CheckpointRestored {
                    number,
                    tasks: count,
                }
                .to_record(at),
            );
            Ok(Committed {
                state: s.state.clone(),
                checkpoint: None,
                velocity: None,
                recovered: None,
            })
        })
    }

    async fn read_velocity(&self, id: &ProjectId) -> Result<Option<Velocity>, StoreError> {
        self.with(id, |s| Ok(s.velocity.clone()))
    }

    async fn write_velocity(&self, id: &ProjectId, velocity: &Velocity) -> Result<(), StoreError> {
        self.with(id, |s| {
            s.velocity = Some(velocity.clone());
            Ok(())
        })
    }

    async fn update_velocity(
        &self,
        id: &ProjectId,
        update: &(dyn Fn(Option<Velocity>) -> Option<Velocity> + Send + Sync),
    ) -> Result<Option<Velocity>, StoreError> {
        self.with(id, |s| {
            let next = update(s.velocity.clone());
            if let Some(v) = &next {
                s.velocity = Some(v.clone());
            }
            Ok(next)
        })
    }

    async fn clean_debris(
        &self,
        id: &ProjectId,
        _now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        self.with(id, |_| Ok(Vec::new()))
    }

    async fn health(
        &self,
        id: &ProjectId,
        _now: Timestamp,
        _scrutiny: Scrutiny,
    ) -> Result<StoreHealth, StoreError> {
        self.with(id, |_| Ok(StoreHealth::default()))
    }

    async fn export_project(&self, id: &ProjectId) -> Result<ProjectDump, StoreError> {
        self.with(id, |s| {
            let mut research: Vec<DumpedResearch> = s
                .research
                .iter()
                .map(|(task, (text, at))| DumpedResearch {
                    task: task.clone(),
                    modified_at: Some(*at),
                    text: text.clone(),
                })
                .collect();
            research.sort_by(|a, b| a.task.cmp(&b.task));
            Ok(ProjectDump {
                state: s.state.clone(),
                log: s.log.clone(),
                checkpoints: s
                    .checkpoints
                    .iter()
                    .map(|(number, (tasks, at))| DumpedCheckpoint {
                        number: *number,
                        written_at: Some(*at),
                        tasks: tasks.clone(),
                    })
                    .collect(),
                research,
                velocity: s.velocity.clone(),
            })
        })
    }

    async fn import_project(&self, dump: &ProjectDump, replace: bool) -> Result<(), StoreError> {
        let id = &dump.state.project.id;
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        if projects.contains_key(id) && !replace {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Project,
                id: id.to_string(),
            });
        }
        // A store without files has no mtime to fall back on: an unknown time is the epoch.
        let known = |at: Option<Timestamp>| at.unwrap_or_default();
        projects.insert(
            id.clone(),
            Stored {
                state: dump.state.clone(),
                log: dump.log.clone(),
                checkpoints: dump
                    .checkpoints
                    .iter()
                    .map(|c| (c.number, (c.tasks.clone(), known(c.written_at))))
                    .collect(),
                research: dump
                    .research
                    .iter()
                    .map(|r| (r.task.clone(), (r.text.clone(), known(r.modified_at))))
                    .collect(),
                velocity: dump.velocity.clone(),
            },
        );
        Ok(())
    }
}
