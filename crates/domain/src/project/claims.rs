//! Claims with leases: which agent works a task, and until when its claim holds.
//!
//! A claim is taken atomically with the task's move to IN_PROGRESS (inside one store
//! transaction), so two racing claimers never get the same task. The lease is the holder's proof
//! of life: while it runs, no other agent may finish, block, cancel or reset the task without
//! force, and resume reconciliation leaves it alone. Once it lapses the task is reclaimable.
//! A claim written without an expiry (by another tool) counts as lapsed: nothing says its holder
//! is alive.

use chrono::Duration;

use crate::error::DomainError;
use crate::time::Timestamp;

use super::error::ProjectError;
use super::events::ProjectEvent;
use super::graph;
use super::limits::{self, Field};
use super::model::{Task, TaskDoc, TaskId, TaskStatus};
use super::tasks::MoveDetail;

/// The lease a claim or heartbeat gets when the caller names none.
pub const DEFAULT_LEASE: Duration = Duration::minutes(30);
/// The longest lease: past a day, a silent holder is more likely gone than working.
pub const MAX_LEASE: Duration = Duration::hours(24);

/// Who asks for a change to a task, and whether they override another agent's claim.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actor {
    /// `None` is a person (or a script) acting without an agent name: allowed on a claimed task,
    /// because people settle what agents leave behind.
    pub agent: Option<String>,
    pub force: bool,
}

/// Which task a claim takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimTarget {
    Task(TaskId),
    /// The task `next` would hand out, chosen inside the claim's transaction.
    Next,
}

impl Task {
    /// The holder of a live claim: claimed, with a lease that has not lapsed at `now`.
    pub fn live_holder(&self, now: Timestamp) -> Option<&str> {
        match (&self.claimed_by, self.lease_expires_at) {
            (Some(holder), Some(expires)) if expires > now => Some(holder),
            _ => None,
        }
    }

    /// Claimed, but the lease lapsed (or never had an expiry).
    pub fn lease_expired(&self, now: Timestamp) -> bool {
        self.claimed_by.is_some() && self.live_holder(now).is_none()
    }
}

fn check_agent(agent: &str) -> Result<&str, DomainError> {
    let agent = agent.trim();
    if agent.is_empty() {
        return Err(DomainError::invalid(
            "agent",
            "name the agent that holds the claim (a session id or a short name)",
        ));
    }
    limits::check(Field::Agent, agent)?;
    Ok(agent)
}

/// A lease as the callers measure it; one too long for a timestamp is refused like any lease
/// over [`MAX_LEASE`].
pub fn lease(lease: std::time::Duration) -> Result<Duration, DomainError> {
    let lease = Duration::from_std(lease).unwrap_or(Duration::MAX);
    check_lease(lease)?;
    Ok(lease)
}

fn check_lease(lease: Duration) -> Result<(), DomainError> {
    if lease <= Duration::zero() || lease > MAX_LEASE {
        return Err(DomainError::invalid(
            "lease",
            format!(
                "a lease runs from 1 second to {} hours; renew it with a heartbeat instead of asking for more",
                MAX_LEASE.num_hours()
            ),
        ));
    }
    Ok(())
}

/// Refuses `actor` changing `task` while another agent holds a live claim on it, unless forced.
pub fn check_actor(task: &Task, actor: &Actor, now: Timestamp) -> Result<(), DomainError> {
    let (Some(holder), Some(agent)) = (task.live_holder(now), actor.agent.as_deref()) else {
        return Ok(());
    };
    if actor.force || holder == agent.trim() {
        return Ok(());
    }
    Err(claimed(task, holder))
}

fn claimed(task: &Task, holder: &str) -> DomainError {
    ProjectError::Claimed {
        task: task.id.clone(),
        holder: holder.to_owned(),
        expires: task.lease_expires_at.unwrap_or_default(),
    }
    .into()
}

