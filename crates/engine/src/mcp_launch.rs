//! Stdio MCP servers inside an environment's sandbox: the [`SandboxLauncher`] the MCP hub
//! starts brokers with (and through which environment-origin HTTP leaves the sandbox), and the process environment a stdio server gets — its inline
//! `transport.env`, plus the `env_vars` it selects from the environment's variables and the
//! environment credentials bound to it (`environment.vault_credentials`, DESIGN §7).

use crate::environments::Environments;
use mcp::{HttpProxy, Secret, StdioConfig, StdioLauncher, StdioStreams};
use protocol::ids::EnvironmentId;
use sandbox::{ProcessHandle, SpawnRequest};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// Most stderr bytes quoted in a launch failure.
const STDERR_QUOTED: usize = 800;

/// What `env_vars` may select from: the environment's `env` and its bound credentials.
#[derive(Default)]
pub struct EnvSources {
    pub vars: BTreeMap<String, String>,
    /// `(secret_name, value)`; a limited credential's value is its placeholder.
    pub credentials: Vec<(String, Secret)>,
    /// The names of the limited credentials among them.
    pub limited: Vec<String>,
    /// What a process using a limited credential also gets: the egress
    /// proxy and trust in the environment's CA.
    pub limited_env: Vec<(String, String)>,
}

/// The environment of a stdio server: its inline `env` (opened from the session's sealed secrets), then each `env_vars` name from the
/// environment's variables or, failing that, its bound credentials. A name found in neither is
/// an error naming it.
pub fn process_env(
    env: BTreeMap<String, Secret>,
    env_vars: &[String],
    sources: &EnvSources,
    env_id: &EnvironmentId,
) -> Result<BTreeMap<String, Secret>, String> {
    let mut out = env;
    if env_vars.iter().any(|name| sources.limited.contains(name) && !sources.vars.contains_key(name)) {
        for (key, value) in &sources.limited_env {
            out.insert(key.clone(), Secret::new(value.clone()));
        }
    }
    for name in env_vars {
        let value = sources.vars.get(name).map(|v| Secret::new(v.clone())).or_else(|| {
            sources.credentials.iter().find(|(secret_name, _)| secret_name == name).map(|(_, v)| v.clone())
        });
        match value {
            Some(value) => {
                out.insert(name.clone(), value);
            }
            None => {
                return Err(format!(
                    "transport.env_vars names '{name}', which is neither a variable of environment {env_id} \
                     nor an environment credential bound to it"
                ));
            }
        }
    }
    Ok(out)
}

/// `exec command args…` for `/bin/sh -c`, each word quoted.
pub fn command_line(config: &StdioConfig) -> String {
    let mut line = String::from("exec");
    for word in std::iter::once(&config.command).chain(&config.args) {
        line.push(' ');
        line.push_str(&quote(word));
    }
    line
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/' | b'@' | b'=' | b':' | b','));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

struct Launched {
    line: String,
    handle: ProcessHandle,
    secrets: Vec<String>,
}

/// Starts stdio servers in the sandbox of an environment (the sandbox id is the environment
/// id), initializing it on first use. Remembers what it started, to quote a failed server's
/// stderr.
pub struct SandboxLauncher {
    envs: Arc<Environments>,
    org_id: String,
    launched: Mutex<Vec<Launched>>,
}

impl SandboxLauncher {
    pub fn new(envs: Arc<Environments>, org_id: impl Into<String>) -> Self {
        Self { envs, org_id: org_id.into(), launched: Mutex::default() }
    }

    /// The end of what the process started for `config` wrote to stderr, its environment's
    /// secret values redacted; `None` if this launcher did not start it or it wrote nothing.
    pub async fn stderr_of(&self, config: &StdioConfig) -> Option<String> {
        let line = command_line(config);
        let (handle, secrets) = {
            let launched = self.launched.lock().unwrap_or_else(|e| e.into_inner());
            let found = launched.iter().rev().find(|l| l.line == line)?;
            (found.handle.clone(), found.secrets.clone())
        };
        // A process that failed its handshake is usually exiting: let its last words arrive.
        let _ = tokio::time::timeout(std::time::Duration::from_millis(500), handle.wait()).await;
        let tail = String::from_utf8_lossy(&handle.stderr_tail()).into_owned();
        let mut tail = tail.trim().to_string();
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            tail = tail.replace(secret.as_str(), "[redacted]");
        }
        if tail.is_empty() {
            return None;
        }
        if tail.len() > STDERR_QUOTED {
            let mut cut = tail.len() - STDERR_QUOTED;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail = format!("…{}", &tail[cut..]);
        }
        Some(tail)
    }
}

