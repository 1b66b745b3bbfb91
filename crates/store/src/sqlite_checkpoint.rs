//! The SQLite journal's checkpointer: a thread with a connection of its own
//! that copies the write-ahead log back into the database file when asked.
//! Off the writer's connection, a checkpoint (which syncs the disk) never
//! holds up a commit; and since a log that was copied back in full is
//! rewritten from its start by the next commit, commits keep overwriting
//! the same few megabytes of the log instead of growing a file, which the
//! file system makes several times cheaper than extending one.

use crate::{Error, Result};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::time::Duration;

/// Passes a checkpoint makes at most to catch up with commits that came in
/// meanwhile (each one copies only what the previous one left).
const CATCH_UP: usize = 8;
/// The pause between those passes, for the commits under way to end.
const CATCH_UP_PAUSE: Duration = Duration::from_millis(1);

/// Asks the checkpointer's thread for a checkpoint; the thread ends once
/// this is dropped.
pub(crate) struct Checkpointer {
    asks: SyncSender<()>,
}

impl Checkpointer {
    /// Opens a connection to the database at `path` and starts the thread.
    pub(crate) fn start(path: &Path, flags: OpenFlags) -> Result<Self> {
        let opened = Connection::open_with_flags(path, flags)
            .and_then(|conn| conn.execute_batch("PRAGMA synchronous = NORMAL;").map(|()| conn));
        let conn = opened.map_err(|e| Error::Writer(format!("cannot open the checkpoint connection: {e}")))?;
        let (asks, asked) = sync_channel::<()>(1);
        std::thread::Builder::new()
            .name("rebyte-checkpoint".into())
            .spawn(move || {
                while asked.recv().is_ok() {
                    if let Err(e) = checkpoint(&conn) {
                        tracing::warn!(error = %e, "write-ahead log checkpoint failed");
                    }
                }
            })
            .map_err(|e| Error::Writer(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Self { asks })
    }

    /// Asks for a checkpoint; one already asked for and not yet begun covers this one.
    pub(crate) fn ask(&self) -> Result<()> {
        match self.asks.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) => Ok(()),
            Err(TrySendError::Disconnected(())) => Err(Error::Writer("the checkpoint thread has stopped".into())),
        }
    }
}

/// A passive checkpoint (it waits for no lock), repeated while commits made
/// during the last one left part of the log uncopied.
fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    for _ in 0..CATCH_UP {
        // (busy, frames in the log, frames copied back)
        let (_, logged, copied): (i64, i64, i64) =
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        if copied >= logged {
            break;
        }
        std::thread::sleep(CATCH_UP_PAUSE);
    }
    Ok(())
}
