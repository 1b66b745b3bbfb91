//! The connection on which a node hears the others: one `LISTEN` on
//! [`CHANNEL`], re-established when it drops (the notices sent meanwhile are
//! lost: followers hear [`Notice::Missed`] and re-read). Other nodes' session
//! changes invalidate the store's session cache here, before anyone else
//! hears of them.

use super::Cluster;
use super::notices::{CHANNEL, Heard, Notice};
use crate::Result;
use sqlx::postgres::PgListener;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How long to wait before listening again after the connection failed.
const RETRY: Duration = Duration::from_millis(500);
/// How often the task checks that the cluster is still held.
const CHECK: Duration = Duration::from_secs(1);

/// Connects and starts listening; the task ends once the cluster is dropped.
pub(super) async fn start(cluster: &Arc<Cluster>) -> Result<()> {
    let mut listener = PgListener::connect_with(&cluster.pool).await?;
    listener.listen(CHANNEL).await?;
    let weak = Arc::downgrade(cluster);
    tokio::spawn(async move { run(listener, weak).await });
    Ok(())
}

async fn run(mut listener: PgListener, weak: Weak<Cluster>) {
    loop {
        let received = tokio::time::timeout(CHECK, listener.try_recv()).await;
        let Some(cluster) = weak.upgrade() else { return };
        match received {
            Err(_) => continue,
            Ok(Ok(Some(notification))) => {
                if let Some(heard) = Heard::parse(notification.payload()) {
                    cluster.hear(heard);
                }
            }
            // The connection dropped; the next call reconnects.
            Ok(Ok(None)) => cluster.hear(Heard { from: None, notice: Notice::Missed }),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cluster notices: listening failed, retrying");
                cluster.hear(Heard { from: None, notice: Notice::Missed });
                drop(cluster);
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

impl Cluster {
    /// Applies what the store itself follows, then passes the notice on.
    fn hear(&self, heard: Heard) {
        let own = heard.from == Some(self.slot);
        match &heard.notice {
            Notice::Session(session) if !own => self.sessions.invalidate([*session]),
            Notice::Missed => self.sessions.clear(),
            Notice::Joined if !own => {
                self.peers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.sender.set_peers(true);
                self.sessions.set_shared(true);
            }
            _ => {}
        }
        // No follower yet is fine.
        let _ = self.heard.send(heard);
    }
}
