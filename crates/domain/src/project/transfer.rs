//! Copying projects whole from one store to another (`cairn store export` / `import`): each
//! project is read out of one adapter and written into the other through the port, so each
//! adapter stays the only writer of its own format.

use std::sync::Arc;

use serde::Serialize;

use crate::error::{Entity, Error, StoreError};

use super::error::ProjectError;
use super::model::ProjectId;
use super::store::{ProjectDump, ProjectStore};

/// What was copied of one project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Copied {
    pub project: ProjectId,
    pub tasks: usize,
    pub log_entries: usize,
    pub checkpoints: usize,
    pub research_briefs: usize,
}

impl Copied {
    fn of(dump: &ProjectDump) -> Self {
        Self {
            project: dump.state.project.id.clone(),
            tasks: dump.state.tasks.tasks.len(),
            log_entries: dump.log.len(),
            checkpoints: dump.checkpoints.len(),
            research_briefs: dump.research.len(),
        }
    }
}

/// Copies projects from `from` into `to`.
#[derive(Debug)]
pub struct StoreTransfer {
    from: Arc<dyn ProjectStore>,
    to: Arc<dyn ProjectStore>,
}

impl StoreTransfer {
    pub fn new(from: Arc<dyn ProjectStore>, to: Arc<dyn ProjectStore>) -> Self {
        Self { from, to }
    }

    /// Copies project `only`, else every project of `from`. Every project is read before any is
    /// written, and a project `to` already holds is refused (unless `replace`) before anything
    /// is written, so a refused copy changes nothing.
    /// Errors: `NoProjects` when `from` holds none; `NotFound` for an unknown `only`;
    /// `AlreadyExists` (nothing written); what either store reports.
    pub async fn copy(
        &self,
        only: Option<&ProjectId>,
        replace: bool,
    ) -> Result<Vec<Copied>, Error> {
        let ids = match only {
            Some(id) => vec![id.clone()],
            None => self.from.list().await?,
        };
        if ids.is_empty() {
            return Err(ProjectError::NoProjects.into());
        }
        if !replace {
            let present = self.to.list().await?;
            if let Some(taken) = ids.iter().find(|id| present.contains(id)) {
                return Err(StoreError::AlreadyExists {
                    entity: Entity::Project,
                    id: taken.to_string(),
                }
                .into());
            }
        }
        let mut dumps = Vec::with_capacity(ids.len());
        for id in &ids {
            dumps.push(self.from.export_project(id).await?);
        }
        let mut copied = Vec::with_capacity(dumps.len());
        for dump in &dumps {
            self.to.import_project(dump, replace).await?;
            copied.push(Copied::of(dump));
        }
        Ok(copied)
    }
}
