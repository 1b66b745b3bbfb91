//! How one MCP server is configured ([`ServerConfig`]), and the two fingerprints the catalog cache
//! is keyed by: the configuration without secrets ([`ConfigHash`]) and the effective credentials
//! ([`CredentialHash`]). Secrets only ever enter a fingerprint through SHA-256.

use crate::secret::Secret;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One configured MCP server, as the engine derives it from an agent's `type: "mcp"` tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The `server_label`: the name the model uses.
    pub label: String,
    pub transport: TransportConfig,
    /// Tool names the model may search and call; `None` allows every tool.
    pub allowed_tools: Option<Vec<String>>,
    /// Sent as `_meta` on every request to this server.
    pub request_metadata: Option<Map<String, Value>>,
    /// How long one `tools/call` or `resources/read` may take; `None`: the connection's
    /// [`crate::Timeouts::call`]. Not part of the fingerprints: it changes no answer.
    pub call_timeout: Option<Duration>,
}

/// How to reach the server.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportConfig {
    Stdio(StdioConfig),
    Http(HttpConfig),
}

/// A server run as a process speaking MCP on its stdin/stdout.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StdioConfig {
    pub command: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Extra environment of the process (values may be secrets).
    pub env: BTreeMap<String, Secret>,
}

/// A Streamable HTTP server.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// The MCP endpoint, e.g. `https://mcp.example.com/mcp`.
    pub url: String,
    /// The whole `Authorization` header value (e.g. `Bearer abc`), sent as given.
    pub authorization: Option<Secret>,
    /// Extra headers sent with every request (values may be secrets).
    pub headers: BTreeMap<String, Secret>,
}

impl HttpConfig {
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig { url: url.into(), authorization: None, headers: BTreeMap::new() }
    }
}

/// Fingerprint of a server configuration without its secret values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConfigHash(pub [u8; 32]);

/// Fingerprint of a server's effective credentials (authorization, header and env values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CredentialHash(pub [u8; 32]);

fn field(hasher: &mut Sha256, tag: &str, value: &[u8]) {
    hasher.update((tag.len() as u64).to_le_bytes());
    hasher.update(tag.as_bytes());
    hasher.update((value.len() as u64).to_le_bytes());
    hasher.update(value);
}

impl ServerConfig {
    /// A configuration with no allowlist, no request metadata and the default call timeout.
    pub fn new(label: impl Into<String>, transport: TransportConfig) -> Self {
        ServerConfig { label: label.into(), transport, allowed_tools: None, request_metadata: None, call_timeout: None }
    }

    /// Whether `allowed_tools` lets the model see and call `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        self.allowed_tools.as_ref().is_none_or(|allowed| allowed.iter().any(|name| name == tool))
    }

    /// The configuration's fingerprint: label, transport, header and env names, allowlist and
    /// request metadata; never a secret value.
    pub fn config_hash(&self) -> ConfigHash {
        let mut h = Sha256::new();
        field(&mut h, "label", self.label.as_bytes());
        match &self.transport {
            TransportConfig::Stdio(stdio) => {
                field(&mut h, "stdio.command", stdio.command.as_bytes());
                for arg in &stdio.args {
                    field(&mut h, "stdio.arg", arg.as_bytes());
                }
                if let Some(cwd) = &stdio.cwd {
                    field(&mut h, "stdio.cwd", cwd.to_string_lossy().as_bytes());
                }
                for name in stdio.env.keys() {
                    field(&mut h, "stdio.env", name.as_bytes());
                }
            }
            TransportConfig::Http(http) => {
                field(&mut h, "http.url", http.url.as_bytes());
                field(&mut h, "http.authorization", &[u8::from(http.authorization.is_some())]);
                for name in http.headers.keys() {
                    field(&mut h, "http.header", name.to_ascii_lowercase().as_bytes());
                }
            }
        }
        match &self.allowed_tools {
            None => field(&mut h, "allowed", b"*"),
            Some(allowed) => {
                let mut sorted: Vec<&String> = allowed.iter().collect();
                sorted.sort();
                for name in sorted {
                    field(&mut h, "allowed.tool", name.as_bytes());
                }
            }
        }
        if let Some(meta) = &self.request_metadata {
            field(&mut h, "meta", Value::Object(meta.clone()).to_string().as_bytes());
        }
        ConfigHash(h.finalize().into())
    }

    /// The effective credentials' fingerprint.
    pub fn credential_hash(&self) -> CredentialHash {
        let mut h = Sha256::new();
        h.update(b"rebyte-mcp-credentials-v1");
        match &self.transport {
            TransportConfig::Stdio(stdio) => {
                for (name, value) in &stdio.env {
                    field(&mut h, "env", name.as_bytes());
                    crate::secret::digest_into(value, &mut h);
                }
            }
            TransportConfig::Http(http) => {
                if let Some(authorization) = &http.authorization {
                    field(&mut h, "authorization", b"");
                    crate::secret::digest_into(authorization, &mut h);
                }
                for (name, value) in &http.headers {
                    field(&mut h, "header", name.to_ascii_lowercase().as_bytes());
                    crate::secret::digest_into(value, &mut h);
                }
            }
        }
        CredentialHash(h.finalize().into())
    }
}
