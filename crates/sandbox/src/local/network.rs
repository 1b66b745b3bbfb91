//! The host side of a local sandbox's network: a private run directory
//! (bound read-only at `/run/rebyte`) holding the agent's dial socket and,
//! for a restricted network, the proxy socket its egress port relays to;
//! the proxy task; for an enabled network the veth pair, its rules
//! (`local::nat`) and the DNS forwarder (`local::dns`); and a lazily
//! started host proxy port for the server's own environment-origin
//! clients. Everything stops and is removed with the sandbox.

use super::nat::{NetworkConfig, Veth};
use crate::api::{NetworkPolicy, SandboxSpec};
use crate::egress::intercept::{Interception, LimitedSecret};
use crate::egress::{Egress, proxy};
use crate::error::{Error, Result};
use crate::wire::{BindSpec, EgressInit, InitConfig, VethInit};
use rand::Rng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::task::AbortHandle;

/// The sandbox path of the run directory.
const RUN: &str = "/run/rebyte";
/// The egress port inside a restricted sandbox.
pub const EGRESS_PORT: u16 = 3128;

/// An HTTP proxy on the host that reaches what the sandbox reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyEndpoint {
    /// `http://127.0.0.1:<port>`
    pub url: String,
    pub username: String,
    pub password: String,
}

pub(crate) struct Network {
    pub egress: Arc<Egress>,
    run_dir: PathBuf,
    tasks: std::sync::Mutex<Vec<AbortHandle>>,
    host_proxy: tokio::sync::OnceCell<ProxyEndpoint>,
    /// Network access enabled: the veth pair, once the agent exists.
    veth: Option<Veth>,
}

