//! Limited secrets at the egress proxy: [`Interception`] holds a sandbox's
//! placeholders and its CA, writes the CA bundle its processes trust, and
//! [`serve`] handles a `CONNECT` to a host some placeholder may be used
//! toward: it answers the sandbox's TLS with a certificate from the CA,
//! reads the one request of the connection, swaps the placeholders allowed
//! toward that host into its request line and header values, and sends it
//! to the real host over TLS verified against the host's roots, with
//! `Connection: close` (the client opens a new tunnel for its next request).
//! Bodies pass unchanged. A placeholder sent anywhere else stays a
//! placeholder.

use super::ca::{self, EnvironmentCa};
use super::placeholders::Placeholders;
use super::proxy::{self, Head};
use super::{Egress, EgressError};
use rustls::RootCertStore;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

/// The CA certificate alone, in the run directory.
pub const CA_FILE: &str = "egress-ca.pem";
/// The host's roots followed by the CA, in the run directory.
pub const BUNDLE_FILE: &str = "ca-bundle.pem";

/// What the sandbox's processes that hold placeholders get in their
/// environment: the proxy, and trust in the environment's CA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitedSecret {
    pub placeholder: String,
    pub env: Vec<(String, String)>,
}

/// The limited secrets of one sandbox.
pub struct Interception {
    sandbox: String,
    pub placeholders: Placeholders,
    ca: OnceLock<EnvironmentCa>,
    /// The run directory: its host path, and where the sandbox sees it.
    run_dir: PathBuf,
    run_dir_inside: String,
    /// The proxy's URL inside the sandbox.
    proxy_url: String,
    /// The roots real hosts are verified against; `None`: the host's.
    roots: Option<Arc<RootCertStore>>,
}

impl std::fmt::Debug for Interception {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interception")
            .field("sandbox", &self.sandbox)
            .field("placeholders", &self.placeholders)
            .finish()
    }
}

impl Interception {
    pub fn new(sandbox: &str, run_dir: &Path, run_dir_inside: &str, proxy_url: &str) -> Self {
        Self {
            sandbox: sandbox.to_string(),
            placeholders: Placeholders::default(),
            ca: OnceLock::new(),
            run_dir: run_dir.to_path_buf(),
            run_dir_inside: run_dir_inside.to_string(),
            proxy_url: proxy_url.to_string(),
            roots: None,
        }
    }

    /// Verifies real hosts against `roots` instead of the host's.
    pub fn with_roots(mut self, roots: Arc<RootCertStore>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// The placeholder for a limited secret and the environment a process
    /// using it needs (made with the CA and its bundle on first use).
    pub fn bind(&self, name: &str, value: &str, hosts: &[String]) -> Result<LimitedSecret, String> {
        self.ca()?;
        let placeholder = self.placeholders.bind(name, value, hosts);
        let bundle = format!("{}/{BUNDLE_FILE}", self.run_dir_inside);
        let ca_file = format!("{}/{CA_FILE}", self.run_dir_inside);
        let mut env: Vec<(String, String)> = Vec::new();
        for key in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            env.push((key.into(), self.proxy_url.clone()));
        }
        for key in ["NO_PROXY", "no_proxy"] {
            env.push((key.into(), "localhost,127.0.0.1,::1".into()));
        }
        for key in ["SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO"] {
            env.push((key.into(), bundle.clone()));
        }
        env.push(("NODE_EXTRA_CA_CERTS".into(), ca_file));
        Ok(LimitedSecret { placeholder, env })
    }

    /// `head` with the placeholders allowed toward `host` swapped in, if
    /// the host is one of theirs.
    pub(super) fn swapped(&self, host: &str, head: &Head) -> Option<Head> {
        if !self.placeholders.intercepts(host) {
            return None;
        }
        let swap = |text: &str| self.placeholders.substitute(host, text).into_owned();
        Some(Head {
            method: head.method.clone(),
            target: swap(&head.target),
            version: head.version.clone(),
            headers: head.headers.iter().map(|(n, v)| (n.clone(), swap(v))).collect(),
        })
    }

