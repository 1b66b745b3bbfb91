//! An environment's one-time initialization, applied through any
//! [`Sandbox`]: environment variables, inline files (base64) at their paths,
//! packages (system via apt-get, which needs the network and a sandbox with a
//! writable system; Python via pip; npm), then setup commands,
//! each with a timeout. Returns the combined log; the first failure stops it
//! and carries the failing command's output. A watcher
//! ([`apply_setup_observed`]) is told each step as it starts and each piece of
//! the log as it is written. The server calls it once per environment and
//! never again (not on attach, not on resume).

use crate::api::ExecRequest;
use crate::client::ExecEvent;
use crate::error::{Error, Result};
use crate::sandbox::Sandbox;
use base64::Engine;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Keep at most this much of the combined log (its tail).
const LOG_LIMIT: usize = 1 << 20;
/// Keep at most this much of a failing command's output (its tail).
const FAILURE_OUTPUT_LIMIT: usize = 64 << 10;

/// What an environment asks for at initialization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupSpec {
    #[serde(default)]
    pub files: Vec<SetupFile>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub setup_commands: Vec<String>,
    #[serde(default)]
    pub packages: Packages,
    /// Limit for each command (package installs included).
    #[serde(default = "default_timeout")]
    pub command_timeout: Duration,
    /// Whether the sandbox can reach the network: system packages need it,
    /// and fail at once without it.
    #[serde(default = "yes")]
    pub network: bool,
}

impl SetupSpec {
    /// How many steps setup takes: files, package installs, setup commands.
    pub fn step_count(&self) -> usize {
        self.files.len() + package_steps(&self.packages).len() + self.setup_commands.len()
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(600)
}

fn yes() -> bool {
    true
}

impl Default for SetupSpec {
    fn default() -> Self {
        SetupSpec {
            files: Vec::new(),
            env: BTreeMap::new(),
            setup_commands: Vec::new(),
            packages: Packages::default(),
            command_timeout: default_timeout(),
            network: true,
        }
    }
}

/// An inline file: `data` is base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupFile {
    pub path: String,
    pub data: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packages {
    #[serde(default)]
    pub python: Vec<String>,
    #[serde(default)]
    pub npm: Vec<String>,
    #[serde(default)]
    pub system: Vec<String>,
}

/// A successful setup's combined log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetupLog {
    pub log: String,
}

/// Why setup failed: the step, the failing command's output, and the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("setup failed at `{step}`: {reason}")]
pub struct SetupFailure {
    /// The command (or `write <path>`) that failed.
    pub step: String,
    /// `exit code 3`, `timed out after 30s`, or the error.
    pub reason: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The failing command's stdout and stderr, interleaved (last 64 KiB).
    pub output: String,
    /// Everything up to and including the failure.
    pub log: String,
}

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The install steps for `packages`, in order: system, Python, npm, each
/// named (`packages.system` …) with its command.
pub fn package_steps(packages: &Packages) -> Vec<(&'static str, String)> {
    let join = |pkgs: &[String]| pkgs.iter().map(|p| quote(p)).collect::<Vec<_>>().join(" ");
    let mut steps = Vec::new();
    if !packages.system.is_empty() {
        // The sandbox maps one uid: apt may not switch to its `_apt` user.
        // Its package lists are the environment's own: fetched when empty.
        steps.push((
            "packages.system",
            format!(
                "export DEBIAN_FRONTEND=noninteractive; set -- -q -y -o APT::Sandbox::User=root -o Dpkg::Use-Pty=0; \
                 if ! ls /var/lib/apt/lists 2>/dev/null | grep -q _Packages; then apt-get \"$@\" update || exit; fi; \
                 apt-get \"$@\" install --no-install-recommends {}",
                join(&packages.system)
            ),
        ));
    }
    if !packages.python.is_empty() {
        steps.push(("packages.python", format!("python3 -m pip install --user --no-input {}", join(&packages.python))));
    }
    if !packages.npm.is_empty() {
        steps.push(("packages.npm", format!("npm install -g --no-audit --no-fund {}", join(&packages.npm))));
    }
    steps
}

/// The install commands for `packages`, in order: system, Python, npm.
pub fn package_commands(packages: &Packages) -> Vec<String> {
    package_steps(packages).into_iter().map(|(_, command)| command).collect()
}

/// What setup reports while it runs, for watching it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupEvent<'a> {
    /// A step starts: its name (`files[0]`, `packages.python`,
    /// `setup_commands[1]`), its command (`write <path>` for a file), its
    /// position from 0 and the number of steps.
    Step { name: &'a str, command: &'a str, index: usize, total: usize },
    /// Text appended to the log.
    Log(&'a str),
}

/// A setup log: what was appended, keeping its last half when it grows past
/// 1 MiB (so a setup that prints without end cannot fill memory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogBuffer(String);

impl LogBuffer {
    pub fn push(&mut self, s: &str) {
        self.0.push_str(s);
        if self.0.len() > LOG_LIMIT {
            let cut = tail_start(&self.0, LOG_LIMIT / 2);
            self.0 = format!("[… log truncated …]\n{}", &self.0[cut..]);
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A char boundary such that `s[i..]` is at most `keep` bytes.
pub fn tail_start(s: &str, keep: usize) -> usize {
    let mut i = s.len().saturating_sub(keep);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// One run of setup: its log, its place among the steps, and who watches.
struct Run<'o> {
    /// The sandbox's id, for the log lines.
    sandbox: String,
    log: LogBuffer,
    observe: &'o mut (dyn FnMut(SetupEvent<'_>) + Send),
    index: usize,
    total: usize,
}

impl Run<'_> {
    fn push(&mut self, s: &str) {
        self.log.push(s);
        (self.observe)(SetupEvent::Log(s));
    }

