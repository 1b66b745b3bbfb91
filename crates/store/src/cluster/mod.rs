//! The nodes of a cluster: several `rebyte serve` processes on one
//! PostgreSQL database. Each registers in `nodes` at start ([`Cluster::join`])
//! under its node id, with the address it advertises and its version, and
//! renews a heartbeat every [`HEARTBEAT`] while it runs; a node whose
//! heartbeat is older than [`NODE_TIMEOUT`] (by the database's clock, so a
//! node's own clock never matters) is gone. A second node starting under the
//! id of a live one is refused. Each node also gets a small slot number,
//! unique among the registered nodes, for what must never collide between
//! nodes (event sequence numbers).
//!
//! - [`notices`]: what nodes tell each other (`LISTEN/NOTIFY`).
//! - [`leases`]: which node runs a session's turns, and the inboxes through
//!   which the others reach it.

pub mod leases;
mod listen;
pub mod notices;

use crate::session_cache::SessionCache;
use crate::{Error, Result};
use notices::{Heard, Notice, Sender};
use serde::Serialize;
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::broadcast;

/// How often a node renews its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A node whose heartbeat is older than this is gone.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(10);
/// Slots (and so registered nodes) at most.
pub const MAX_NODES: i32 = 64;
/// `$n` placeholders bound to [`NODE_TIMEOUT`] in seconds: the one test of
/// whether a registration is a live node (not stopped, heartbeat recent by the
/// database's clock).
fn live(n: u8) -> String {
    format!("(stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => ${n}))")
}

/// The advisory lock that serializes registrations.
const JOIN_LOCK: i64 = 0x7265_6279_7465; // "rebyte"

/// Who a node says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// Unique among the cluster's live nodes.
    pub id: String,
    /// Where other nodes reach it (`http://host:port`).
    pub advertise: String,
    /// The binary's version.
    pub version: String,
}

/// A registered node, as the database sees it.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct NodeView {
    pub id: String,
    pub slot: i32,
    pub advertise: String,
    pub version: String,
    /// Heartbeat within [`NODE_TIMEOUT`] and not stopped.
    pub alive: bool,
    /// Milliseconds since its last heartbeat.
    pub heartbeat_age_ms: i64,
    /// Unix seconds.
    pub started_at: i64,
    pub stopped: bool,
}

/// This node's membership of the cluster.
#[derive(Debug)]
pub struct Cluster {
    pool: PgPool,
    node: NodeSpec,
    slot: i32,
    /// This process's registration (another start under the same id has another).
    instance: String,
    /// Other live nodes, as of the last heartbeat.
    peers: AtomicUsize,
    /// Tags this node's notices with its slot (shared with the store).
    sender: Arc<Sender>,
    /// The store's session cache, which other nodes' changes invalidate.
    sessions: Arc<SessionCache>,
    /// Notices heard from the database, for whoever follows them.
    heard: broadcast::Sender<Heard>,
    /// Microseconds the database's clock is ahead of this machine's.
    clock_offset: i64,
}

/// Notices buffered for a follower; one that lags hears [`Notice::Missed`].
const NOTICE_BUFFER: usize = 4096;

impl Cluster {
    /// Registers `node` on `pool`'s database, refusing an id a live node holds.
    pub(crate) async fn join(
        pool: PgPool,
        node: NodeSpec,
        sender: Arc<Sender>,
        sessions: Arc<SessionCache>,
    ) -> Result<Arc<Self>> {
        validate(&node)?;
        refuse_if_running(&pool, &node.id).await?;
        let instance = uuid::Uuid::new_v4().to_string();
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(JOIN_LOCK).execute(&mut *tx).await?;
        let held: Option<(i32,)> =
            sqlx::query_as("SELECT slot FROM nodes WHERE node_id = $1").bind(&node.id).fetch_optional(&mut *tx).await?;
        let slot = match held {
            Some((slot,)) => slot,
            None => free_slot(&mut tx).await?,
        };
        sqlx::query(
            "INSERT INTO nodes (node_id, slot, advertise, version, instance, started_at, heartbeat_at) \
             VALUES ($1, $2, $3, $4, $5, now(), now()) ON CONFLICT (node_id) DO UPDATE SET \
             advertise = excluded.advertise, version = excluded.version, instance = excluded.instance, \
             started_at = now(), heartbeat_at = now(), stopped_at = NULL",
        )
        .bind(&node.id)
        .bind(slot)
        .bind(&node.advertise)
        .bind(&node.version)
        .bind(&instance)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        sender.set_slot(slot);
        sender.set_node(&node.id);
        let heard = broadcast::channel(NOTICE_BUFFER).0;
        let peers = AtomicUsize::new(0);
        let clock_offset = clock_offset(&pool).await?;
        let cluster = Arc::new(Self { pool, node, slot, instance, peers, sender, sessions, heard, clock_offset });
        // Listening before anything else is announced: nothing committed from here on is missed.
        listen::start(&cluster).await?;
        cluster.heartbeat().await?;
        cluster.announce(&Notice::Joined).await?;
        Ok(cluster)
    }

