//! `scripted-model`: the scripted model server on its own, for the Python
//! compatibility suite and benchmarks. Script it over HTTP (`POST /_script`,
//! `GET /_requests`; see `test_support::model_server`).
//!
//! Usage: `scripted-model [--listen 127.0.0.1:0]`. Prints
//! `scripted model listening on http://127.0.0.1:PORT` once it accepts
//! connections, then serves until SIGINT or SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use test_support::model_server::ModelServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut listen = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().ok_or("--listen needs an address")?.parse()?,
            "-h" | "--help" => {
                println!("usage: scripted-model [--listen 127.0.0.1:0]");
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}` (try --help)").into()),
        }
    }
    let server = ModelServer::bind(listen).await?;
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