impl Network {
    /// Prepares the run directory (and the egress proxy, if restricted) and
    /// adds what the agent needs to `init` (`None` would be the host's network: no policy shares it).
    pub fn prepare(spec: &SandboxSpec, init: &mut InitConfig) -> Result<Option<Network>> {
        if !spec.network.private_namespace() {
            return Ok(None);
        }
        let run_dir = run_dir(&spec.id)?;
        let dial = run_dir.join("dial.sock");
        // Limited secrets need a way out the proxy sees: restricted and enabled networks.
        let secrets = (spec.network != NetworkPolicy::Disabled)
            .then(|| Arc::new(Interception::new(&spec.id, &run_dir, RUN, &format!("http://127.0.0.1:{EGRESS_PORT}"))));
        let egress = Arc::new(Egress {
            network: spec.network,
            domains: spec.domains.clone(),
            dial_socket: Some(dial.clone()),
            resume: None,
            secrets,
        });
        let network = Network {
            egress,
            run_dir: run_dir.clone(),
            tasks: Default::default(),
            host_proxy: Default::default(),
            veth: None,
        };
        init.dial_socket = Some(path_str(&dial)?);
        if spec.network != NetworkPolicy::Disabled {
            // The proxy: every process's way out when restricted; with network
            // access enabled, the way of those holding limited secrets.
            let socket = run_dir.join("egress.sock");
            let listener =
                tokio::net::UnixListener::bind(&socket).map_err(|e| Error::io("bind the egress proxy socket", e))?;
            let task = tokio::spawn(proxy::serve_unix(listener, network.egress.clone()));
            network.track(task.abort_handle());
            init.binds.push(BindSpec {
                source: path_str(&run_dir)?,
                target: RUN.into(),
                writable: false,
                device: false,
            });
            init.egress = Some(EgressInit { port: EGRESS_PORT, socket: format!("{RUN}/egress.sock") });
        }
        if spec.network == NetworkPolicy::Restricted {
            let url = format!("http://127.0.0.1:{EGRESS_PORT}");
            for key in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
                init.env.insert(key.into(), url.clone());
            }
            for key in ["NO_PROXY", "no_proxy"] {
                init.env.insert(key.into(), "localhost,127.0.0.1,::1".into());
            }
        }
        Ok(Some(network))
    }

    /// A placeholder for a limited secret (see [`crate::egress::intercept`]).
    pub fn bind_limited_secret(&self, name: &str, value: &str, hosts: &[String]) -> Result<LimitedSecret> {
        let Some(secrets) = &self.egress.secrets else {
            return Err(Error::Unsupported("a limited credential needs the environment's network access".into()));
        };
        secrets.bind(name, value, hosts).map_err(Error::Create)
    }

    /// Network access enabled: creates the veth pair into the network
    /// namespace of `pid` (the agent, still waiting for `init`), its rules
    /// and the DNS forwarder, and tells the agent its address.
    pub async fn attach(&mut self, config: &NetworkConfig, pid: i32, init: &mut InitConfig) -> Result<()> {
        if self.egress.network != NetworkPolicy::Enabled {
            return Ok(());
        }
        // `ip` and `nft` take a few milliseconds: not on an async worker.
        let config = config.clone();
        let veth = tokio::task::spawn_blocking(move || Veth::create(&config, pid))
            .await
            .map_err(|e| Error::Create(format!("create the sandbox's network: {e}")))??;
        let mut resolv_conf = None;
        if let Some(upstream) = super::dns::host_resolver() {
            let tasks = super::dns::start(veth.host, upstream)
                .map_err(|e| Error::io(format!("start the sandbox's DNS forwarder on {}", veth.host), e))?;
            for task in tasks {
                self.track(task);
            }
            let file = self.run_dir.join("resolv.conf");
            std::fs::write(&file, super::dns::resolv_conf(veth.host))
                .map_err(|e| Error::io("write the sandbox's resolv.conf", e))?;
            resolv_conf = Some(path_str(&file)?);
        }
        init.veth =
            Some(VethInit { name: "eth0".into(), address: veth.sandbox, prefix: 30, gateway: veth.host, resolv_conf });
        self.veth = Some(veth);
        Ok(())
    }

    /// Lets dials into the sandbox resume it first.
    pub fn with_resume(mut self, resume: Arc<dyn crate::client::Resume>) -> Self {
        let mut egress = (*self.egress).clone();
        egress.resume = Some(resume);
        self.egress = Arc::new(egress);
        self
    }

    fn track(&self, handle: AbortHandle) {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).push(handle);
    }

    /// The host proxy port, started on first use.
    pub async fn host_proxy(&self) -> Result<ProxyEndpoint> {
        self.host_proxy
            .get_or_try_init(|| async {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
                    .await
                    .map_err(|e| Error::io("bind the sandbox's host proxy", e))?;
                let port = listener.local_addr().map_err(|e| Error::io("the sandbox's host proxy", e))?.port();
                let password: String = {
                    let mut rng = rand::rng();
                    (0..32).map(|_| format!("{:x}", rng.random_range(0..16u8))).collect()
                };
                let (egress, pw) = (self.egress.clone(), password.clone());
                let task = tokio::spawn(async move { proxy::serve_tcp(listener, egress, "rebyte", &pw).await });
                self.track(task.abort_handle());
                Ok(ProxyEndpoint { url: format!("http://127.0.0.1:{port}"), username: "rebyte".into(), password })
            })
            .await
            .cloned()
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            task.abort();
        }
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}

fn path_str(p: &Path) -> Result<String> {
    p.to_str().map(str::to_string).ok_or_else(|| Error::Create(format!("path is not UTF-8: {}", p.display())))
}

/// A fresh private directory under the host's temporary directory, short
/// enough for Unix socket paths.
fn run_dir(id: &str) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir().join("rebyte-run");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(&base)
        .map_err(|e| Error::io("create the sandbox run directory", e))?;
    let short: String = id.chars().take(24).collect();
    let suffix: u32 = rand::rng().random();
    let dir = base.join(format!("{short}-{suffix:08x}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| Error::io("create the sandbox run directory", e))?;
    Ok(dir)
}
