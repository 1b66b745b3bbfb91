//! A sandbox's way out: [`Egress::connect`] opens a TCP stream to `host:port`
//! as the sandbox's network policy allows — the sandbox's own loopback
//! through the agent's dial socket; for an enabled network anything else
//! through it too, from the sandbox's namespace under the host's rules; for
//! a restricted one from the host after the policy ([`DomainPolicy`]) said
//! yes — and [`proxy`] serves it as an HTTP
//! proxy (CONNECT and absolute-form requests) to the sandbox's processes
//! (restricted network) and to the server's environment-origin clients.

pub mod ca;
pub mod intercept;
pub mod placeholders;
pub mod policy;
pub mod proxy;

pub use policy::DomainPolicy;

use crate::api::NetworkPolicy;
use crate::client::Resume;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// How long resolving and connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A byte stream to a destination (TCP from the host, or a relay through
/// the agent into the sandbox's network namespace).
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}
pub type BoxStream = Box<dyn Stream>;

/// Why a destination was not reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// The network policy forbids it.
    #[error("{0}")]
    Denied(String),
    /// Allowed, but resolving or connecting failed.
    #[error("{0}")]
    Unreachable(String),
}

/// The network side of one sandbox.
#[derive(Clone)]
pub struct Egress {
    pub network: NetworkPolicy,
    pub domains: DomainPolicy,
    /// The agent's dial socket (host path): connections from inside the
    /// sandbox's own network namespace to its loopback.
    pub dial_socket: Option<PathBuf>,
    /// Resumes a paused sandbox before a dial into it.
    pub resume: Option<Arc<dyn Resume>>,
    /// Limited secrets, swapped in toward their hosts by the proxy.
    pub secrets: Option<Arc<intercept::Interception>>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("network", &self.network)
            .field("domains", &self.domains)
            .field("dial_socket", &self.dial_socket)
            .finish_non_exhaustive()
    }
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Egress {
    /// Opens a stream to `host:port` as the policy allows. `localhost` means
    /// the sandbox's own loopback.
    pub async fn connect(&self, host: &str, port: u16) -> Result<BoxStream, EgressError> {
        let host = policy::normalize_host(host);
        if is_loopback_name(&host) && self.dial_socket.is_some() {
            return self.dial_inside(Ipv4Addr::LOCALHOST, port).await;
        }
        let restricted = match self.network {
            NetworkPolicy::Disabled => {
                return Err(EgressError::Denied(format!("{host}: the environment's network access is disabled")));
            }
            // From the sandbox's own namespace, under the host's rules for it.
            NetworkPolicy::Enabled if self.dial_socket.is_some() => return self.dial_routed(&host, port).await,
            NetworkPolicy::Enabled => false,
            NetworkPolicy::Restricted => {
                self.domains.check(&host).map_err(EgressError::Denied)?;
                true
            }
        };
        let addrs = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host.as_str(), port)))
            .await
            .map_err(|_| EgressError::Unreachable(format!("{host}: name resolution timed out")))?
            .map_err(|e| EgressError::Unreachable(format!("{host}: {e}")))?
            .collect::<Vec<SocketAddr>>();
        if restricted
            && !self.domains.names_exactly(&host)
            && let Some(bad) = addrs.iter().find(|a| policy::is_sensitive(a.ip()))
        {
            return Err(EgressError::Denied(format!(
                "{host} resolves to {}, which the environment reaches only if allowed_domains names {host} exactly",
                bad.ip()
            )));
        }
        let mut last = format!("{host}: no address");
        for addr in addrs {
            match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(Box::new(stream));
                }
                Ok(Err(e)) => last = format!("{host} ({addr}): {e}"),
                Err(_) => last = format!("{host} ({addr}): connect timed out"),
            }
        }
        Err(EgressError::Unreachable(last))
    }

    /// `host:port` resolved on the host, dialled by the agent from the
    /// sandbox's network namespace (IPv4 only: the sandbox has no IPv6).
    async fn dial_routed(&self, host: &str, port: u16) -> Result<BoxStream, EgressError> {
        let addrs = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| EgressError::Unreachable(format!("{host}: name resolution timed out")))?
            .map_err(|e| EgressError::Unreachable(format!("{host}: {e}")))?;
        let mut last = format!("{host}: no IPv4 address");
        for addr in addrs {
            let ip = match addr.ip() {
                IpAddr::V4(ip) => ip,
                IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
                    Some(ip) => ip,
                    None => continue,
                },
            };
            match self.dial_inside(ip, port).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = e.to_string(),
            }
        }
        Err(EgressError::Unreachable(last))
    }

    /// A connection to `ip:port` from inside the sandbox, made by the agent.
    async fn dial_inside(&self, ip: Ipv4Addr, port: u16) -> Result<BoxStream, EgressError> {
        let Some(path) = &self.dial_socket else {
            return Err(EgressError::Unreachable("this sandbox offers no connection to its loopback".into()));
        };
        if let Some(resume) = &self.resume {
            resume.ensure_running().await.map_err(|e| EgressError::Unreachable(format!("the sandbox: {e}")))?;
        }
        let unreachable = |e: std::io::Error| EgressError::Unreachable(format!("the sandbox's agent: {e}"));
        let dial = async {
            let mut stream = tokio::net::UnixStream::connect(path).await.map_err(unreachable)?;
            stream.write_all(format!("{ip} {port}\n").as_bytes()).await.map_err(unreachable)?;
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).await.map_err(unreachable)?;
            match line.trim_end().strip_prefix("ok") {
                Some("") => Ok(reader),
                _ => Err(EgressError::Unreachable(format!(
                    "{ip}:{port} from the sandbox: {}",
                    line.trim_end().trim_start_matches("error ")
                ))),
            }
        };
        let reader = tokio::time::timeout(CONNECT_TIMEOUT, dial)
            .await
            .map_err(|_| EgressError::Unreachable(format!("{ip}:{port} from the sandbox: timed out")))??;
        // Keep the reader: it may hold the peer's first bytes (a banner).
        Ok(Box::new(reader))
    }
}