    /// This node.
    pub fn node(&self) -> &NodeSpec {
        &self.node
    }

    /// This node's slot: unique among the registered nodes, below [`MAX_NODES`].
    pub fn slot(&self) -> i32 {
        self.slot
    }

    /// Microseconds the database's clock is ahead of this machine's (as
    /// measured at join): what a node adds to its own for the cluster's time.
    pub fn clock_offset_micros(&self) -> i64 {
        self.clock_offset
    }

    /// Other live nodes, as of the last heartbeat.
    pub fn peers(&self) -> usize {
        self.peers.load(Ordering::Relaxed)
    }

    /// Renews this node's heartbeat and counts the other live nodes. An error
    /// when another start under this node's id has taken the registration over
    /// (this node was presumed gone).
    pub async fn heartbeat(&self) -> Result<usize> {
        let (renewed, peers): (i64, i64) = sqlx::query_as(&format!(
            "WITH renewed AS (UPDATE nodes SET heartbeat_at = now() WHERE node_id = $1 AND instance = $2 \
             RETURNING 1) SELECT (SELECT count(*) FROM renewed), (SELECT count(*) FROM nodes WHERE node_id <> $1 \
             AND {})",
            live(3)
        ))
        .bind(&self.node.id)
        .bind(&self.instance)
        .bind(NODE_TIMEOUT.as_secs_f64())
        .fetch_one(&self.pool)
        .await?;
        let peers = usize::try_from(peers).unwrap_or(0);
        self.peers.store(peers, Ordering::Relaxed);
        self.sender.set_peers(peers > 0);
        self.sessions.set_shared(peers > 0);
        self.renew_leases().await?;
        if renewed == 0 {
            return Err(Error::Conflict(format!(
                "node id '{}' was registered again by another start while this node was presumed gone",
                self.node.id
            )));
        }
        Ok(peers)
    }

    /// Renews the heartbeat every [`HEARTBEAT`] for as long as the cluster is held.
    pub fn keep_alive(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(cluster) = weak.upgrade() else { return };
                if let Err(e) = cluster.heartbeat().await {
                    tracing::error!(node = %cluster.node.id, error = %e, "cluster heartbeat failed");
                }
            }
        });
    }

    /// Marks this node stopped (a clean shutdown): its id is free at once,
    /// and its leases are for the other nodes to take over.
    pub async fn leave(&self) -> Result<()> {
        self.expire_own_leases().await?;
        sqlx::query("UPDATE nodes SET stopped_at = now() WHERE node_id = $1 AND instance = $2")
            .bind(&self.node.id)
            .bind(&self.instance)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Notices from now on (this node's own included: see [`Heard::from`]).
    pub fn notices(&self) -> broadcast::Receiver<Heard> {
        self.heard.subscribe()
    }

    /// Tells every node (this one too) of `notice`.
    pub async fn announce(&self, notice: &Notice) -> Result<()> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(notices::CHANNEL)
            .bind(self.sender.payload(notice))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The registered node `id`, if any.
    pub async fn node_view(&self, id: &str) -> Result<Option<NodeView>> {
        let node = sqlx::query_as::<_, NodeView>(&views("WHERE node_id = $2"))
            .bind(NODE_TIMEOUT.as_secs_f64())
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(node)
    }

    /// Every registered node, by id.
    pub async fn nodes(&self) -> Result<Vec<NodeView>> {
        let nodes = sqlx::query_as::<_, NodeView>(&views("ORDER BY node_id"))
            .bind(NODE_TIMEOUT.as_secs_f64())
            .fetch_all(&self.pool)
            .await?;
        Ok(nodes)
    }
}

/// The registrations as [`NodeView`]s, `rest` after the `FROM` ($1: [`NODE_TIMEOUT`] in seconds).
fn views(rest: &str) -> String {
    format!(
        "SELECT node_id AS id, slot, advertise, version, {} AS alive, \
         (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint AS heartbeat_age_ms, \
         extract(epoch FROM started_at)::bigint AS started_at, stopped_at IS NOT NULL AS stopped \
         FROM nodes {rest}",
        live(1)
    )
}

fn local_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(0))
}

