//! Session leases and inboxes. The node that holds a session's lease is the
//! only one running its turns; the lease lasts [`LEASE_TTL`] from its last
//! renewal (with the holder's heartbeat, by the database's clock), and one
//! that has expired belongs to a lost node, which another node takes over
//! ([`Cluster::take_expired`]). A node that does not hold a session's lease
//! leaves its requests in the session's inbox and tells the holder
//! ([`Cluster::push`]); the answer comes back as a [`Notice::Reply`].

use super::notices::Notice;
use super::{Cluster, NODE_TIMEOUT};
use crate::Result;
use protocol::ids::SessionId;
use std::time::Duration;

/// How long a lease lasts after its last renewal.
pub const LEASE_TTL: Duration = NODE_TIMEOUT;

/// A lease this node took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// This acquisition's number: a release names it.
    pub epoch: i64,
    /// The highest event sequence number the session has stored.
    pub last_seq: i64,
}

/// A request waiting in a session's inbox.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct InboxEntry {
    pub id: i64,
    pub org_id: String,
    pub doc: String,
}

/// A lease another node held until it expired, now this node's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenOver {
    pub session: SessionId,
    /// The node that held it.
    pub node: String,
    pub lease: Lease,
}

impl Cluster {
    /// Takes the lease of `session` when no node holds it (or this one
    /// does); `None` while another node holds it, even an expired one's
    /// (whose turns [`Cluster::take_expired`] settles first). The row's epoch
    /// only grows: of two acquisitions racing on one node, the one whose
    /// number was drawn first may update the row last, and keeps the larger.
    /// So the epoch returned is never above the row's (the journal's fence
    /// compares them).
    pub async fn acquire(&self, session: SessionId) -> Result<Option<Lease>> {
        let row: (Option<i64>, i64) = sqlx::query_as(
            "WITH taken AS (INSERT INTO session_leases (session_id, node_id, epoch, expires_at) \
             VALUES ($1, $2, nextval('session_lease_epochs'), now() + make_interval(secs => $3)) \
             ON CONFLICT (session_id) DO UPDATE SET epoch = GREATEST(session_leases.epoch, excluded.epoch), \
             expires_at = excluded.expires_at \
             WHERE session_leases.node_id = excluded.node_id RETURNING epoch) \
             SELECT (SELECT epoch FROM taken), (SELECT COALESCE(max(seq), 0) FROM events WHERE session_id = $1)",
        )
        .bind(session.to_string())
        .bind(&self.node.id)
        .bind(LEASE_TTL.as_secs_f64())
        .fetch_one(&self.pool)
        .await?;
        Ok(row.0.map(|epoch| Lease { epoch, last_seq: row.1 }))
    }

    /// Gives up the lease taken as `epoch` (a later acquisition keeps it);
    /// true when requests wait in the session's inbox (whoever takes the
    /// lease next must answer them).
    pub async fn release(&self, session: SessionId, epoch: i64) -> Result<bool> {
        let (waiting,): (bool,) = sqlx::query_as(
            "WITH gone AS (DELETE FROM session_leases WHERE session_id = $1 AND node_id = $2 AND epoch = $3) \
             SELECT EXISTS (SELECT 1 FROM session_inbox WHERE session_id = $1)",
        )
        .bind(session.to_string())
        .bind(&self.node.id)
        .bind(epoch)
        .fetch_one(&self.pool)
        .await?;
        Ok(waiting)
    }

