//! Forks: a new environment's files as a copy-on-write copy of another's at
//! this moment ([`sandbox::layers`]). The source's sandbox is started if it
//! is not running (its setup never runs again: it is ready), frozen for the
//! fork's few milliseconds and thawed; its processes are not copied.

use super::{EnvFailure, Environments};
use protocol::ids::EnvironmentId;
use std::sync::Arc;

/// The [`EnvFailure`] code of a fork the source's state refuses for now.
pub const FORK_BUSY: &str = "environment_busy";

impl Environments {
    /// Makes `dst`'s directory (a new environment's, not started) a
    /// copy-on-write copy of `src`'s files now.
    pub async fn fork(
        self: &Arc<Self>,
        org_id: &str,
        src: &EnvironmentId,
        dst: &EnvironmentId,
    ) -> Result<sandbox::layers::Forked, EnvFailure> {
        let sandbox = self.sandbox(org_id, src).await?;
        // No pause or resume of the idle reaper in between.
        let transition = self.live().get(src).map(|l| Arc::clone(&l.transition));
        let _one_at_a_time = match &transition {
            Some(t) => Some(t.lock().await),
            None => None,
        };
        let size = match self.store.get_environment(org_id, dst).await {
            Ok(record) => record.and_then(|r| r.config.container_size),
            Err(e) => return Err(EnvFailure::new("internal_error", e.to_string())),
        };
        self.give_disk(dst, size.as_deref()).await?;
        let (from, to) = (self.config.root.join(src.as_str()), self.config.root.join(dst.as_str()));
        let forked = self.layers.fork(&from, &to, sandbox.as_ref()).await.map_err(|e| match e {
            sandbox::Error::Busy(why) => EnvFailure::new(FORK_BUSY, why),
            other => EnvFailure::new("sandbox_error", format!("forking environment {src} failed: {other}")),
        })?;
        tracing::info!(
            environment = %src, fork = %dst, copied = forked.copied,
            frozen_ms = telemetry::millis(forked.frozen), "environment forked"
        );
        Ok(forked)
    }
}