/// The database's clock minus this machine's, in microseconds (the middle
/// of the round trip taken as the moment the database read its clock).
async fn clock_offset(pool: &PgPool) -> Result<i64> {
    let before = local_micros();
    let (db,): (i64,) =
        sqlx::query_as("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint").fetch_one(pool).await?;
    let after = local_micros();
    Ok(db - before / 2 - after / 2)
}

/// Refuses `id` while a running node holds it. A registration whose
/// heartbeat is recent may be a node that just crashed (restarted at once
/// under its id): it is watched for a little longer than one heartbeat, and
/// only a renewal in that time means it runs.
async fn refuse_if_running(pool: &PgPool, id: &str) -> Result<()> {
    let read = || async {
        let row: Option<(String, String, i64, bool)> = sqlx::query_as(&format!(
            "SELECT advertise, instance, (extract(epoch FROM heartbeat_at) * 1000000)::bigint, {} \
             FROM nodes WHERE node_id = $1",
            live(2)
        ))
        .bind(id)
        .bind(NODE_TIMEOUT.as_secs_f64())
        .fetch_optional(pool)
        .await?;
        Ok::<_, Error>(row)
    };
    let Some((_, instance, beat, true)) = read().await? else { return Ok(()) };
    tokio::time::sleep(HEARTBEAT + HEARTBEAT / 2).await;
    match read().await? {
        Some((advertise, now_instance, now_beat, true)) if now_instance == instance && now_beat != beat => {
            Err(Error::Config(format!(
                "node id '{id}' is already in use by a running node (advertising {advertise}): give this node \
                 another --node-id"
            )))
        }
        _ => Ok(()),
    }
}

/// A node id and address a cluster can hold.
fn validate(node: &NodeSpec) -> Result<()> {
    let id_ok = !node.id.is_empty()
        && node.id.len() <= 64
        && node.id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !id_ok {
        return Err(Error::Config(format!(
            "node id '{}' is not valid: 1 to 64 letters, digits, '-', '_' or '.'",
            node.id
        )));
    }
    if !(node.advertise.starts_with("http://") || node.advertise.starts_with("https://")) {
        return Err(Error::Config(format!(
            "advertised address '{}' is not valid: use http://host:port",
            node.advertise
        )));
    }
    Ok(())
}

/// The lowest slot no registered node holds; failing that, the slot of the
/// node gone longest (whose row is dropped).
async fn free_slot(tx: &mut sqlx::PgConnection) -> Result<i32> {
    let free: Option<(i32,)> = sqlx::query_as(
        "SELECT s FROM generate_series(0, $1 - 1) AS s WHERE s NOT IN (SELECT slot FROM nodes) ORDER BY s LIMIT 1",
    )
    .bind(MAX_NODES)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some((slot,)) = free {
        return Ok(slot);
    }
    let gone: Option<(String, i32)> =
        sqlx::query_as(&format!("SELECT node_id, slot FROM nodes WHERE NOT {} ORDER BY heartbeat_at LIMIT 1", live(1)))
            .bind(NODE_TIMEOUT.as_secs_f64())
            .fetch_optional(&mut *tx)
            .await?;
    let Some((id, slot)) = gone else {
        return Err(Error::Config(format!("the cluster already has {MAX_NODES} live nodes, the most it can hold")));
    };
    sqlx::query("DELETE FROM nodes WHERE node_id = $1").bind(id).execute(&mut *tx).await?;
    Ok(slot)
}