/// The environment the MCP layer names by its id.
fn environment(sandbox: &str) -> Result<EnvironmentId, String> {
    EnvironmentId::parse(sandbox).ok_or_else(|| format!("'{sandbox}' is not an environment"))
}

impl StdioLauncher for SandboxLauncher {
    fn launch<'a>(
        &'a self,
        sandbox: &'a str,
        config: &'a StdioConfig,
    ) -> Pin<Box<dyn Future<Output = Result<StdioStreams, String>> + Send + 'a>> {
        Box::pin(async move {
            let sb = self.envs.sandbox(&self.org_id, &environment(sandbox)?).await.map_err(|e| e.message)?;
            let line = command_line(config);
            let mut request = SpawnRequest::new(line.clone());
            request.cwd = config.cwd.as_ref().map(|c| c.display().to_string());
            request.env = config.env.iter().map(|(k, v)| (k.clone(), v.expose().to_string())).collect();
            let process = sb.spawn_stdio(request).await.map_err(|e| format!("the sandbox could not start it: {e}"))?;
            let secrets = config.env.values().map(|v| v.expose().to_string()).collect();
            self.launched.lock().unwrap_or_else(|e| e.into_inner()).push(Launched {
                line,
                handle: process.handle.clone(),
                secrets,
            });
            Ok(StdioStreams { stdout: process.stdout, stdin: process.stdin, keep_alive: Box::new(process.handle) })
        })
    }

    fn http_proxy<'a>(
        &'a self,
        sandbox: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Option<HttpProxy>, String>> + Send + 'a>> {
        Box::pin(async move {
            let sb = self.envs.sandbox(&self.org_id, &environment(sandbox)?).await.map_err(|e| e.message)?;
            let proxy = sb.http_proxy().await.map_err(|e| e.to_string())?;
            Ok(proxy.map(|p| HttpProxy { url: p.url, username: p.username, password: p.password }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_every_word_that_needs_it() {
        let config = StdioConfig {
            command: "npx".into(),
            args: vec!["-y".into(), "@modelcontextprotocol/server-filesystem".into(), "it's here".into()],
            ..StdioConfig::default()
        };
        assert_eq!(command_line(&config), r"exec npx -y @modelcontextprotocol/server-filesystem 'it'\''s here'");
    }

    #[test]
    fn env_vars_select_environment_variables_then_bound_credentials() {
        let sources = EnvSources {
            vars: [("REGION".to_string(), "eu".to_string())].into_iter().collect(),
            credentials: vec![("API_TOKEN".into(), Secret::new("t0k"))],
            ..EnvSources::default()
        };
        let inline: BTreeMap<String, Secret> = [("MODE".to_string(), Secret::new("ro"))].into_iter().collect();
        let env = process_env(inline, &["REGION".into(), "API_TOKEN".into()], &sources, &EnvironmentId::new()).unwrap();
        let exposed: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.expose())).collect();
        assert_eq!(exposed, vec![("API_TOKEN", "t0k"), ("MODE", "ro"), ("REGION", "eu")]);
        let env_id = EnvironmentId::new();
        let err = process_env(BTreeMap::new(), &["MISSING".into()], &sources, &env_id).unwrap_err();
        assert!(err.contains("'MISSING'") && err.contains(env_id.as_str()), "{err}");
    }
}
