//! The engine in a cluster of nodes on one PostgreSQL database. A node runs
//! a session's turns only while it holds the session's lease
//! ([`store::Cluster::acquire`]); an operation on a session another node
//! holds (new input, conversation items, a cancel, a function's result) is
//! left in the session's inbox as an [`Op`], and the holder, told by a
//! notice, performs it and answers with an [`Outcome`]. A lease goes once
//! nothing on its node needs it (no worker, no operation in progress).
//!
//! Every node also watches for lost nodes: an expired lease is taken over,
//! the turns its node left are failed (`node_lost`), and what waits in the
//! session's inbox is performed here.

use crate::error::{Error, Result};
use crate::runtime::{Engine, Inner};
use crate::waiting::Answer;
use protocol::event::Event;
use protocol::ids::{SessionId, TurnId};
use protocol::item::{Content, Role};
use protocol::turn::Turn;
use protocol::turn_settings::NewTurn;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use store::cluster::leases::{Lease, TakenOver};
use store::cluster::notices::{Heard, Notice};
use tokio::sync::{broadcast, oneshot};

/// How long an operation waits for the node that holds its session (a lost
/// holder's lease is taken over, and its inbox answered, well within it).
const ASK_TIMEOUT: Duration = Duration::from_secs(30);
/// How often lost nodes' leases and unanswered inboxes are looked for.
const WATCH: Duration = store::cluster::HEARTBEAT;
/// How long a node keeps a session's lease once nothing needs it: the next
/// turn of a conversation, here or sent to another node (which asks this
/// one), needs no new lease — taking one is a commit, and the history
/// cached here stays good.
const IDLE_LEASE: Duration = Duration::from_secs(5);
/// An inbox older than this with no holder is answered by whoever sees it.
const ORPHAN_AGE: Duration = Duration::from_secs(2);
/// Answers kept for a request whose sender has not started waiting yet.
const EARLY_REPLIES: usize = 1024;

/// What a node asks of the node that holds a session.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Op {
    Input { turn_id: TurnId, messages: Vec<Vec<Content>>, new: NewTurn },
    Append { turn_id: TurnId, messages: Vec<(Role, Vec<Content>)> },
    Cancel { only: Option<TurnId> },
    Answer { turn_id: TurnId, answer: Answer },
}

/// Where an operation on a session runs.
pub(crate) enum Held {
    /// On this node, which holds the session's lease now.
    Here,
    /// On the node that holds it, or `Some` node that alone may (its environment's).
    There(Option<String>),
}

/// The holder's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum Outcome {
    Done { turn_id: Option<TurnId> },
    NoActiveTurn,
    UnknownToolCall { call_id: String },
    QueueFull { limit: usize },
    Unavailable,
    EnvironmentUnavailable { environment: String, node: String },
    Failed { message: String },
}

impl Outcome {
    fn of(done: Result<Option<TurnId>>) -> Self {
        match done {
            Ok(turn_id) => Outcome::Done { turn_id },
            Err(Error::NoActiveTurn) => Outcome::NoActiveTurn,
            Err(Error::UnknownToolCall { call_id }) => Outcome::UnknownToolCall { call_id },
            Err(Error::QueueFull { limit }) => Outcome::QueueFull { limit },
            Err(Error::Unavailable) => Outcome::Unavailable,
            Err(Error::EnvironmentUnavailable { environment, node }) => {
                Outcome::EnvironmentUnavailable { environment, node }
            }
            Err(Error::Store(e)) if e.is_unavailable() => Outcome::Unavailable,
            Err(e) => Outcome::Failed { message: e.to_string() },
        }
    }

