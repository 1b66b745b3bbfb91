//! The host's end of the agent protocol, for any transport: one reader task
//! routes frames by id to waiting requests and running processes, one writer
//! task serializes outgoing frames. Backends build their [`crate::Sandbox`]
//! on [`Connection`]; a remote backend would reuse it over TCP.

mod exec;
mod stdio;

pub use exec::{ExecEvent, ExecOutput, Execution, Killer, Resume};
pub use stdio::{ProcessHandle, StdioProcess};

use crate::api::{DirEntry, ExecRequest, ExitStatus, SpawnRequest};
use crate::error::{Error, Result};
use crate::wire::{self, Exited, Frame, Hello, Kind, ProcessSpec, Reply, Request};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// What the reader task delivers for a running process.
#[derive(Debug)]
pub(crate) enum ProcEvent {
    Stdout(Bytes),
    Stderr(Bytes),
    Exited(Exited),
    /// The connection ended before the process's exit was reported.
    Lost(String),
}

type ReplySender = oneshot::Sender<(Reply, Vec<u8>)>;

#[derive(Default)]
struct Route {
    reply: Option<ReplySender>,
    events: Option<mpsc::UnboundedSender<ProcEvent>>,
}

#[derive(Default)]
struct Routes {
    map: HashMap<u32, Route>,
    /// Why the connection ended, once it has.
    closed: Option<String>,
}

/// A live connection to one agent.
pub struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    // Touched by callers and the reader task, never across an await.
    routes: Mutex<Routes>,
    next_id: AtomicU32,
}

impl Connection {
    /// Sends `init` (if any), waits for the agent's hello, then starts the
    /// reader and writer tasks.
    pub async fn handshake<R, W>(
        mut reader: R,
        mut writer: W,
        init: Option<Frame>,
        timeout: Duration,
    ) -> Result<(Arc<Connection>, Hello)>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        if let Some(init) = init {
            writer.write_all(&init.encode()).await.map_err(|e| Error::io("send init to the agent", e))?;
        }
        let first = tokio::time::timeout(timeout, wire::read_frame(&mut reader))
            .await
            .map_err(|_| Error::Timeout(timeout))??;
        let hello = match first {
            Some(f) if f.kind == Kind::Hello => f.parse::<Hello>()?,
            Some(f) if f.kind == Kind::Fatal => return Err(Error::Create(f.parse::<wire::Fatal>()?.message)),
            Some(f) => return Err(Error::Protocol(format!("expected hello, got {:?}", f.kind))),
            None => return Err(Error::Create("the agent exited before it was ready".into())),
        };
        if hello.version != wire::PROTOCOL_VERSION {
            return Err(Error::Create(format!(
                "agent speaks protocol {}, this host {}",
                hello.version,
                wire::PROTOCOL_VERSION
            )));
        }
        let (out, rx) = mpsc::unbounded_channel();
        let conn = Arc::new(Connection { out, routes: Mutex::default(), next_id: AtomicU32::new(1) });
        tokio::spawn(write_loop(writer, rx));
        tokio::spawn(read_loop(reader, Arc::downgrade(&conn)));
        Ok((conn, hello))
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why the connection ended, if it has.
    pub fn closed(&self) -> Option<String> {
        self.routes().closed.clone()
    }

    pub(crate) fn send(&self, frame: &Frame) -> Result<()> {
        self.out.send(frame.encode()).map_err(|_| Error::Gone("the connection to the agent is closed".into()))
    }

