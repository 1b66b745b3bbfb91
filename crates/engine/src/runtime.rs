//! [`Engine`]: accepts submissions and runs each session's turns, one at a
//! time and in order, on a worker task that lives while the session has work.
//! In a cluster, a node runs a session's turns only while it holds the
//! session's lease; what arrives for a session another node holds goes to
//! that node (`crate::cluster`).

use crate::bus::Bus;
use crate::cluster::{Held, Op};
use crate::error::{Error, Result};
use crate::histories::Histories;
use crate::journal::Journal;
use crate::record::{Recorder, now};
use crate::tools::{HostedToolsFactory, ToolSet};
use crate::turn::{Ending, TurnRun};
use crate::waiting::Answer;
use models::Registry;
use protocol::event::EventBody;
use protocol::ids::{SessionId, TurnId};
use protocol::item::{Content, Item, ItemStatus, Role, new_item_id};
use protocol::session::{SessionRecord, SessionStatus};
use protocol::turn::{Turn, TurnError, TurnStatus};
use protocol::turn_settings::NewTurn;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use store::{Store, Write};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Most turns a session may have waiting to run (the running one aside): each
/// is a paid model call, and a runaway client must not queue thousands.
pub const MAX_QUEUED_TURNS: usize = 100;

/// The turn a session's worker is running.
struct Active {
    turn_id: TurnId,
    cancel: CancellationToken,
    results: mpsc::UnboundedSender<Answer>,
    /// What the turn waits for ([`Answer::key`]); an answer is accepted once.
    pending: HashSet<String>,
}

/// The channel of a revived turn, made when its [`Active`] was put in place.
struct Prepared {
    cancel: CancellationToken,
    results: mpsc::UnboundedReceiver<Answer>,
}

/// A submitted turn waiting for the session's worker.
struct Queued {
    org_id: String,
    turn_id: TurnId,
    /// The turn and its input as submitted (a queued turn changes only by
    /// being cancelled, which takes it out of the queue).
    turn: Turn,
    input: Vec<Item>,
    /// The journal position before the turn's own writes: what it must wait
    /// for before reading its history.
    before: u64,
    /// A turn a previous process left waiting, revived: it waits again.
    resumed: bool,
    prepared: Option<Prepared>,
    /// Told once the worker takes the turn up (see [`Engine::submit_here`]).
    started: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A session's queue and its running turn.
#[derive(Default)]
pub(crate) struct Slot {
    queued: VecDeque<Queued>,
    running: bool,
    active: Option<Active>,
    /// In a cluster: the epoch of this node's lease of the session.
    pub(crate) lease: Option<i64>,
    /// The lease is being given up (a new operation takes it again).
    pub(crate) releasing: bool,
    /// Another node took the lease over while this node still ran the
    /// session: its writes are refused, and nothing new runs here until what
    /// ran has stopped and the lease is given up ([`crate::fence`]).
    pub(crate) lost: bool,
    /// Operations in progress that need the lease kept.
    pub(crate) holders: usize,
    /// The session's organization (as the operation that took the lease named it).
    pub(crate) org_id: String,
    /// Since when nothing has needed the lease (it is kept a while: the
    /// next turn of a conversation finds it here).
    pub(crate) idle_since: Option<std::time::Instant>,
}

impl Slot {
    /// Nothing needs the session's lease any more.
    pub(crate) fn unused(&self) -> bool {
        self.holders == 0 && !self.running && self.queued.is_empty()
    }