    fn ca(&self) -> Result<&EnvironmentCa, String> {
        if let Some(ca) = self.ca.get() {
            return Ok(ca);
        }
        let ca = EnvironmentCa::new(&self.sandbox)?;
        let pem = ca.cert_pem();
        let write = |name: &str, text: &str| {
            let path = self.run_dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))
        };
        write(CA_FILE, &pem)?;
        write(BUNDLE_FILE, &format!("{}\n{pem}", host_bundle()))?;
        Ok(self.ca.get_or_init(|| ca))
    }
}

/// The host's PEM bundle, if it has one where OpenSSL looks.
fn host_bundle() -> String {
    let candidates = [std::env::var("SSL_CERT_FILE").ok(), Some("/etc/ssl/certs/ca-certificates.crt".to_string())];
    candidates.into_iter().flatten().find_map(|path| std::fs::read_to_string(path).ok()).unwrap_or_default()
}

/// Handles one intercepted `CONNECT host:port` whose request line has been
/// read (`rest` is what followed it).
pub(super) async fn serve<S>(
    mut client: S,
    rest: Vec<u8>,
    host: String,
    port: u16,
    egress: &Egress,
    secrets: &Interception,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let Ok(ca) = secrets.ca() else {
        return proxy::respond(&mut client, "502 Bad Gateway", "", "rebyte egress: no certificate authority\n").await;
    };
    let (server, tls_client) =
        match (ca.server_config(&host), ca::client_config(secrets.roots.clone().unwrap_or_else(ca::host_roots))) {
            (Ok(s), Ok(c)) => (s, c),
            (Err(why), _) | (_, Err(why)) => {
                return proxy::respond(&mut client, "502 Bad Gateway", "", &format!("rebyte egress: {why}\n")).await;
            }
        };
    let upstream = match egress.connect(&host, port).await {
        Ok(s) => s,
        Err(EgressError::Denied(why)) => {
            return proxy::respond(&mut client, "403 Forbidden", "", &format!("rebyte egress: {why}\n")).await;
        }
        Err(EgressError::Unreachable(why)) => {
            return proxy::respond(&mut client, "502 Bad Gateway", "", &format!("rebyte egress: {why}\n")).await;
        }
    };
    let name = match ca::server_name(&host) {
        Ok(n) => n,
        Err(why) => {
            return proxy::respond(&mut client, "400 Bad Request", "", &format!("rebyte egress: {why}\n")).await;
        }
    };
    let upstream = match tokio_rustls::TlsConnector::from(tls_client).connect(name, upstream).await {
        Ok(s) => s,
        Err(e) => {
            let why = format!("rebyte egress: TLS to {host}:{port} failed: {e}\n");
            return proxy::respond(&mut client, "502 Bad Gateway", "", &why).await;
        }
    };
    if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_err() {
        return;
    }
    let Ok(mut inner) = tokio_rustls::TlsAcceptor::from(server).accept(Prefixed { prefix: rest, inner: client }).await
    else {
        return;
    };
    let Some((raw, body)) = proxy::read_head(&mut inner).await else { return };
    let Some(head) = proxy::parse_head(&raw) else {
        return proxy::respond(&mut inner, "400 Bad Request", "", "rebyte egress: malformed request\n").await;
    };
    let swapped = secrets.swapped(&host, &head).unwrap_or(head);
    let mut out = proxy::origin_head(&swapped, &swapped.target);
    out.extend_from_slice(&body);
    let mut upstream: super::BoxStream = Box::new(upstream);
    if upstream.write_all(&out).await.is_ok() {
        proxy::exchange(inner, upstream).await;
    }
}

/// A stream whose first reads return bytes already read from it.
struct Prefixed<S> {
    prefix: Vec<u8>,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.drain(..n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
