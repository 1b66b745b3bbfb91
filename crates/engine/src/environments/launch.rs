//! The part of an environment's start that makes its sandbox: the disk
//! image, the directories, the skills, the template's snapshot, the layers,
//! then the sandbox itself. It runs beside the write that marks the row
//! `initializing`, so it records nothing itself: a failure comes back as
//! the step it happened at, for the caller to record once that write is done.

use super::{EnvFailure, Environments, Phases};
use protocol::environment::EnvironmentRecord;
use sandbox::Sandbox;
use std::sync::Arc;

/// A started sandbox, and the note a template's snapshot left (if the
/// environment started from one).
pub(super) struct Launched {
    pub sandbox: Arc<dyn Sandbox>,
    pub snapshot: Option<String>,
}

/// Why no sandbox started.
pub(super) enum Unlaunched {
    /// Failed as it stands (nothing to record on the environment).
    Failed(EnvFailure),
    /// Failed at a step of initialization: (step, message), to record.
    At(String, String),
}

impl Environments {
    /// Makes `record`'s sandbox (`first`: its first start ever).
    pub(super) async fn launch(
        &self,
        org_id: &str,
        record: &EnvironmentRecord,
        first: bool,
        phases: &mut Phases,
    ) -> Result<Launched, Unlaunched> {
        let at = |message: String| Unlaunched::At("sandbox".into(), message);
        let env_id = &record.id;
        self.give_disk(env_id, record.config.container_size.as_deref()).await.map_err(Unlaunched::Failed)?;
        phases.mark("disk");
        let dir = self.config.root.join(env_id.as_str());
        for d in [dir.join("workspace"), dir.join("home")] {
            std::fs::create_dir_all(&d).map_err(|e| {
                Unlaunched::Failed(EnvFailure::new("sandbox_error", format!("cannot create {}: {e}", d.display())))
            })?;
        }
        if first && !record.skills.is_empty() {
            crate::environment_contents::install(self.store.as_ref(), org_id, record, &dir)
                .await
                .map_err(|e| Unlaunched::At(e.step, e.message))?;
        }
        let mut spec = self.sandbox_spec(env_id.as_str(), record, &dir).map_err(at)?;
        if !record.skills.is_empty() {
            spec.read_only.push(crate::environment_contents::bind(&dir));
        }
        let snapshot = if first { self.take_snapshot(record, &dir).await } else { None };
        self.layers.prepare(&dir, &mut spec).map_err(|e| at(e.to_string()))?;
        phases.mark("prepare");
        let sandbox = self.backend.create(spec).await.map_err(|e| at(e.to_string()))?;
        phases.mark("sandbox");
        Ok(Launched { sandbox, snapshot })
    }
}