    /// Starts the next step and logs its command line.
    fn step(&mut self, name: &str, command: &str) {
        tracing::info!(environment = %self.sandbox, step = name, %command, "environment setup step");
        (self.observe)(SetupEvent::Step { name, command, index: self.index, total: self.total });
        self.index += 1;
        self.push(&format!("$ {command}\n"));
    }

    fn fail(&self, step: String, reason: String, output: String, exit_code: Option<i32>, timed_out: bool) -> Error {
        let log = self.log.as_str().to_string();
        Error::Setup(Box::new(SetupFailure { step, reason, exit_code, timed_out, output, log }))
    }

    /// Runs one command to its end, logging what it prints.
    async fn command(&mut self, sandbox: &dyn Sandbox, spec: &SetupSpec, command: &str) -> Result<()> {
        let mut exec = sandbox.exec(ExecRequest::new(command.to_string()).timeout(spec.command_timeout)).await?;
        let mut output = String::new();
        let status = loop {
            match exec.next().await? {
                Some(ExecEvent::Stdout(b)) | Some(ExecEvent::Stderr(b)) => {
                    let text = String::from_utf8_lossy(&b);
                    self.push(&text);
                    output.push_str(&text);
                    if output.len() > 2 * FAILURE_OUTPUT_LIMIT {
                        output.drain(..tail_start(&output, FAILURE_OUTPUT_LIMIT));
                    }
                }
                Some(ExecEvent::Exit(status)) => break status,
                None => return Err(Error::Protocol("output ended without an exit".into())),
            }
        };
        if status.success() {
            return Ok(());
        }
        let reason = if status.timed_out {
            format!("timed out after {:?}", spec.command_timeout)
        } else if let Some(code) = status.code {
            format!("exit code {code}")
        } else {
            format!("killed by signal {}", status.signal.unwrap_or(0))
        };
        self.push(&format!("[{reason}]\n"));
        output.drain(..tail_start(&output, FAILURE_OUTPUT_LIMIT));
        Err(self.fail(command.to_string(), reason, output, status.code, status.timed_out))
    }
}

/// Applies `spec` to `sandbox`; see the module doc.
pub async fn apply_setup(sandbox: &dyn Sandbox, spec: &SetupSpec) -> Result<SetupLog> {
    apply_setup_observed(sandbox, spec, &mut |_| {}).await
}

/// [`apply_setup`], telling `observe` each step as it starts and each piece
/// of the log as it is written.
pub async fn apply_setup_observed(
    sandbox: &dyn Sandbox,
    spec: &SetupSpec,
    observe: &mut (dyn FnMut(SetupEvent<'_>) + Send),
) -> Result<SetupLog> {
    let packages = package_steps(&spec.packages);
    let total = spec.step_count();
    let mut run = Run { sandbox: sandbox.id().to_string(), log: LogBuffer::default(), observe, index: 0, total };
    if !spec.env.is_empty() {
        sandbox.set_env(spec.env.clone()).await?;
    }
    for (i, file) in spec.files.iter().enumerate() {
        let step = format!("write {}", file.path);
        run.step(&format!("files[{i}]"), &step);
        let data = match base64::engine::general_purpose::STANDARD.decode(file.data.trim()) {
            Ok(d) => d,
            Err(e) => return Err(run.fail(step, format!("invalid base64: {e}"), String::new(), None, false)),
        };
        if let Err(e) = sandbox.write_file(&file.path, data).await {
            run.push(&format!("{e}\n"));
            return Err(run.fail(step, e.to_string(), String::new(), None, false));
        }
    }
    for (name, command) in &packages {
        if *name == "packages.system" && !spec.network {
            let reason = "system packages need network access (network.access: enabled, or restricted allowing the \
                          package mirrors); \
                          this environment's network is disabled"
                .to_string();
            run.step(name, name);
            run.push(&format!("{reason}\n"));
            return Err(run.fail("packages.system".into(), reason.clone(), reason, None, false));
        }
        run.step(name, command);
        run.command(sandbox, spec, command).await?;
    }
    for (i, command) in spec.setup_commands.iter().enumerate() {
        run.step(&format!("setup_commands[{i}]"), command);
        run.command(sandbox, spec, command).await?;
    }
    Ok(SetupLog { log: run.log.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_are_quoted_and_ordered_system_python_npm() {
        let p = Packages {
            python: vec!["requests==2.32".into()],
            npm: vec!["left-pad".into()],
            system: vec!["jq".into(), "x'; rm -rf /".into()],
        };
        let cmds = package_commands(&p);
        assert_eq!(cmds.len(), 3);
        assert!(cmds[0].ends_with("install --no-install-recommends 'jq' 'x'\\''; rm -rf /'"), "{}", cmds[0]);
        assert!(cmds[0].contains("APT::Sandbox::User=root"));
        assert_eq!(cmds[1], "python3 -m pip install --user --no-input 'requests==2.32'");
        assert_eq!(cmds[2], "npm install -g --no-audit --no-fund 'left-pad'");
        assert!(package_commands(&Packages::default()).is_empty());
    }

    #[test]
    fn tails_respect_char_boundaries() {
        let s = "ééé";
        assert!(s.is_char_boundary(tail_start(s, 3)));
    }
}
