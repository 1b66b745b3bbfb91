//! The built-in tools of a session with an environment — `shell`,
//! `read_file`, `write_file` — running in the environment's sandbox, and the
//! collection of the session's output directory into its artifacts.

use crate::environments::Environments;
use crate::record::{Recorder, now};
use crate::setup_progress::SetupUpdate;
use crate::tools::{HostedOutput, HostedTools};
use models::ToolSpec;
use protocol::environment::EnvironmentSetup;
use protocol::event::{EnvironmentState, EnvironmentStateError, EventBody};
use protocol::ids::EnvironmentId;
use protocol::ids::{SessionId, TurnId};
use protocol::item::{Item, ItemStatus, new_item_id};
use protocol::session::{EnvironmentRole, SessionRecord};
use protocol::turn::TurnError;
use sandbox::setup::tail_start;
use sandbox::{ExecEvent, ExecRequest, Sandbox};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use telemetry::ToolKind;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Output kept in history per command; the rest goes to a log file.
const HISTORY_LIMIT: usize = 16 * 1024;
/// Default and largest command timeouts.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Largest file read back to the model.
const READ_LIMIT: usize = 256 * 1024;
/// The most setup output so far that a turn starting to wait is shown.
pub const CATCH_UP_LIMIT: usize = 64 * 1024;

/// Where a session's outputs go inside the sandbox.
pub fn output_dir(session: &SessionRecord) -> String {
    match session.environment_role {
        EnvironmentRole::Owner => "/workspace/outputs".to_string(),
        _ => format!("/workspace/outputs/sessions/{}", session.id),
    }
}

/// The sandbox tools of one turn.
pub struct SandboxTools {
    pub envs: Arc<Environments>,
    pub org_id: String,
    pub env_id: EnvironmentId,
    pub session_id: SessionId,
    pub output_dir: String,
    /// Whether this turn announced `agent.session.environment.connected`.
    pub connected: std::sync::atomic::AtomicBool,
    /// The environment was not running when the turn started: its first use announces
    /// `pending`, then `ready` (or `failed`).
    pub pending: std::sync::atomic::AtomicBool,
    /// `pending` was announced and its outcome not yet.
    pub waited: std::sync::atomic::AtomicBool,
    /// The output directory was seen or made in this turn.
    pub outputs_made: std::sync::atomic::AtomicBool,
}

