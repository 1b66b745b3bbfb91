//! How a server binary embeds the agent, as `rebyte` does: the hidden
//! `sandbox-agent` subcommand is dispatched first thing in `main`, before
//! any runtime or thread starts; the default [`LocalConfig`] then starts
//! sandboxes with `/proc/self/exe sandbox-agent`, this very binary.
//!
//! `cargo run -p sandbox --example embed` (as root, or where unprivileged
//! user namespaces are allowed).

use sandbox::{ExecRequest, LocalBackend, LocalConfig, Sandbox, SandboxSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args_os().nth(1).is_some_and(|a| a == "sandbox-agent") {
        sandbox::agent::main();
    }
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let dir = tempfile::tempdir()?;
        let backend = LocalBackend::new(LocalConfig::default());
        let sandbox = backend.create_local(SandboxSpec::new("embed-example", dir.path())).await?;
        let out = sandbox.exec(ExecRequest::new("echo hello from $(hostname), pid $$")).await?.wait().await?;
        print!("{}", out.stdout_str());
        sandbox.destroy().await?;
        Ok(())
    })
}
