//! A `rebyte serve` child process as tests and benches start it.

use std::io::{BufRead, BufReader};
use std::process::Child;

/// The base URL a started `rebyte serve` prints (`rebyte listening on …`),
/// read from its piped stdout, which keeps being drained afterwards so the
/// server never blocks on a full pipe. Panics if it exits first.
#[allow(clippy::expect_used)]
pub fn listening_url(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("the server's stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        let line = lines.next().expect("the server printed its listening line").expect("its stdout reads");
        if let Some(url) = line.strip_prefix("rebyte listening on ") {
            break url.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    url
}
