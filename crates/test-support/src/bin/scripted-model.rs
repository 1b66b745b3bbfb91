//! `scripted-model`: the scripted model server on its own, for the Python
//! compatibility suite, benchmarks, and trying rebyte without a model account.
//! Script it over HTTP (`POST /_script`, `GET /_requests`; see
//! `test_support::model_server`) or from a file.
//!
//! Usage: `scripted-model [--listen 127.0.0.1:0] [--script FILE] [--loop]`.
//! `--script` queues the steps of a JSON file (the `POST /_script` form);
//! `--loop` plays them over and over. Prints
//! `scripted model listening on http://127.0.0.1:PORT` once it accepts
//! connections, then serves until SIGINT or SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use test_support::model_server::ModelServer;
use test_support::model_server::script::parse_steps;

const USAGE: &str = "usage: scripted-model [--listen 127.0.0.1:0] [--script FILE] [--loop]";

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut listen = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut script: Option<PathBuf> = None;
    let mut looping = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().ok_or("--listen needs an address")?.parse()?,
            "--script" => script = Some(args.next().ok_or("--script needs a file")?.into()),
            "--loop" => looping = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}` ({USAGE})").into()),
        }
    }
    let steps = match &script {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let json = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            parse_steps(json).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let server = ModelServer::bind(listen).await?;
    server.push_all(steps);
    server.set_looping(looping);
    let mut stdout = std::io::stdout();
    writeln!(stdout, "scripted model listening on http://{}", server.addr())?;
    stdout.flush()?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    drop(server);
    Ok(())
}