    fn into_result(self) -> Result<Option<TurnId>> {
        match self {
            Outcome::Done { turn_id } => Ok(turn_id),
            Outcome::NoActiveTurn => Err(Error::NoActiveTurn),
            Outcome::UnknownToolCall { call_id } => Err(Error::UnknownToolCall { call_id }),
            Outcome::QueueFull { limit } => Err(Error::QueueFull { limit }),
            Outcome::Unavailable => Err(Error::Unavailable),
            Outcome::EnvironmentUnavailable { environment, node } => {
                Err(Error::EnvironmentUnavailable { environment, node })
            }
            Outcome::Failed { message } => Err(Error::Invalid(message)),
        }
    }
}

/// This node's membership, as the engine uses it.
pub(crate) struct Node {
    pub(crate) cluster: Arc<store::Cluster>,
    replies: Mutex<Replies>,
    /// One inbox is answered at a time, in order.
    drains: tokio::sync::Mutex<()>,
}

/// Senders waiting for answers, and answers that came before their sender waited.
#[derive(Default)]
struct Replies {
    waiting: HashMap<i64, oneshot::Sender<String>>,
    early: VecDeque<(i64, String)>,
}

impl Node {
    fn replies(&self) -> std::sync::MutexGuard<'_, Replies> {
        self.replies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the answer to `request` arrives.
    fn wait_for(&self, request: i64) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        let mut replies = self.replies();
        match replies.early.iter().position(|(id, _)| *id == request) {
            Some(at) => {
                if let Some((_, outcome)) = replies.early.remove(at) {
                    let _ = tx.send(outcome);
                }
            }
            None => {
                replies.waiting.insert(request, tx);
            }
        }
        rx
    }

    fn answered(&self, request: i64, outcome: String) {
        let mut replies = self.replies();
        match replies.waiting.remove(&request) {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            // Another node's request (its own node waits for it), or one whose sender has not started waiting.
            None => {
                if replies.early.len() >= EARLY_REPLIES {
                    replies.early.pop_front();
                }
                replies.early.push_back((request, outcome));
            }
        }
    }
}

impl Engine {
    /// Joins `cluster`: event numbers carry its slot and follow the
    /// database's clock, other nodes' events reach this node's subscribers,
    /// inboxes of the sessions this node holds are answered, and lost
    /// nodes' sessions are taken over. Call once, before any submission.
    pub fn join(&self, cluster: Arc<store::Cluster>) {
        self.inner.bus.clock().join(cluster.slot(), cluster.clock_offset_micros());
        self.inner.bus.follow(Arc::clone(&self.inner.store), cluster.notices(), cluster.slot());
        let notices = cluster.notices();
        let lost = self.inner.journal.leases().subscribe();
        let node = Node { cluster, replies: Mutex::default(), drains: tokio::sync::Mutex::new(()) };
        if self.inner.cluster.set(node).is_err() {
            return;
        }
        // Both end with the engine (they hold it weakly): its cluster membership ends with it.
        tokio::spawn(hear(Arc::downgrade(&self.inner), notices));
        tokio::spawn(watch(Arc::downgrade(&self.inner)));
        tokio::spawn(crate::fence::stop_lost(Arc::downgrade(&self.inner), lost));
    }

    pub(crate) fn cluster(&self) -> Option<&store::Cluster> {
        self.inner.cluster.get().map(|n| n.cluster.as_ref())
    }

    /// A node of this node's cluster, as the database sees it.
    pub async fn node_view(&self, id: &str) -> Result<Option<store::NodeView>> {
        match self.cluster() {
            Some(cluster) => Ok(cluster.node_view(id).await?),
            None => Ok(None),
        }
    }

    /// This node's id in its cluster, if it is in one.
    pub fn node_id(&self) -> Option<String> {
        self.cluster().map(|c| c.node().id.clone())
    }