impl TaskDoc {
    /// Takes `target` for `agent` until `at + lease`: PENDING or RESEARCHED → IN_PROGRESS through
    /// the status table. The holder claiming again renews its lease; a task whose lease lapsed is
    /// taken over where it stands. Returns the claimed task's id and the events.
    pub fn claim(
        &mut self,
        target: &ClaimTarget,
        agent: &str,
        lease: Duration,
        at: Timestamp,
    ) -> Result<(TaskId, Vec<ProjectEvent>), DomainError> {
        let agent = check_agent(agent)?;
        check_lease(lease)?;
        let id = match target {
            ClaimTarget::Task(id) => id.clone(),
            ClaimTarget::Next => graph::next(self)
                .map(|t| t.id.clone())
                .ok_or(ProjectError::NothingToClaim)?,
        };
        let task = self
            .get(&id)
            .ok_or_else(|| ProjectError::UnknownTask { task: id.clone() })?;
        let mut events = Vec::new();
        let working = matches!(task.status, TaskStatus::InProgress | TaskStatus::Validating);
        if working && task.claimed_by.is_some() {
            match task.live_holder(at) {
                Some(holder) if holder == agent => {
                    return Ok((id.clone(), self.heartbeat(&id, agent, lease, at)?));
                }
                Some(holder) => return Err(claimed(task, holder)),
                None => events.push(ProjectEvent::LeaseExpired {
                    task: id.clone(),
                    agent: task.claimed_by.clone().unwrap_or_default(),
                    expired_at: task.lease_expires_at,
                }),
            }
        } else if !matches!(task.status, TaskStatus::Pending | TaskStatus::Researched) {
            // A claim takes ready work; it never reopens, unblocks or adopts a task.
            return Err(ProjectError::NotClaimable {
                task: id.clone(),
                status: task.status,
            }
            .into());
        } else {
            // Readiness and parents are the status table's and the move's to judge.
            events.extend(self.move_task(
                &id,
                TaskStatus::InProgress,
                MoveDetail::default(),
                at,
            )?);
        }
        let expires = at + lease;
        if let Some(task) = self.tasks.find_mut(|t| t.id == id) {
            task.claimed_by = Some(agent.to_owned());
            task.lease_expires_at = Some(expires);
        }
        events.push(ProjectEvent::TaskClaimed {
            task: id.clone(),
            agent: agent.to_owned(),
            expires_at: expires,
        });
        Ok((id, events))
    }