    /// Drops the queued turns and cancels the running one.
    pub(crate) fn stop(&mut self) {
        self.queued.clear();
        if let Some(a) = &self.active {
            a.cancel.cancel();
        }
    }
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    models: Registry,
    pub(crate) journal: Arc<Journal>,
    pub(crate) bus: Arc<Bus>,
    pub(crate) hosted: Option<Arc<dyn HostedToolsFactory>>,
    pub(crate) metrics: Arc<telemetry::Metrics>,
    // Held only for short, non-async critical sections.
    slots: Mutex<HashMap<SessionId, Slot>>,
    pub(crate) histories: Histories,
    /// This node's membership of a cluster, once it joined one.
    pub(crate) cluster: std::sync::OnceLock<crate::cluster::Node>,
}

/// The engine; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

/// How often an aborted turn's failure is tried while the database is
/// unreachable (with a growing pause up to 2 s: about a minute in all).
const FAIL_ATTEMPTS: usize = 35;

impl Engine {
    /// Starts the engine and its journal writer (within a Tokio runtime),
    /// recording into `metrics`.
    pub async fn new(
        store: Arc<dyn Store>,
        models: Registry,
        hosted: Option<Arc<dyn HostedToolsFactory>>,
        metrics: Arc<telemetry::Metrics>,
    ) -> Result<Self> {
        let journal = Journal::start(store.batch_writer()?, Arc::clone(&metrics))
            .map_err(|e| store::Error::Writer(e.to_string()))?;
        let journal = Arc::new(journal);
        let bus = Arc::new(Bus::new(&store, Arc::clone(&journal), &metrics).await?);
        let (slots, histories) = (Mutex::default(), Histories::default());
        let cluster = std::sync::OnceLock::new();
        let inner = Inner { store, models, journal, bus, hosted, metrics, slots, histories, cluster };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Waits until every change the engine made so far is in the store; call
    /// before reading what the engine writes (turns, items, session state).
    pub async fn flush(&self) -> Result<()> {
        self.inner.bus.flush().await
    }

    pub(crate) fn recorder(&self, org_id: &str, session: SessionRecord, turn: Turn) -> Recorder {
        let (journal, bus, metrics) =
            (Arc::clone(&self.inner.journal), Arc::clone(&self.inner.bus), Arc::clone(&self.inner.metrics));
        Recorder::new(journal, bus, metrics, org_id.to_string(), session, turn)
    }

    fn write(&self, write: Write) {
        self.inner.journal.write(write);
    }

    pub fn bus(&self) -> &Arc<Bus> {
        &self.inner.bus
    }

    pub(crate) fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Slot>> {
        self.inner.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Commits a new queued turn with the user's messages and schedules it
    /// (on the node that runs the session).
    pub async fn submit_input(
        &self,
        org_id: &str,
        session: &SessionRecord,
        messages: Vec<Vec<Content>>,
        new: NewTurn,
    ) -> Result<Turn> {
        let turn_id = TurnId::new();
        if let Held::There(target) = self.hold(org_id, session.id).await? {
            self.ask(org_id, session.id, Op::Input { turn_id, messages, new }, target).await?;
            return self.stored_turn(org_id, turn_id).await;
        }
        let done = self.submit_here(org_id, session, turn_id, messages, new).await;
        self.let_go(session.id);
        done
    }

    /// [`Engine::submit_input`] on the node that holds the session.
    pub(crate) async fn submit_here(
        &self,
        org_id: &str,
        session: &SessionRecord,
        turn_id: TurnId,
        messages: Vec<Vec<Content>>,
        new: NewTurn,
    ) -> Result<Turn> {
        // Here, where the queue lives, so the limit holds whichever node took the request.
        if self.slots().get(&session.id).is_some_and(|s| s.queued.len() >= MAX_QUEUED_TURNS) {
            return Err(Error::QueueFull { limit: MAX_QUEUED_TURNS });
        }
        let mut turn = Turn::queued(turn_id, session.id, &session.agent.id, now());
        turn.background = new.background;
        turn.settings = new.settings.filter(|s| !s.is_empty());
        let before = self.inner.journal.position();
        self.write(Write::Turn { org_id: org_id.to_string(), turn: turn.clone() });
        let mut input = Vec::new();
        let mut events = vec![EventBody::TurnCreated { session_id: session.id, turn_id: turn.id, turn: turn.clone() }];
        for content in messages {
            let item = Item::Message {
                id: new_item_id(),
                turn_id: turn.id,
                role: Role::User,
                status: ItemStatus::Completed,
                content,
                phase: None,
            };
            self.write(Write::Item { org_id: org_id.to_string(), session_id: session.id, item: item.clone() });
            input.push(item.clone());
            events.push(EventBody::ItemAdded { session_id: session.id, turn_id: turn.id, output_index: None, item });
        }
        // Committed by the flush below, once the worker is on its way.
        self.inner.bus.queue(session.id, events);
        let turn_id = turn.id;
        let (started_tx, started) = tokio::sync::oneshot::channel();
        // The worker starts from the turn and input in memory while the
        // journal commits them: the model is asked at once, and the caller
        // hears of the turn only once it is durable.
        let queued = Queued {
            org_id: org_id.to_string(),
            turn_id,
            turn: turn.clone(),
            input,
            before,
            resumed: false,
            prepared: None,
            started: Some(started_tx),
        };
        let start = {
            let mut slots = self.slots();
            let slot = slots.entry(session.id).or_default();
            slot.queued.push_back(queued);
            !std::mem::replace(&mut slot.running, true)
        };
        if start {
            let engine = self.clone();
            let session_id = session.id;
            tokio::spawn(async move { engine.work(session_id).await });
            // The worker goes first: it asks the model before this commit
            // takes a core (on a small machine the commit would otherwise
            // delay the model's request by its own length). A worker that
            // stops early drops the sender, which ends the wait too.
            let _ = started.await;
        }
        self.flush().await?;
        self.written(session.id, before)?;
        Ok(turn)
    }

    /// An error when the store refused the session's writes queued after
    /// `before` (another node took the session over while this one was cut
    /// off): the caller must not hear of a turn that was never written, and
    /// may send the request again (the node holding the session takes it).
    fn written(&self, session_id: SessionId, before: u64) -> Result<()> {
        if self.inner.journal.refused(session_id, before) {
            return Err(Error::Unavailable);
        }
        Ok(())
    }

    /// Adds messages to a session's history without running the model: they
    /// are stored as one completed turn (conversation items added directly).
    pub async fn append_messages(
        &self,
        org_id: &str,
        session: &SessionRecord,
        messages: Vec<(Role, Vec<Content>)>,
    ) -> Result<Turn> {
        let turn_id = TurnId::new();
        if let Held::There(target) = self.hold(org_id, session.id).await? {
            self.ask(org_id, session.id, Op::Append { turn_id, messages }, target).await?;
            return self.stored_turn(org_id, turn_id).await;
        }
        let done = self.append_here(org_id, session, turn_id, messages).await;
        self.let_go(session.id);
        done
    }

    /// [`Engine::append_messages`] on the node that holds the session.
    pub(crate) async fn append_here(
        &self,
        org_id: &str,
        session: &SessionRecord,
        turn_id: TurnId,
        messages: Vec<(Role, Vec<Content>)>,
    ) -> Result<Turn> {
        self.inner.histories.invalidate(session.id);
        let before = self.inner.journal.position();
        let at = now();
        let mut turn = Turn::queued(turn_id, session.id, &session.agent.id, at);
        turn.status = TurnStatus::Completed;
        turn.started_at = Some(at);
        turn.completed_at = Some(at);
        self.write(Write::Turn { org_id: org_id.to_string(), turn: turn.clone() });
        let sid = session.id;
        let mut events = vec![EventBody::TurnCreated { session_id: sid, turn_id: turn.id, turn: turn.clone() }];
        for (role, content) in messages {
            let item = Item::Message {
                id: new_item_id(),
                turn_id: turn.id,
                role,
                status: ItemStatus::Completed,
                content,
                phase: None,
            };
            self.write(Write::Item { org_id: org_id.to_string(), session_id: session.id, item: item.clone() });
            events.push(EventBody::ItemAdded { session_id: sid, turn_id: turn.id, output_index: None, item });
        }
        events.push(EventBody::TurnCompleted { session_id: sid, turn_id: turn.id, turn: turn.clone(), usage: None });
        self.inner.bus.publish(session.id, events);
        // Durable before anything runs and before the caller hears of it.
        self.flush().await?;
        self.written(session.id, before)?;
        Ok(turn)
    }

    /// Hands an answer (a client function's result, an approval decision) to
    /// the turn waiting for it (on the node that runs it).
    pub async fn submit_answer(
        &self,
        org_id: &str,
        session_id: SessionId,
        turn_id: TurnId,
        answer: Answer,
    ) -> Result<()> {
        if self.is_running_here(session_id) {
            return self.answer_here(session_id, turn_id, answer);
        }
        if let Held::There(target) = self.hold(org_id, session_id).await? {
            self.ask(org_id, session_id, Op::Answer { turn_id, answer }, target).await?;
            return Ok(());
        }
        let done = self.answer_here(session_id, turn_id, answer);
        self.let_go(session_id);
        done
    }

    /// Whether this node runs a turn of the session now.
    fn is_running_here(&self, session_id: SessionId) -> bool {
        self.slots().get(&session_id).is_some_and(|s| s.active.is_some())
    }

    /// [`Engine::submit_answer`] on the node that holds the session.
    pub(crate) fn answer_here(&self, session_id: SessionId, turn_id: TurnId, answer: Answer) -> Result<()> {
        let mut slots = self.slots();
        let active = slots.get_mut(&session_id).and_then(|s| s.active.as_mut());
        match active {
            Some(a) if a.turn_id == turn_id && a.pending.contains(&answer.key()) => {
                a.pending.remove(&answer.key());
                let _ = a.results.send(answer);
                Ok(())
            }
            _ => Err(match answer {
                Answer::Result(r) => Error::UnknownToolCall { call_id: r.call_id },
                Answer::Approval { request_id, .. } => Error::UnknownApproval { request_id },
            }),
        }
    }

    /// Revives a turn a previous process left waiting: it waits again, in
    /// memory, for what its session's stored required actions name (answers
    /// are accepted from now on), with new input queued behind it. `false`:
    /// it cannot wait here (another node holds its session, or it is gone).
    pub(crate) async fn revive(&self, org_id: &str, turn: Turn) -> Result<bool> {
        let session_id = turn.session_id;
        if let Held::There(_) = self.hold(org_id, session_id).await? {
            return Ok(false);
        }
        let session = self.inner.store.get_session(org_id, session_id).await;
        let Ok(Some(session)) = session else {
            self.let_go(session_id);
            return session.map(|_| false).map_err(Error::from);
        };
        let cancel = CancellationToken::new();
        let (results_tx, results) = mpsc::unbounded_channel();
        let pending = crate::waiting::keys_of(&session.required_actions);
        let active = Active { turn_id: turn.id, cancel: cancel.clone(), results: results_tx, pending };
        let queued = Queued {
            org_id: org_id.to_string(),
            turn_id: turn.id,
            turn,
            input: Vec::new(),
            before: self.inner.journal.position(),
            resumed: true,
            prepared: Some(Prepared { cancel, results }),
            started: None,
        };
        let start = {
            let mut slots = self.slots();
            let slot = slots.entry(session_id).or_default();
            slot.active = Some(active);
            slot.queued.push_front(queued);
            !std::mem::replace(&mut slot.running, true)
        };
        if start {
            let engine = self.clone();
            tokio::spawn(async move { engine.work(session_id).await });
        }
        self.let_go(session_id);
        Ok(true)
    }

    /// The turn a session is running now, if any (on whichever node runs it).
    pub async fn active_turn(&self, org_id: &str, session_id: SessionId) -> Result<Option<TurnId>> {
        let here = self.slots().get(&session_id).and_then(|s| s.active.as_ref()).map(|a| a.turn_id);
        if here.is_some() || self.cluster().is_none() {
            return Ok(here);
        }
        let page = protocol::list::PageRequest { limit: 1, ..Default::default() };
        let latest = self.inner.store.list_turns(org_id, session_id, &page).await?;
        Ok(latest.items.into_iter().find(|t| !t.status.is_terminal() && t.status != TurnStatus::Queued).map(|t| t.id))
    }

    /// Cancels the running turn, or else the oldest queued one (on the node
    /// that runs the session).
    pub async fn cancel(&self, org_id: &str, session_id: SessionId, only: Option<TurnId>) -> Result<TurnId> {
        if let Held::There(target) = self.hold(org_id, session_id).await? {
            let cancelled = self.ask(org_id, session_id, Op::Cancel { only }, target).await?;
            return cancelled.ok_or(Error::NoActiveTurn);
        }
        let done = self.cancel_here(org_id, session_id, only).await;
        self.let_go(session_id);
        done
    }

    /// [`Engine::cancel`] on the node that holds the session.
    pub(crate) async fn cancel_here(
        &self,
        org_id: &str,
        session_id: SessionId,
        only: Option<TurnId>,
    ) -> Result<TurnId> {
        let queued = {
            let mut slots = self.slots();
            let slot = slots.get_mut(&session_id).ok_or(Error::NoActiveTurn)?;
            match &slot.active {
                Some(a) if only.is_none_or(|t| t == a.turn_id) => {
                    a.cancel.cancel();
                    return Ok(a.turn_id);
                }
                _ => {
                    let pos = slot
                        .queued
                        .iter()
                        .position(|q| only.is_none_or(|o| o == q.turn_id))
                        .ok_or(Error::NoActiveTurn)?;
                    slot.queued.remove(pos).map(|q| q.turn_id).ok_or(Error::NoActiveTurn)?
                }
            }
        };
        self.end_queued(org_id, session_id, queued, TurnStatus::Cancelled, None).await?;
        Ok(queued)
    }

    /// Forgets what this node keeps of a session's history (items were
    /// deleted from it); the next turn reads it from the store.
    pub fn forget_history(&self, session_id: SessionId) {
        self.inner.histories.invalidate(session_id);
    }

    /// Stops everything of a deleted session.
    pub fn forget(&self, session_id: SessionId) {
        self.inner.histories.invalidate(session_id);
        if let Some(slot) = self.slots().get_mut(&session_id) {
            slot.stop();
        }
        self.inner.bus.close(session_id);
    }

    async fn end_queued(
        &self,
        org_id: &str,
        session_id: SessionId,
        turn_id: TurnId,
        status: TurnStatus,
        error: Option<TurnError>,
    ) -> Result<()> {
        self.inner.histories.invalidate(session_id);
        self.flush().await?;
        let store = &self.inner.store;
        let (Some(session), Some(turn)) =
            (store.get_session(org_id, session_id).await?, store.get_turn(org_id, turn_id).await?)
        else {
            return Ok(());
        };
        let mut rec = self.recorder(org_id, session, turn);
        rec.finish(status, error).await
    }

    /// Ends a turn that a store error aborted as failed. While the database is
    /// unreachable (restarting, say) that write cannot be read back either, so
    /// it is retried until the database returns (bounded), rather than leaving
    /// the turn open until the next start's recovery.
    async fn fail_when_possible(&self, org_id: &str, session_id: SessionId, turn_id: TurnId, error: TurnError) {
        let mut pause = std::time::Duration::from_millis(100);
        for _ in 0..FAIL_ATTEMPTS {
            match self.end_queued(org_id, session_id, turn_id, TurnStatus::Failed, Some(error.clone())).await {
                Err(Error::Unavailable) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                Err(Error::Store(e)) if e.is_unavailable() => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                Err(e) => {
                    tracing::error!(%session_id, %turn_id, error = %e, "an aborted turn could not be marked failed");
                    return;
                }
                Ok(()) => return,
            }
        }
        tracing::error!(%session_id, %turn_id, "the database stayed unreachable: the turn is failed at the next start");
    }

    /// The worker: runs queued turns until none is left.
    async fn work(self, session_id: SessionId) {
        // Where the journal stood when the previous turn of this worker ended:
        // the next turn's history needs everything up to there.
        let mut previous_end = 0;
        loop {
            // Taking the next turn and making it the active one happen under
            // one lock, so a cancel always finds the turn somewhere.
            let mut idle = false;
            let next = {
                let mut slots = self.slots();
                let Some(slot) = slots.get_mut(&session_id) else { return };
                match slot.queued.pop_front() {
                    // A revived turn's `Active` is in place already.
                    Some(mut queued) if queued.prepared.is_some() => {
                        let prepared = queued.prepared.take();
                        prepared.map(|p| (queued, p.cancel, p.results))
                    }
                    Some(queued) => {
                        let turn_id = queued.turn_id;
                        let cancel = CancellationToken::new();
                        let (results_tx, results) = mpsc::unbounded_channel();
                        slot.active = Some(Active {
                            turn_id,
                            cancel: cancel.clone(),
                            results: results_tx,
                            pending: HashSet::new(),
                        });
                        Some((queued, cancel, results))
                    }
                    None if slot.lease.is_none() => {
                        slots.remove(&session_id);
                        None
                    }
                    None => {
                        // In a cluster the lease goes a while after nothing needs it
                        // (here, or when the operation that still holds it ends).
                        slot.running = false;
                        idle = true;
                        None
                    }
                }
            };
            if idle {
                self.release_when_idle(session_id);
            }
            let Some((mut queued, cancel, results)) = next else { return };
            let (org_id, turn_id) = (queued.org_id.clone(), queued.turn_id);
            queued.before = queued.before.max(previous_end);
            if let Err(e) = self.run(session_id, queued, cancel, results).await {
                tracing::error!(%session_id, %turn_id, error = %e, "turn aborted by a store error");
                let error = TurnError::new("internal_error", format!("the turn stopped on an internal error: {e}"));
                self.fail_when_possible(&org_id, session_id, turn_id, error).await;
            }
            previous_end = self.inner.journal.position();
            if let Some(slot) = self.slots().get_mut(&session_id) {
                slot.active = None;
            }
        }
    }

    async fn run(
        &self,
        session_id: SessionId,
        queued: Queued,
        cancel: CancellationToken,
        results: mpsc::UnboundedReceiver<Answer>,
    ) -> Result<()> {
        let Queued { org_id, turn, input, before, resumed, started, .. } = queued;
        let org_id = org_id.as_str();
        // Earlier turns' writes are this one's history; its own may still be
        // committing (the submission waits for those).
        self.inner.journal.flush_to(before).await?;
        let store = &self.inner.store;
        let (generation, kept) = self.inner.histories.take(session_id);
        let (session, mut history) = match kept {
            Some(items) => (store.get_session(org_id, session_id).await?, items),
            None => {
                let (session, history) =
                    tokio::join!(store.get_session(org_id, session_id), store.history(org_id, session_id));
                (session?, history?)
            }
        };
        let Some(session) = session else { return Ok(()) };
        history.extend(input);
        if cancel.is_cancelled() {
            return self.recorder(org_id, session, turn).finish(TurnStatus::Cancelled, None).await;
        }
        let mut rec = self.recorder(org_id, session, turn);
        let mut resume = Vec::new();
        if resumed {
            // The history holds finished turns only: this one's items so far come after them.
            let own = store.turn_items(org_id, session_id, rec.turn.id).await?;
            history.extend(own.iter().cloned());
            let outputs = crate::recovery::output_items(own);
            rec.resume_at(outputs.len() as i64);
            resume = crate::waiting::pending_from(&rec.session.required_actions, &outputs);
        }
        // A turn with nothing to set up before its model call (no
        // environment, no MCP server) leaves its first commit to the
        // submission, once the model has its request (see `submit_here`);
        // any other turn lets the submission commit now.
        let quick = rec.session.environment.id().is_none() && crate::mcp_connect::no_mcp_servers(&rec.session);
        let sent = started.filter(|_| quick && !resumed);
        if sent.is_some() {
            rec.set_status_queued(TurnStatus::InProgress, SessionStatus::InProgress);
        } else if !resumed {
            rec.set_status(TurnStatus::InProgress, SessionStatus::InProgress, Vec::new()).await?;
        }
        let model = match self.inner.models.resolve(&rec.session.agent.config.model) {
            Ok(m) => m,
            Err(e) => {
                return rec
                    .finish(
                        TurnStatus::Failed,
                        Some(TurnError::new(crate::record::model_error_code(&e), e.to_string())),
                    )
                    .await;
            }
        };
        let hosted = match &self.inner.hosted {
            Some(f) => match f.for_turn(org_id, &mut rec, &cancel).await {
                Ok(hosted) => hosted,
                // A required MCP server could not initialize: before any model call.
                Err(e) => return rec.finish(TurnStatus::Failed, Some(e)).await,
            },
            None => Vec::new(),
        };
        let warnings: Vec<EventBody> = hosted
            .iter()
            .flat_map(|h| h.warnings())
            .map(|(code, message)| EventBody::Error {
                session_id,
                error: protocol::event::SessionError { code: Some(code), message, param: None, kind: "warning".into() },
            })
            .collect();
        if !warnings.is_empty() {
            rec.emit(warnings).await?;
        }
        let tools = ToolSet::new(&rec.session.agent.config, hosted);
        let messages = crate::turn::initial_messages(&history);
        let history_before = history;
        let engine = self.clone();
        let register = Box::new(move |calls: Vec<String>| {
            if let Some(a) = engine.slots().get_mut(&session_id).and_then(|s| s.active.as_mut()) {
                a.pending.extend(calls);
            }
        });
        let series = self.inner.metrics.model(&rec.session.agent.config.model);
        let encoded = models::EncodedHistory::default();
        let run = TurnRun { rec, model, series, tools, messages, encoded, cancel, results, register, resume, sent };
        let mut rec_after = None;
        let ending = run.run_with(&mut rec_after).await?;
        let Some(mut rec) = rec_after else { return Ok(()) };
        if let Some(f) = &self.inner.hosted {
            f.after_turn(org_id, &rec.session, rec.turn.id).await;
        }
        match ending {
            Ending::Completed => rec.finish(TurnStatus::Completed, None).await?,
            Ending::Cancelled => rec.finish(TurnStatus::Cancelled, None).await?,
            Ending::Failed(e) => rec.finish(TurnStatus::Failed, Some(e)).await?,
        }
        // The finished turns' items, for the next turn of this session.
        let mut history = history_before;
        history.extend(rec.take_items());
        self.inner.histories.put(session_id, generation, history);
        Ok(())
    }
}