    /// Where an operation on the session runs: here when this node holds its
    /// lease or can take it (no node holds it, and its environment, if any,
    /// lives here); without a cluster, always here. `Here` is paired with
    /// [`Engine::let_go`]. A session whose environment lives on a node that
    /// is gone cannot run anywhere: an error saying so (and an
    /// `agent.session.environment.disconnected` on the session).
    pub(crate) async fn hold(&self, org_id: &str, session: SessionId) -> Result<Held> {
        let Some(cluster) = self.cluster() else { return Ok(Held::Here) };
        {
            let mut slots = self.slots();
            if let Some(slot) = slots.get_mut(&session) {
                // What ran under a lost lease is still stopping: the operation waits in the
                // inbox for the new holder (or for whoever takes the lease once it is free).
                if slot.lost {
                    return Ok(Held::There(None));
                }
                if slot.lease.is_some() && !slot.releasing {
                    slot.holders += 1;
                    return Ok(Held::Here);
                }
            }
        }
        if let Some((environment, node)) = self.home(org_id, session).await?
            && node != cluster.node().id
        {
            let alive = cluster.node_view(&node).await?.is_some_and(|n| n.alive);
            if !alive {
                self.disconnected(session, &environment, &node);
                return Err(Error::EnvironmentUnavailable { environment: environment.to_string(), node });
            }
            return Ok(Held::There(Some(node)));
        }
        let Some(lease) = cluster.acquire(session).await? else { return Ok(Held::There(None)) };
        self.took(org_id, session, lease);
        Ok(Held::Here)
    }

    /// The session's environment and the node it lives on, if it has one.
    async fn home(&self, org_id: &str, session: SessionId) -> Result<Option<(protocol::ids::EnvironmentId, String)>> {
        match &self.inner.hosted {
            Some(hosted) => Ok(hosted.home(org_id, session).await?),
            None => Ok(None),
        }
    }

    /// Tells the session's subscribers its environment's node is gone.
    fn disconnected(&self, session: SessionId, environment: &protocol::ids::EnvironmentId, node: &str) {
        let state = protocol::event::EnvironmentState {
            id: environment.clone(),
            status: "disconnected".into(),
            kind: "openai_hosted".into(),
            error: Some(protocol::event::EnvironmentStateError {
                code: "environment_unavailable".into(),
                message: format!("the node '{node}' that runs this environment is not running"),
                kind: "environment_error".into(),
            }),
            setup: None,
        };
        let body = protocol::event::EventBody::EnvironmentDisconnected {
            session_id: session,
            turn_id: None,
            environment: state,
        };
        self.inner.bus.publish(session, vec![body]);
    }

    /// Records a lease this node took (held by one operation).
    fn took(&self, org_id: &str, session: SessionId, lease: Lease) {
        // Numbers from here on pass what the previous holder handed out.
        self.inner.bus.clock().observe(lease.last_seq);
        // Another node may have added to its history.
        self.inner.histories.invalidate(session);
        let mut slots = self.slots();
        let slot = slots.entry(session).or_default();
        slot.lease = Some(slot.lease.map_or(lease.epoch, |e| e.max(lease.epoch)));
        self.inner.journal.leases().hold(session, lease.epoch);
        slot.releasing = false;
        slot.holders += 1;
        if !org_id.is_empty() {
            slot.org_id = org_id.to_string();
        }
    }

    /// Ends an operation that [`Engine::hold`] let run; the lease goes a
    /// while after nothing else needs it.
    pub(crate) fn let_go(&self, session: SessionId) {
        if self.cluster().is_none() {
            return;
        }
        if let Some(slot) = self.slots().get_mut(&session) {
            slot.holders = slot.holders.saturating_sub(1);
        }
        self.release_when_idle(session);
    }