    /// The node holding the lease of `session`, if any.
    pub async fn holder(&self, session: SessionId) -> Result<Option<String>> {
        let row: Option<(String,)> = sqlx::query_as("SELECT node_id FROM session_leases WHERE session_id = $1")
            .bind(session.to_string())
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(node,)| node))
    }

    /// Renews every lease this node holds.
    pub(crate) async fn renew_leases(&self) -> Result<u64> {
        let done =
            sqlx::query("UPDATE session_leases SET expires_at = now() + make_interval(secs => $2) WHERE node_id = $1")
                .bind(&self.node.id)
                .bind(LEASE_TTL.as_secs_f64())
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected())
    }

    /// Drops the leases held under this node's id: at start, they are the
    /// previous process's (whose turns the caller has settled).
    pub async fn drop_own_leases(&self) -> Result<()> {
        sqlx::query("DELETE FROM session_leases WHERE node_id = $1").bind(&self.node.id).execute(&self.pool).await?;
        Ok(())
    }

    /// Ends this node's leases now (a clean stop: its running turns are
    /// abandoned), for the other nodes' [`Cluster::take_expired`].
    pub(crate) async fn expire_own_leases(&self) -> Result<()> {
        sqlx::query("UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE node_id = $1")
            .bind(&self.node.id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes over every expired lease (a lost node's), at most `limit`; the
    /// caller settles the turns each one's node left and then releases it.
    pub async fn take_expired(&self, limit: i64) -> Result<Vec<TakenOver>> {
        let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(
            "WITH old AS (SELECT session_id, node_id FROM session_leases WHERE expires_at < now() \
             ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED), \
             taken AS (UPDATE session_leases l SET node_id = $1, epoch = nextval('session_lease_epochs'), \
             expires_at = now() + make_interval(secs => $2) FROM old WHERE l.session_id = old.session_id \
             RETURNING l.session_id, old.node_id, l.epoch) \
             SELECT t.session_id, t.node_id, t.epoch, \
             (SELECT COALESCE(max(seq), 0) FROM events e WHERE e.session_id = t.session_id) FROM taken t",
        )
        .bind(&self.node.id)
        .bind(LEASE_TTL.as_secs_f64())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(session, node, epoch, last_seq)| {
                Some(TakenOver { session: SessionId::parse(&session)?, node, lease: Lease { epoch, last_seq } })
            })
            .collect())
    }

    /// Sessions whose inbox has waited longer than `age` with no node
    /// holding their lease (its holder released it as the request arrived).
    pub async fn orphaned_inboxes(&self, age: Duration) -> Result<Vec<(SessionId, String)>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT DISTINCT session_id, org_id FROM session_inbox i WHERE created_at < now() - make_interval(secs => $1) \
             AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = i.session_id) LIMIT 100",
        )
        .bind(age.as_secs_f64())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().filter_map(|(s, org)| Some((SessionId::parse(&s)?, org))).collect())
    }

    /// Leaves a request (`doc`, the engine's) in the inbox of `session` and
    /// tells the node that runs it (or `target`, the only one that may); the
    /// request's id comes back with its answer.
    pub async fn push(&self, session: SessionId, org_id: &str, doc: &str, target: Option<&str>) -> Result<i64> {
        let (id,): (i64,) = sqlx::query_as(
            "WITH r AS (INSERT INTO session_inbox (session_id, org_id, doc) VALUES ($1, $2, $3) RETURNING id) \
             SELECT id FROM r, LATERAL (SELECT pg_notify($4, $5)) n",
        )
        .bind(session.to_string())
        .bind(org_id)
        .bind(doc)
        .bind(super::notices::CHANNEL)
        .bind(self.sender.payload(&Notice::Inbox {
            session,
            org: org_id.to_string(),
            target: target.map(String::from),
        }))
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    /// Takes every request waiting for `session`, oldest first.
    pub async fn take_inbox(&self, session: SessionId) -> Result<Vec<InboxEntry>> {
        let mut entries: Vec<InboxEntry> =
            sqlx::query_as("DELETE FROM session_inbox WHERE session_id = $1 RETURNING id, org_id, doc")
                .bind(session.to_string())
                .fetch_all(&self.pool)
                .await?;
        entries.sort_by_key(|e| e.id);
        Ok(entries)
    }

    /// Answers inbox request `request` (its sender waits for the notice).
    pub async fn reply(&self, request: i64, outcome: &str) -> Result<()> {
        self.announce(&Notice::Reply { request, outcome: outcome.to_string() }).await
    }
}