impl SandboxTools {
    /// The sandbox, waiting for its initialization unless the turn is cancelled
    /// first (setup itself goes on), with the environment's events around it.
    async fn sandbox(&self, rec: &mut Recorder, cancel: &CancellationToken) -> Result<Arc<dyn Sandbox>, HostedOutput> {
        let setup = self.announce_waiting(rec).await;
        let wait = async {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                ready = self.envs.sandbox(&self.org_id, &self.env_id) => Some(ready),
            }
        };
        let Some(ready) = self.forward_setup(rec, setup, wait).await else {
            return Err(HostedOutput::text("cancelled while the environment was starting"));
        };
        match ready {
            Ok(s) => {
                self.announce_outcome(rec, None).await;
                Ok(s)
            }
            Err(e) => {
                let error = TurnError::new(e.code, e.message);
                self.announce_outcome(rec, Some(&error)).await;
                Err(HostedOutput { text: format!("error: {}", error.message), fatal: Some(error) })
            }
        }
    }

    /// `agent.session.environment.pending`, once, when this turn found the
    /// environment not running and is about to wait for it: with where its
    /// setup is and the output so far (the last [`CATCH_UP_LIMIT`] bytes) when
    /// setup runs, whose later output [`Self::forward_setup`] passes on.
    pub async fn announce_waiting(&self, rec: &mut Recorder) -> Option<broadcast::Receiver<SetupUpdate>> {
        if !self.pending.swap(false, Ordering::Relaxed) {
            return None;
        }
        self.waited.store(true, Ordering::Relaxed);
        let (setup, output, updates) = match self.envs.watch_setup(&self.env_id) {
            Some(mut watch) => {
                watch.log.drain(..tail_start(&watch.log, CATCH_UP_LIMIT));
                (watch.setup, Some(watch.log).filter(|l| !l.is_empty()), Some(watch.updates))
            }
            // Setup ended before this turn asked (it failed, or its success is
            // not yet seen): what it printed is stored with the environment.
            None if self.envs.running(&self.env_id).is_none() => {
                match self.envs.stored_setup(&self.org_id, &self.env_id).await {
                    Some((setup, mut log)) => {
                        log.drain(..tail_start(&log, CATCH_UP_LIMIT));
                        (setup, Some(log).filter(|l| !l.is_empty()), None)
                    }
                    None => (None, None, None),
                }
            }
            None => (None, None, None),
        };
        let _ = rec.emit(vec![self.pending_event(rec, setup, output)]).await;
        updates
    }

    /// Awaits `work` (which waits for the environment), passing on each piece
    /// of setup output from `setup` meanwhile as a `pending` event with
    /// `setup_output`.
    pub async fn forward_setup<T>(
        &self,
        rec: &Recorder,
        setup: Option<broadcast::Receiver<SetupUpdate>>,
        work: impl Future<Output = T>,
    ) -> T {
        let Some(mut updates) = setup else { return work.await };
        tokio::pin!(work);
        let out = loop {
            tokio::select! {
                biased;
                out = &mut work => break out,
                update = updates.recv() => match update {
                    Ok(u) => rec.emit_now(vec![self.pending_event(rec, Some(u.setup), Some(u.output))]),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break work.await,
                },
            }
        };
        // What setup printed last comes before the outcome.
        while let Ok(u) = updates.try_recv() {
            rec.emit_now(vec![self.pending_event(rec, Some(u.setup), Some(u.output))]);
        }
        out
    }

    /// After a wait: `ready` (when `pending` was announced) and `connected`
    /// (once per turn) if the sandbox runs, else `failed` with `error` as
    /// the reason (or a generic one).
    pub async fn announce_outcome(&self, rec: &mut Recorder, error: Option<&TurnError>) {
        let waited = self.waited.swap(false, Ordering::Relaxed);
        let mut events = Vec::new();
        if self.envs.running(&self.env_id).is_some() {
            if waited {
                events.push(self.state_event(rec, "ready", None));
            }
            if !self.connected.swap(true, Ordering::Relaxed) {
                events.push(self.state_event(rec, "connected", None));
            }
        } else {
            let (code, message) = match error {
                Some(e) => (e.code.clone(), e.message.clone()),
                None => ("sandbox_error".to_string(), format!("environment {} could not be initialized", self.env_id)),
            };
            let error = EnvironmentStateError { code, message, kind: "environment_error".into() };
            events.push(self.state_event(rec, "failed", Some(error)));
        }
        if !events.is_empty() {
            let _ = rec.emit(events).await;
        }
    }

    fn environment_state(
        &self,
        status: &str,
        error: Option<EnvironmentStateError>,
        setup: Option<EnvironmentSetup>,
    ) -> EnvironmentState {
        EnvironmentState { id: self.env_id.clone(), status: status.into(), kind: "openai_hosted".into(), error, setup }
    }

    fn pending_event(&self, rec: &Recorder, setup: Option<EnvironmentSetup>, output: Option<String>) -> EventBody {
        EventBody::EnvironmentPending {
            session_id: self.session_id,
            turn_id: Some(rec.turn.id),
            environment: self.environment_state("pending", None, setup),
            setup_output: output,
        }
    }

    fn state_event(&self, rec: &Recorder, status: &str, error: Option<EnvironmentStateError>) -> EventBody {
        let environment = self.environment_state(status, error, None);
        let (session_id, turn_id) = (self.session_id, Some(rec.turn.id));
        match status {
            "pending" => self.pending_event(rec, None, None),
            "ready" => EventBody::EnvironmentReady { session_id, turn_id, environment },
            "connected" => EventBody::EnvironmentConnected { session_id, turn_id, environment },
            _ => EventBody::EnvironmentFailed { session_id, turn_id, environment },
        }
    }

    fn env(&self) -> std::collections::BTreeMap<String, String> {
        [
            ("REBYTE_OUTPUT_DIR".to_string(), self.output_dir.clone()),
            ("REBYTE_SESSION_ID".to_string(), self.session_id.to_string()),
        ]
        .into_iter()
        .collect()
    }

    async fn shell(&self, call_id: &str, args: &Value, rec: &mut Recorder, cancel: &CancellationToken) -> HostedOutput {
        let Some(command) = args.get("command").and_then(Value::as_str).map(str::to_string) else {
            return HostedOutput::text("error: `command` (a string) is required");
        };
        let cwd = args.get("cwd").and_then(Value::as_str).map(str::to_string);
        let timeout =
            args.get("timeout_ms").and_then(Value::as_u64).unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, MAX_TIMEOUT_MS);
        let sandbox = match self.sandbox(rec, cancel).await {
            Ok(s) => s,
            Err(out) => return out,
        };
        let item_id = new_item_id();
        let turn_id = rec_turn(rec);
        let item =
            |output: Option<String>, exit_code: Option<i64>, duration_ms: Option<i64>, status| Item::CommandExecution {
                id: item_id.clone(),
                turn_id,
                call_id: call_id.to_string(),
                command: command.clone(),
                cwd: cwd.clone(),
                output,
                exit_code,
                duration_ms,
                status,
            };
        let index = match rec.add_item(item(None, None, None, ItemStatus::InProgress)).await {
            Ok(i) => i,
            Err(e) => return HostedOutput::text(format!("error: {e}")),
        };
        self.make_output_dir(&sandbox).await;
        let mut request = ExecRequest::new(command.clone()).timeout(Duration::from_millis(timeout));
        request.cwd = cwd.clone();
        request.env = self.env();
        let started = std::time::Instant::now();
        let mut execution = match sandbox.exec(request).await {
            Ok(e) => e,
            Err(e) => {
                let text = format!("error: could not start the command: {e}");
                let _ =
                    rec.done_item(item(Some(text.clone()), None, None, ItemStatus::Failed), index, Vec::new()).await;
                rec.tool_finished(ToolKind::Shell, ItemStatus::Failed);
                return HostedOutput::text(text);
            }
        };
        let killer = execution.killer();
        let mut output = Vec::new();
        let (sid, tid) = (rec.session.id, rec.turn.id);
        let status = loop {
            let event = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    let _ = killer.kill().await;
                    break None;
                }
                ev = execution.next() => ev,
            };
            match event {
                Ok(Some(ExecEvent::Stdout(b) | ExecEvent::Stderr(b))) => {
                    output.extend_from_slice(&b);
                    let delta = String::from_utf8_lossy(&b).into_owned();
                    rec.emit_now(vec![EventBody::CommandOutputDelta {
                        session_id: sid,
                        turn_id: tid,
                        item_id: item_id.clone(),
                        output_index: index,
                        delta,
                    }]);
                }
                Ok(Some(ExecEvent::Exit(status))) => break Some(status),
                Ok(None) => break None,
                Err(e) => {
                    output.extend_from_slice(format!("\n[sandbox error: {e}]").as_bytes());
                    break None;
                }
            }
        };
        let duration_ms = started.elapsed().as_millis() as i64;
        let full = String::from_utf8_lossy(&output).into_owned();
        let shown = self.truncate(&sandbox, &item_id, full).await;
        let (code, item_status, note) = match status {
            Some(s) if s.timed_out => {
                (s.code.map(i64::from), ItemStatus::Failed, format!("timed out after {timeout} ms"))
            }
            Some(s) => (
                s.code.map(i64::from),
                if s.success() { ItemStatus::Completed } else { ItemStatus::Failed },
                String::new(),
            ),
            None => (None, ItemStatus::Incomplete, "stopped".to_string()),
        };
        let _ = rec.done_item(item(Some(shown.clone()), code, Some(duration_ms), item_status), index, Vec::new()).await;
        rec.tool_finished(ToolKind::Shell, item_status);
        let code_text = code.map_or_else(|| "none".to_string(), |c| c.to_string());
        HostedOutput::text(format!(
            "exit code: {code_text}{}\n{shown}",
            if note.is_empty() { String::new() } else { format!(" ({note})") }
        ))
    }

    /// Makes the output directory, once per turn: by the agent itself, one
    /// round trip (a `mkdir -p` process before every command cost ~5 ms here,
    /// more than the command it preceded).
    async fn make_output_dir(&self, sandbox: &Arc<dyn Sandbox>) {
        if self.outputs_made.load(Ordering::Relaxed) {
            return;
        }
        match sandbox.make_dir(&self.output_dir).await {
            Ok(()) => self.outputs_made.store(true, Ordering::Relaxed),
            Err(e) => tracing::warn!(error = %e, dir = %self.output_dir, "the output directory could not be made"),
        }
    }

    /// Keeps the head and tail of long output; the whole goes to a log file.
    async fn truncate(&self, sandbox: &Arc<dyn Sandbox>, item_id: &str, full: String) -> String {
        if full.len() <= HISTORY_LIMIT {
            return full;
        }
        let path = format!("/workspace/.rebyte/logs/{item_id}.log");
        let saved = sandbox.write_file(&path, full.clone().into_bytes()).await.is_ok();
        let head: String = full.chars().take(HISTORY_LIMIT / 2).collect();
        let tail: String = {
            let v: Vec<char> = full.chars().rev().take(HISTORY_LIMIT / 2).collect();
            v.into_iter().rev().collect()
        };
        let omitted = full.len().saturating_sub(head.len() + tail.len());
        let where_ = if saved { format!("; the full output is in {path}") } else { String::new() };
        format!("{head}\n[… {omitted} bytes omitted{where_} …]\n{tail}")
    }

    async fn file_op(
        &self,
        name: &str,
        call_id: &str,
        args: &Value,
        rec: &mut Recorder,
        cancel: &CancellationToken,
    ) -> HostedOutput {
        let Some(path) = args.get("path").and_then(Value::as_str).map(str::to_string) else {
            return HostedOutput::text("error: `path` (a string) is required");
        };
        let sandbox = match self.sandbox(rec, cancel).await {
            Ok(s) => s,
            Err(out) => return out,
        };
        let started = std::time::Instant::now();
        let (text, ok) = if name == "read_file" {
            match sandbox.read_file(&path).await {
                Ok(bytes) if bytes.len() > READ_LIMIT => {
                    (format!("error: {path} has {} bytes; read it with shell in parts", bytes.len()), false)
                }
                Ok(bytes) => (String::from_utf8_lossy(&bytes).into_owned(), true),
                Err(e) => (format!("error: {e}"), false),
            }
        } else {
            let content = args.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
            let size = content.len();
            match sandbox.write_file(&path, content.into_bytes()).await {
                Ok(()) => (format!("wrote {size} bytes to {path}"), true),
                Err(e) => (format!("error: {e}"), false),
            }
        };
        let item = Item::CommandExecution {
            id: new_item_id(),
            turn_id: rec_turn(rec),
            call_id: call_id.to_string(),
            command: format!("{name} {path}"),
            cwd: None,
            output: Some(if name == "read_file" && ok { format!("{} bytes", text.len()) } else { text.clone() }),
            exit_code: Some(if ok { 0 } else { 1 }),
            duration_ms: Some(started.elapsed().as_millis() as i64),
            status: if ok { ItemStatus::Completed } else { ItemStatus::Failed },
        };
        let _ = rec.add_done_item(item).await;
        rec.tool_finished(ToolKind::File, if ok { ItemStatus::Completed } else { ItemStatus::Failed });
        HostedOutput::text(text)
    }
}