    /// Once nothing needs the session's lease, it is given up when nothing
    /// has for [`IDLE_LEASE`] (a use meanwhile keeps it, and the next idle
    /// moment starts the wait again).
    pub(crate) fn release_when_idle(&self, session: SessionId) {
        let since = std::time::Instant::now();
        {
            let mut slots = self.slots();
            let Some(slot) = slots.get_mut(&session) else { return };
            if !slot.unused() || slot.releasing {
                return;
            }
            slot.idle_since = Some(since);
        }
        // Weak: a stopped engine leaves (and so gives up) its leases itself.
        let engine = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            tokio::time::sleep(IDLE_LEASE).await;
            let Some(inner) = engine.upgrade() else { return };
            let this = Engine { inner };
            let epoch = {
                let mut slots = this.slots();
                let Some(slot) = slots.get_mut(&session) else { return };
                if !slot.unused() || slot.releasing || slot.idle_since != Some(since) {
                    return;
                }
                slot.releasing = true;
                // Writes from here on are not made under it (those before are flushed first).
                this.inner.journal.leases().unhold(session);
                slot.lease
            };
            this.release(session, epoch).await;
        });
    }

    /// Gives up the lease once this node's writes to the session are
    /// committed (the next holder continues after them); answers what
    /// arrived in its inbox meanwhile.
    pub(crate) async fn release(&self, session: SessionId, epoch: Option<i64>) {
        let Some(cluster) = self.cluster() else { return };
        let released = match (self.flush().await, epoch) {
            (Ok(()), Some(epoch)) => cluster.release(session, epoch).await.map_err(Error::from),
            (Ok(()), None) => Ok(false),
            (Err(e), _) => Err(e),
        };
        let (waiting, org_id) = {
            let mut slots = self.slots();
            let org_id = slots.get(&session).map(|s| s.org_id.clone()).unwrap_or_default();
            let waiting = match &released {
                // Kept: the lease stays this node's (renewed) until the next operation here.
                Err(_) => {
                    if let Some(slot) = slots.get_mut(&session) {
                        slot.releasing = false;
                        if let Some(epoch) = slot.lease {
                            self.inner.journal.leases().hold(session, epoch);
                        }
                    }
                    false
                }
                // Gone, unless an operation took it again meanwhile.
                Ok(waiting) => {
                    if slots.get(&session).is_some_and(|s| s.releasing) {
                        slots.remove(&session);
                        self.inner.journal.leases().forget(session);
                    }
                    *waiting
                }
            };
            (waiting, org_id)
        };
        if let Err(e) = released {
            tracing::warn!(%session, error = %e, "a session's lease could not be given up; kept");
        }
        if waiting {
            self.spawn_drain(&org_id, session);
        }
    }

    /// Leaves `op` for the node that holds the session and waits for its
    /// answer (a turn's id for new input).
    pub(crate) async fn ask(
        &self,
        org_id: &str,
        session: SessionId,
        op: Op,
        target: Option<String>,
    ) -> Result<Option<TurnId>> {
        let Some(node) = self.inner.cluster.get() else { return Err(Error::Unavailable) };
        let doc = serde_json::to_string(&op).map_err(|e| Error::Invalid(e.to_string()))?;
        let request = node.cluster.push(session, org_id, &doc, target.as_deref()).await?;
        let answer = node.wait_for(request);
        // The holder may have let go as the request arrived: then this node answers it.
        if target.is_none() {
            self.spawn_drain(org_id, session);
        }
        let outcome = self.answer(org_id, session, request, answer, target.as_deref()).await?;
        let outcome: Outcome = serde_json::from_str(&outcome).map_err(|e| Error::Invalid(e.to_string()))?;
        outcome.into_result()
    }

    /// Live events of a session from now on, with the number after which
    /// they count. For a session this node does not run, that is the last
    /// one stored: another node's clock may trail this one's.
    pub async fn subscribe_now(&self, session: SessionId) -> Result<(broadcast::Receiver<Arc<Event>>, i64)> {
        let (rx, floor) = self.inner.bus.subscribe_now(session);
        let here = self.slots().get(&session).is_some_and(|s| s.lease.is_some());
        if self.cluster().is_none() || here {
            return Ok((rx, floor));
        }
        Ok((rx, self.inner.store.last_event_seq(session).await?))
    }

    /// Waits for the answer to `request`; the node that alone may give it
    /// (`target`) is watched meanwhile, so its loss is told at once.
    async fn answer(
        &self,
        org_id: &str,
        session: SessionId,
        request: i64,
        mut answer: oneshot::Receiver<String>,
        target: Option<&str>,
    ) -> Result<String> {
        let deadline = tokio::time::Instant::now() + ASK_TIMEOUT;
        loop {
            match tokio::time::timeout(WATCH, &mut answer).await {
                Ok(Ok(outcome)) => return Ok(outcome),
                Ok(Err(_)) => return Err(Error::Unavailable),
                Err(_) => {}
            }
            if let Some(node) = target
                && !self.node_view(node).await?.is_some_and(|n| n.alive)
            {
                let environment = self.home(org_id, session).await?.map(|(env, _)| env);
                if let Some(env) = &environment {
                    self.disconnected(session, env, node);
                }
                let environment = environment.map(|e| e.to_string()).unwrap_or_default();
                return Err(Error::EnvironmentUnavailable { environment, node: node.to_string() });
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(%session, request, "the node holding the session did not answer");
                return Err(Error::Unavailable);
            }
        }
    }

    /// A turn as stored, after another node created it.
    pub(crate) async fn stored_turn(&self, org_id: &str, turn_id: TurnId) -> Result<Turn> {
        self.inner.store.get_turn(org_id, turn_id).await?.ok_or(Error::Unavailable)
    }

    /// [`Engine::drain`] on a task of its own. Boxed: a drain submits input,
    /// which may start a worker, which drains when it lets go (a cycle of
    /// futures whose `Send` the compiler cannot see through otherwise).
    fn spawn_drain(&self, org_id: &str, session: SessionId) {
        let engine = self.clone();
        let org_id = org_id.to_string();
        let drain: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
            Box::pin(async move { engine.drain(&org_id, session).await });
        tokio::spawn(drain);
    }

    /// Answers a session's inbox if this node holds the session or can take it.
    async fn drain(&self, org_id: &str, session: SessionId) {
        let Some(node) = self.inner.cluster.get() else { return };
        let _one = node.drains.lock().await;
        match self.hold(org_id, session).await {
            Ok(Held::Here) => {}
            Ok(Held::There(_)) => return,
            Err(e) => {
                tracing::warn!(%session, error = %e, "a session's inbox could not be answered");
                return;
            }
        }
        self.answer_inbox(node, session).await;
        self.let_go(session);
    }

    /// Performs and answers every request waiting for a session this node holds.
    async fn answer_inbox(&self, node: &Node, session: SessionId) {
        let entries = match node.cluster.take_inbox(session).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(%session, error = %e, "a session's inbox could not be read");
                return;
            }
        };
        for entry in entries {
            let done = match serde_json::from_str::<Op>(&entry.doc) {
                Ok(op) => match self.misplaced(&entry.org_id, session).await {
                    Some(refused) => Err(refused),
                    None => self.perform(&entry.org_id, session, op).await,
                },
                Err(e) => Err(Error::Invalid(format!("a request this node does not understand: {e}"))),
            };
            let outcome = serde_json::to_string(&Outcome::of(done)).unwrap_or_default();
            if let Err(e) = node.cluster.reply(entry.id, &outcome).await {
                tracing::warn!(%session, request = entry.id, error = %e, "an answer could not be sent");
            }
        }
    }

    /// Why the session cannot run here although this node took it over (its
    /// environment lives on another node: the lost one).
    async fn misplaced(&self, org_id: &str, session: SessionId) -> Option<Error> {
        let me = self.node_id()?;
        match self.home(org_id, session).await {
            Ok(Some((environment, node))) if node != me => {
                self.disconnected(session, &environment, &node);
                Some(Error::EnvironmentUnavailable { environment: environment.to_string(), node })
            }
            Ok(_) => None,
            Err(e) => Some(e),
        }
    }

    /// One request, on the node that holds the session.
    async fn perform(&self, org_id: &str, session_id: SessionId, op: Op) -> Result<Option<TurnId>> {
        let session = || async {
            self.inner
                .store
                .get_session(org_id, session_id)
                .await?
                .ok_or(Error::Invalid("the session was deleted".into()))
        };
        match op {
            Op::Input { turn_id, messages, new } => {
                let session = session().await?;
                self.submit_here(org_id, &session, turn_id, messages, new).await.map(|t| Some(t.id))
            }
            Op::Append { turn_id, messages } => {
                let session = session().await?;
                self.append_here(org_id, &session, turn_id, messages).await.map(|t| Some(t.id))
            }
            Op::Cancel { only } => self.cancel_here(org_id, session_id, only).await.map(Some),
            Op::Answer { turn_id, answer } => self.answer_here(session_id, turn_id, answer).map(|()| None),
        }
    }

    /// Answers the inboxes of those of `sessions` held here (or meant for this node).
    fn drain_held(&self, sessions: Vec<(SessionId, String, bool)>) {
        for (session, org_id, for_me) in sessions {
            let held = self.slots().get(&session).is_some_and(|s| s.lease.is_some() && !s.releasing);
            if held || for_me {
                self.spawn_drain(&org_id, session);
            }
        }
    }

    /// Takes over lost nodes' sessions and answers inboxes nobody holds.
    async fn look_for_lost(&self, node: &Node) {
        match node.cluster.take_expired(50).await {
            Ok(taken) => {
                for lost in taken {
                    self.take_over(node, lost).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "looking for lost nodes' sessions failed"),
        }
        match node.cluster.orphaned_inboxes(ORPHAN_AGE).await {
            Ok(sessions) => {
                for (session, org_id) in sessions {
                    self.drain(&org_id, session).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "looking for unanswered inboxes failed"),
        }
    }

    /// Settles a lost node's session: its open turns failed, its inbox answered.
    async fn take_over(&self, node: &Node, lost: TakenOver) {
        let session = lost.session;
        self.took("", session, lost.lease);
        match self.settle_lost(session, &lost.node).await {
            Ok(0) => {}
            Ok(failed) => tracing::warn!(%session, node = %lost.node, failed, "failed the turns of a lost node"),
            Err(e) => tracing::error!(%session, error = %e, "a lost node's turns could not be settled"),
        }
        {
            let _one = node.drains.lock().await;
            self.answer_inbox(node, session).await;
        }
        self.let_go(session);
    }
}

/// Follows the cluster's notices for the engine: inbox requests for sessions
/// held here, answers to this node's requests.
async fn hear(engine: Weak<Inner>, mut notices: broadcast::Receiver<Heard>) {
    loop {
        let heard = notices.recv().await;
        let Some(inner) = engine.upgrade() else { return };
        let engine = Engine { inner };
        let sessions = match heard {
            Ok(Heard { notice: Notice::Inbox { session, org, target }, .. }) => {
                let for_me = target.is_some() && target == engine.node_id();
                vec![(session, org, for_me)]
            }
            Ok(Heard { notice: Notice::Reply { request, outcome }, .. }) => {
                if let Some(node) = engine.inner.cluster.get() {
                    node.answered(request, outcome);
                }
                continue;
            }
            // An inbox notice may have been lost: look at every session held here.
            Ok(Heard { notice: Notice::Missed, .. }) | Err(broadcast::error::RecvError::Lagged(_)) => {
                engine.slots().iter().map(|(id, slot)| (*id, slot.org_id.clone(), false)).collect()
            }
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        engine.drain_held(sessions);
    }
}

/// Every [`WATCH`]: looks for lost nodes' sessions and unanswered inboxes.
async fn watch(engine: Weak<Inner>) {
    let mut tick = tokio::time::interval(WATCH);
    // The first look one interval after the start: what this node's previous
    // process left is [`Engine::recover`]'s.
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(inner) = engine.upgrade() else { return };
        let engine = Engine { inner };
        let Some(node) = engine.inner.cluster.get() else { return };
        engine.look_for_lost(node).await;
    }
}
