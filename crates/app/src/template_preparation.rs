//! Preparing a template once per version: a template with something to set
//! up is written `preparing`, then a task runs its setup a single time into
//! a snapshot on this node (`engine::environments::Environments::prepare_snapshot`)
//! and stores `ready` with the log, or `failed` with the step, its output and
//! the log — unless the template was updated meanwhile (the newer version's
//! own task writes its status). A ready version's snapshot replaces the older
//! ones; environments already made from those keep their layers.

use crate::App;
use protocol::environment::{EnvironmentConfig, EnvironmentError};
use protocol::environment_template::{EnvironmentTemplateRecord, TemplateStatus};

/// Whether a configuration has setup to run (and so a snapshot to prepare).
fn needs_preparing(c: &EnvironmentConfig) -> bool {
    let p = c.packages.clone().unwrap_or_default();
    let packages = [p.python, p.npm, p.system].into_iter().flatten().any(|list| !list.is_empty());
    packages
        || c.files.as_ref().is_some_and(|f| !f.is_empty())
        || c.setup_commands.as_ref().is_some_and(|s| !s.is_empty())
}

/// Sets a template version's status before it is written: `preparing` when
/// there is setup to run, else `ready`.
pub(crate) fn mark(record: &mut EnvironmentTemplateRecord) {
    record.status = if needs_preparing(&record.config) { TemplateStatus::Preparing } else { TemplateStatus::Ready };
    record.preparation_log = None;
    record.preparation_error = None;
}

/// Starts preparing a template version written `preparing` (in a task of its own).
pub(crate) fn start(app: &App, org: &str, record: &EnvironmentTemplateRecord) {
    if record.status != TemplateStatus::Preparing {
        return;
    }
    let (store, envs) = (app.store.clone(), app.envs.clone());
    let (org, template) = (org.to_string(), record.clone());
    tokio::spawn(async move {
        let key = engine::environments::snapshot_key(template.id.as_str(), template.version);
        let probe = crate::environments::new_record(template.config.clone(), Vec::new(), None);
        let result = envs.prepare_snapshot(&key, &probe).await;
        let current = match store.get_environment_template(&org, &template.id).await {
            Ok(Some(t)) if t.version == template.version => t,
            Ok(_) => {
                // Updated or deleted meanwhile: this version's snapshot is nobody's.
                envs.remove_snapshot(&key).await;
                return;
            }
            Err(e) => {
                tracing::warn!(template = %template.id, error = %e, "a prepared template could not be read back");
                return;
            }
        };
        let mut done = current;
        let ready = result.is_ok();
        match result {
            Ok(log) => {
                done.status = TemplateStatus::Ready;
                done.preparation_log = Some(log);
            }
            Err(f) => {
                tracing::warn!(template = %template.id, step = %f.step, error = %f.message, "template preparation failed");
                done.status = TemplateStatus::Failed;
                done.preparation_log = Some(f.log);
                done.preparation_error = Some(EnvironmentError {
                    code: "setup_failed".into(),
                    message: f.message,
                    step: Some(f.step),
                    output: f.output,
                });
            }
        }
        match store.set_environment_template_status(&org, &done).await {
            Ok(true) if ready => envs.remove_snapshots(template.id.as_str(), Some(&key)).await,
            Ok(true) => {}
            Ok(false) => envs.remove_snapshot(&key).await,
            Err(e) => {
                tracing::warn!(template = %template.id, error = %e, "a template's preparation could not be stored")
            }
        }
    });
}