    fn register(&self, route: Route) -> Result<u32> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut routes = self.routes();
        if let Some(reason) = &routes.closed {
            return Err(Error::Gone(reason.clone()));
        }
        routes.map.insert(id, route);
        Ok(id)
    }

    fn forget(&self, id: u32) {
        self.routes().map.remove(&id);
    }

    /// Sends a request and waits for its reply; error replies become errors.
    pub async fn request(&self, request: &Request, data: Vec<u8>) -> Result<(Reply, Vec<u8>)> {
        let (tx, rx) = oneshot::channel();
        let id = self.register(Route { reply: Some(tx), events: None })?;
        if let Err(e) = self.send(&Frame::json(Kind::Request, id, request, data)?) {
            self.forget(id);
            return Err(e);
        }
        match rx.await {
            Ok((Reply::Error(e), _)) => Err(e.into_error()),
            Ok(reply) => Ok(reply),
            Err(_) => Err(Error::Gone(self.closed().unwrap_or_else(|| "the agent went away".into()))),
        }
    }

    /// Starts a process; its events arrive on the returned receiver.
    pub(crate) async fn start(
        self: &Arc<Self>,
        spec: ProcessSpec,
        stdin: Option<Vec<u8>>,
    ) -> Result<(u32, i32, mpsc::UnboundedReceiver<ProcEvent>)> {
        let (tx, rx) = oneshot::channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let id = self.register(Route { reply: Some(tx), events: Some(events) })?;
        let mut sent = self.send(&Frame::json(Kind::Request, id, &Request::Exec(spec), Vec::new())?);
        if let (Ok(()), Some(data)) = (&sent, stdin) {
            // Queued behind the request, so no round trip is spent waiting.
            for chunk in data.chunks(64 << 10) {
                sent = sent.and_then(|()| self.send(&Frame::data(Kind::Stdin, id, chunk.to_vec())));
            }
            sent = sent.and_then(|()| self.send(&Frame::data(Kind::StdinEof, id, Vec::new())));
        }
        if let Err(e) = sent {
            self.forget(id);
            return Err(e);
        }
        match rx.await {
            Ok((Reply::Started { pid }, _)) => Ok((id, pid, events_rx)),
            Ok((Reply::Error(e), _)) => {
                self.forget(id);
                Err(e.into_error())
            }
            Ok((other, _)) => Err(Error::Protocol(format!("unexpected reply to exec: {other:?}"))),
            Err(_) => Err(Error::Gone(self.closed().unwrap_or_else(|| "the agent went away".into()))),
        }
    }

    /// Starts `/bin/sh -c command`; see [`crate::Sandbox::exec`]. `resume`
    /// lets a kill of the command resume a paused sandbox first.
    pub async fn exec(self: &Arc<Self>, request: ExecRequest, resume: Option<Arc<dyn Resume>>) -> Result<Execution> {
        let spec = ProcessSpec {
            command: request.command,
            cwd: request.cwd,
            env: request.env,
            stdin: request.stdin.is_some(),
            timeout_ms: request.timeout.map(|t| t.as_millis().min(u64::MAX as u128) as u64),
        };
        let (id, pid, events) = self.start(spec, request.stdin).await?;
        Ok(Execution::new(self.clone(), id, pid, events, resume))
    }

    /// Starts a long-lived process; see [`crate::Sandbox::spawn_stdio`].
    pub async fn spawn_stdio(
        self: &Arc<Self>,
        request: SpawnRequest,
        resume: Option<Arc<dyn Resume>>,
    ) -> Result<StdioProcess> {
        let spec =
            ProcessSpec { command: request.command, cwd: request.cwd, env: request.env, stdin: true, timeout_ms: None };
        let (id, pid, events) = self.start(spec, None).await?;
        Ok(stdio::attach(self.clone(), id, pid, events, resume))
    }

    /// Tells the agent `n` output bytes of process `id` were consumed.
    pub(crate) fn ack(&self, id: u32, n: u64) {
        let _ = self.send(&Frame::data(Kind::Ack, id, n.to_be_bytes().to_vec()));
    }

    pub async fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>> {
        let path = crate::paths::workspace_path(path)?;
        match self.request(&Request::ReadFile { path, max_bytes }, Vec::new()).await? {
            (Reply::File { .. }, data) => Ok(data),
            (other, _) => Err(Error::Protocol(format!("unexpected reply to read_file: {other:?}"))),
        }
    }

    pub async fn write_file(&self, path: &str, data: Vec<u8>, max_bytes: u64) -> Result<()> {
        let path = crate::paths::workspace_file(path)?;
        if data.len() as u64 > max_bytes {
            return Err(Error::TooLarge { size: data.len() as u64, limit: max_bytes });
        }
        self.request(&Request::WriteFile { path, max_bytes }, data).await.map(drop)
    }

    pub async fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let path = crate::paths::workspace_path(path)?;
        match self.request(&Request::ListDir { path }, Vec::new()).await? {
            (Reply::Entries { entries }, _) => Ok(entries),
            (other, _) => Err(Error::Protocol(format!("unexpected reply to list_dir: {other:?}"))),
        }
    }

    pub async fn make_dir(&self, path: &str) -> Result<()> {
        let path = crate::paths::workspace_file(path)?;
        self.request(&Request::MakeDir { path }, Vec::new()).await.map(drop)
    }

    pub async fn delete(&self, path: &str) -> Result<()> {
        let path = crate::paths::workspace_file(path)?;
        self.request(&Request::Delete { path }, Vec::new()).await.map(drop)
    }
}