fn rec_turn(rec: &Recorder) -> TurnId {
    rec.turn.id
}

#[async_trait::async_trait]
impl HostedTools for SandboxTools {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                "shell",
                "Run a shell command in the environment's sandbox (/workspace). Write deliverables to $REBYTE_OUTPUT_DIR.",
                json!({"type": "object", "properties": {
                    "command": {"type": "string"}, "cwd": {"type": "string"},
                    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS}},
                    "required": ["command"]}),
            ),
            ToolSpec::new(
                "read_file",
                "Read a text file of the environment (a path under /workspace).",
                json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            ),
            ToolSpec::new(
                "write_file",
                "Write a text file of the environment (a path under /workspace), creating directories.",
                json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                       "required": ["path", "content"]}),
            ),
        ]
    }

    fn handles(&self, name: &str) -> bool {
        matches!(name, "shell" | "read_file" | "write_file")
    }

    async fn call(
        &self,
        name: &str,
        call_id: &str,
        arguments: Value,
        rec: &mut Recorder,
        cancel: &CancellationToken,
    ) -> HostedOutput {
        match name {
            "shell" => self.shell(call_id, &arguments, rec, cancel).await,
            _ => self.file_op(name, call_id, &arguments, rec, cancel).await,
        }
    }
}

/// Publishes the session's output directory as artifacts of `turn_id`: new
/// or changed files only. Does nothing if the sandbox is not running.
pub async fn collect_outputs(
    envs: &Environments,
    store: &dyn store::Store,
    org_id: &str,
    session: &SessionRecord,
    env_id: &EnvironmentId,
    turn_id: TurnId,
) {
    let Some(sandbox) = envs.running(env_id) else { return };
    let root = output_dir(session);
    let skip_sessions = session.environment_role == EnvironmentRole::Owner;
    // The newest content published per path (later rows override earlier ones).
    let newest: std::collections::HashMap<String, String> =
        store.artifact_hashes(org_id, session.id).await.unwrap_or_default().into_iter().collect();
    let mut stack = vec![String::new()];
    let mut seen = 0;
    while let Some(rel) = stack.pop() {
        let dir = if rel.is_empty() { root.clone() } else { format!("{root}/{rel}") };
        let Ok(entries) = sandbox.list_dir(&dir).await else { continue };
        for entry in entries {
            let child = if rel.is_empty() { entry.name.clone() } else { format!("{rel}/{}", entry.name) };
            match entry.kind {
                sandbox::FileKind::Dir if !(skip_sessions && child == "sessions") => stack.push(child),
                sandbox::FileKind::File => {
                    seen += 1;
                    if seen > 1000 {
                        return;
                    }
                    let Ok(content) = sandbox.read_file(&format!("{root}/{child}")).await else { continue };
                    let sha = sha256_hex(&content);
                    let path = format!("{root}/{child}");
                    if newest.get(&path) == Some(&sha) {
                        continue;
                    }
                    let artifact = store::Artifact {
                        id: protocol::ids::Kind::Artifact.mint(),
                        object: "agent.session.artifact".into(),
                        created_at: now(),
                        environment_id: env_id.clone(),
                        session_id: session.id,
                        turn_id,
                        path,
                        size_bytes: content.len() as u64,
                        sha256: sha,
                    };
                    if let Err(e) = store.put_artifact(org_id, &artifact, &content).await {
                        tracing::warn!(error = %e, "storing an artifact failed");
                    }
                }
                _ => {}
            }
        }
    }
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}