    /// Extends the holder's lease to `at + lease`. Only the holder may, and only while the task
    /// is still being worked on; a holder whose lease lapsed may renew it until someone else
    /// claims the task or reconciliation resets it.
    pub fn heartbeat(
        &mut self,
        id: &TaskId,
        agent: &str,
        lease: Duration,
        at: Timestamp,
    ) -> Result<Vec<ProjectEvent>, DomainError> {
        let agent = check_agent(agent)?;
        check_lease(lease)?;
        let task = self
            .tasks
            .iter_mut()
            .find(|t| &t.id == id)
            .ok_or_else(|| ProjectError::UnknownTask { task: id.clone() })?;
        let working = matches!(task.status, TaskStatus::InProgress | TaskStatus::Validating);
        if !working || task.claimed_by.as_deref() != Some(agent) {
            return Err(ProjectError::NotHolder {
                task: id.clone(),
                agent: agent.to_owned(),
                holder: task.claimed_by.clone().filter(|_| working),
                status: task.status,
            }
            .into());
        }
        let expires = at + lease;
        task.lease_expires_at = Some(expires);
        Ok(vec![ProjectEvent::LeaseRenewed {
            task: id.clone(),
            agent: agent.to_owned(),
            expires_at: expires,
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::model::ProjectId;
    use crate::project::tasks::NewTask;
    use chrono::TimeZone;

    fn t0() -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
    }

    fn doc(n: usize) -> TaskDoc {
        let mut doc = TaskDoc::new(ProjectId::try_from("p".to_owned()).unwrap());
        for i in 0..n {
            doc.add_task(NewTask::titled(format!("task {i}")), t0())
                .unwrap();
        }
        doc
    }

    fn id(n: u64) -> TaskId {
        TaskId::from_number(n)
    }

    fn actor(agent: &str) -> Actor {
        Actor {
            agent: Some(agent.to_owned()),
            force: false,
        }
    }

    #[test]
    fn claim_moves_a_ready_task_to_in_progress_and_records_the_lease() {
        let mut d = doc(1);
        let (claimed, events) = d
            .claim(&ClaimTarget::Task(id(1)), "a", DEFAULT_LEASE, t0())
            .unwrap();
        let task = d.get(&claimed).unwrap();
        assert_eq!(task.status, TaskStatus::InProgress);
        assert_eq!(task.claimed_by.as_deref(), Some("a"));
        assert_eq!(task.lease_expires_at, Some(t0() + DEFAULT_LEASE));
        assert!(matches!(
            events.last(),
            Some(ProjectEvent::TaskClaimed { .. })
        ));
    }

    #[test]
    fn a_live_claim_refuses_another_agent_and_renews_for_its_holder() {
        let mut d = doc(1);
        d.claim(&ClaimTarget::Task(id(1)), "a", DEFAULT_LEASE, t0())
            .unwrap();
        let before = d.clone();
        let err = d
            .claim(&ClaimTarget::Task(id(1)), "b", DEFAULT_LEASE, t0())
            .unwrap_err();
        assert!(err.to_string().contains("claimed by a"), "{err}");
        assert_eq!(d, before, "a refused claim changes nothing");
        let later = t0() + Duration::minutes(10);
        let (_, events) = d
            .claim(&ClaimTarget::Task(id(1)), "a", DEFAULT_LEASE, later)
            .unwrap();
        assert!(matches!(events[..], [ProjectEvent::LeaseRenewed { .. }]));
        assert_eq!(
            d.get(&id(1)).unwrap().lease_expires_at,
            Some(later + DEFAULT_LEASE)
        );
    }

    #[test]
    fn an_expired_lease_is_taken_over_and_logged() {
        let mut d = doc(1);
        d.claim(&ClaimTarget::Task(id(1)), "a", Duration::minutes(1), t0())
            .unwrap();
        let later = t0() + Duration::minutes(2);
        let (_, events) = d
            .claim(&ClaimTarget::Task(id(1)), "b", DEFAULT_LEASE, later)
            .unwrap();
        assert!(matches!(events[0], ProjectEvent::LeaseExpired { .. }));
        assert_eq!(d.get(&id(1)).unwrap().claimed_by.as_deref(), Some("b"));
    }

    #[test]
    fn claim_next_takes_the_next_ready_task_and_fails_when_none_is_left() {
        let mut d = doc(2);
        let (first, _) = d
            .claim(&ClaimTarget::Next, "a", DEFAULT_LEASE, t0())
            .unwrap();
        let (second, _) = d
            .claim(&ClaimTarget::Next, "b", DEFAULT_LEASE, t0())
            .unwrap();
        assert_ne!(first, second);
        let err = d
            .claim(&ClaimTarget::Next, "c", DEFAULT_LEASE, t0())
            .unwrap_err();
        assert!(matches!(
            err,
            DomainError::Project(ProjectError::NothingToClaim)
        ));
    }

    #[test]
    fn claims_follow_the_status_table() {
        let mut d = doc(1);
        d.move_task(&id(1), TaskStatus::InProgress, MoveDetail::default(), t0())
            .unwrap();
        // Started without a claim: someone's work, not a ready task.
        assert!(
            d.claim(&ClaimTarget::Task(id(1)), "a", DEFAULT_LEASE, t0())
                .is_err()
        );
    }

    #[test]
    fn bad_agents_and_leases_are_refused() {
        let mut d = doc(1);
        let target = ClaimTarget::Task(id(1));
        assert!(d.claim(&target, " ", DEFAULT_LEASE, t0()).is_err());
        assert!(d.claim(&target, "a", Duration::zero(), t0()).is_err());
        assert!(
            d.claim(&target, "a", MAX_LEASE + Duration::seconds(1), t0())
                .is_err()
        );
        assert!(
            d.claim(&target, &"x".repeat(200), DEFAULT_LEASE, t0())
                .is_err()
        );
        assert_eq!(d.get(&id(1)).unwrap().status, TaskStatus::Pending);
    }

    #[test]
    fn heartbeat_is_the_holders_only() {
        let mut d = doc(1);
        d.claim(&ClaimTarget::Task(id(1)), "a", DEFAULT_LEASE, t0())
            .unwrap();
        assert!(d.heartbeat(&id(1), "b", DEFAULT_LEASE, t0()).is_err());
        let later = t0() + Duration::hours(1);
        // Lapsed but not yet taken over: the holder may still renew.
        d.heartbeat(&id(1), "a", DEFAULT_LEASE, later).unwrap();
        assert_eq!(d.get(&id(1)).unwrap().live_holder(later), Some("a"));
    }

    #[test]
    fn only_another_agent_under_a_live_lease_is_refused() {
        let mut d = doc(1);
        d.claim(&ClaimTarget::Task(id(1)), "a", DEFAULT_LEASE, t0())
            .unwrap();
        let task = d.get(&id(1)).unwrap();
        assert!(check_actor(task, &actor("b"), t0()).is_err());
        assert!(check_actor(task, &actor("a"), t0()).is_ok());
        assert!(
            check_actor(task, &Actor::default(), t0()).is_ok(),
            "a person"
        );
        let forced = Actor {
            force: true,
            ..actor("b")
        };
        assert!(check_actor(task, &forced, t0()).is_ok());
        assert!(
            check_actor(task, &actor("b"), t0() + DEFAULT_LEASE).is_ok(),
            "lapsed"
        );
    }

    #[test]
    fn leaving_work_drops_the_claim() {
        let mut d = doc(1);
        d.claim(&ClaimTarget::Task(id(1)), "a", DEFAULT_LEASE, t0())
            .unwrap();
        d.move_task(&id(1), TaskStatus::Validating, MoveDetail::default(), t0())
            .unwrap();
        assert_eq!(d.get(&id(1)).unwrap().claimed_by.as_deref(), Some("a"));
        d.move_task(&id(1), TaskStatus::Complete, MoveDetail::default(), t0())
            .unwrap();
        let task = d.get(&id(1)).unwrap();
        assert_eq!(
            (task.claimed_by.as_ref(), task.lease_expires_at),
            (None, None)
        );
    }

    #[test]
    fn reconciliation_spares_another_agents_live_claim_only() {
        use crate::project::policy;
        let mut d = doc(3);
        d.claim(&ClaimTarget::Task(id(1)), "other", DEFAULT_LEASE, t0())
            .unwrap();
        d.claim(&ClaimTarget::Task(id(2)), "me", DEFAULT_LEASE, t0())
            .unwrap();
        d.move_task(&id(3), TaskStatus::InProgress, MoveDetail::default(), t0())
            .unwrap();
        let no_brief = |_: &TaskId| None;
        let ids = |now, session| -> Vec<TaskId> {
            policy::reconciliation(&d, &no_brief, now, session)
                .into_iter()
                .map(|r| r.task)
                .collect()
        };
        assert_eq!(
            ids(t0(), Some("me")),
            [id(2), id(3)],
            "this session's own claim"
        );
        assert_eq!(ids(t0(), None), [id(3)], "no session: only unclaimed work");
        let lapsed = t0() + DEFAULT_LEASE;
        assert_eq!(ids(lapsed, None), [id(1), id(2), id(3)], "expired leases");
        let reasons = policy::reconciliation(&d, &no_brief, lapsed, None);
        assert!(reasons[0].reason.contains("lease expired"));
    }

    #[test]
    fn a_live_lease_is_never_stale() {
        use crate::project::policy;
        let mut d = doc(1);
        d.tasks[0].estimate_minutes = Some(1);
        d.claim(&ClaimTarget::Task(id(1)), "a", MAX_LEASE, t0())
            .unwrap();
        let later = t0() + Duration::hours(1);
        assert!(policy::stale_candidates(&d, later).is_empty());
        assert_eq!(policy::stale_candidates(&d, t0() + MAX_LEASE), [id(1)]);
    }
}
