//! What an operator sees (issue 10): the metrics of the work on `GET /metrics`, and the log
//! lines of requests, turns, model retries, environment setup and MCP connections, as text and
//! as JSON, with no secret in them.

mod logs;
mod metrics;

use crate::support::TestServer;
use reqwest::StatusCode;
use std::collections::HashMap;

/// One scrape of `/metrics`: each sample (`name{labels}`) and its value.
pub struct Scrape {
    samples: HashMap<String, f64>,
    pub text: String,
}

impl Scrape {
    pub fn parse(text: String) -> Self {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let (key, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {l}"));
                (key.to_string(), value.parse::<f64>().unwrap_or_else(|_| panic!("not a number: {l}")))
            })
            .collect();
        Self { samples, text }
    }

    /// The sample's value (it must be there).
    pub fn value(&self, key: &str) -> f64 {
        self.samples.get(key).copied().unwrap_or_else(|| panic!("no sample {key} in\n{}", self.text))
    }

    /// How much `key` grew since `before` (where a series not rendered yet counted 0).
    pub fn since(&self, before: &Scrape, key: &str) -> f64 {
        self.value(key) - before.samples.get(key).copied().unwrap_or(0.0)
    }
}

pub async fn scrape(s: &TestServer) -> Scrape {
    let resp = s.http.get(s.url("/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    Scrape::parse(resp.text().await.unwrap())
}