impl From<Exited> for ExitStatus {
    fn from(e: Exited) -> Self {
        ExitStatus {
            code: e.code,
            signal: e.signal,
            duration: Duration::from_micros(e.duration_us),
            timed_out: e.timed_out,
            killed: e.killed,
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(mut buf) = rx.recv().await {
        // Coalesce what is already queued into one write.
        while buf.len() < (256 << 10) {
            match rx.try_recv() {
                Ok(more) => buf.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        if writer.write_all(&buf).await.is_err() {
            return;
        }
    }
}

async fn read_loop<R: AsyncRead + Unpin>(mut reader: R, conn: std::sync::Weak<Connection>) {
    let reason = loop {
        let frame = match wire::read_frame(&mut reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break "the agent closed the connection".to_string(),
            Err(e) => break e.to_string(),
        };
        let Some(conn) = conn.upgrade() else { return };
        route(&conn, frame);
    };
    let Some(conn) = conn.upgrade() else { return };
    let routes = {
        let mut r = conn.routes();
        r.closed = Some(reason.clone());
        std::mem::take(&mut r.map)
    };
    for (_, route) in routes {
        if let Some(events) = route.events {
            let _ = events.send(ProcEvent::Lost(reason.clone()));
        }
    }
}

fn route(conn: &Connection, frame: Frame) {
    let id = frame.id;
    let mut detach = false;
    {
        let mut routes = conn.routes();
        let Some(route) = routes.map.get_mut(&id) else { return };
        match frame.kind {
            Kind::Reply => {
                let reply = frame
                    .parse::<Reply>()
                    .unwrap_or_else(|e| Reply::Error(wire::WireError::new(wire::ErrorKind::BadRequest, e.to_string())));
                if let Some(tx) = route.reply.take() {
                    let _ = tx.send((reply, frame.data));
                }
                if route.events.is_none() {
                    routes.map.remove(&id);
                }
            }
            Kind::Stdout | Kind::Stderr => {
                let data = Bytes::from(frame.data);
                let event = if frame.kind == Kind::Stdout { ProcEvent::Stdout(data) } else { ProcEvent::Stderr(data) };
                if let Some(events) = &route.events
                    && events.send(event).is_err()
                {
                    route.events = None;
                    detach = true;
                }
            }
            Kind::Exited => {
                if let (Some(events), Ok(exited)) = (&route.events, frame.parse::<Exited>()) {
                    let _ = events.send(ProcEvent::Exited(exited));
                }
                routes.map.remove(&id);
            }
            _ => {}
        }
    }
    if detach {
        conn.ack(id, u64::MAX);
    }
}
