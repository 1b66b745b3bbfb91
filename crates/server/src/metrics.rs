//! Prometheus metrics: request counts and latency histograms by route,
//! method and status, rendered as text on `GET /metrics`.

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

use crate::state::AppState;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Default)]
struct Series {
    count: u64,
    sum: f64,
    buckets: [u64; BUCKETS.len()],
}

/// The registry.
#[derive(Default)]
pub struct Metrics {
    // One short critical section per request: cheaper than per-series atomics
    // for the few dozen series a server has.
    series: Mutex<HashMap<(String, String, u16), Series>>,
}

impl Metrics {
    fn observe(&self, route: String, method: String, status: u16, seconds: f64) {
        if let Ok(mut map) = self.series.lock() {
            let s = map.entry((route, method, status)).or_default();
            s.count += 1;
            s.sum += seconds;
            for (i, bound) in BUCKETS.iter().enumerate() {
                if seconds <= *bound {
                    s.buckets[i] += 1;
                }
            }
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP rebyte_http_requests_total HTTP requests answered.\n");
        out.push_str("# TYPE rebyte_http_requests_total counter\n");
        let Ok(map) = self.series.lock() else {
            return out;
        };
        let mut keys: Vec<_> = map.keys().cloned().collect();
        keys.sort();
        for key @ (route, method, status) in &keys {
            if let Some(s) = map.get(key) {
                let _ = writeln!(
                    out,
                    "rebyte_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {}",
                    s.count
                );
            }
        }
        out.push_str("# HELP rebyte_http_request_duration_seconds HTTP request latency.\n");
        out.push_str("# TYPE rebyte_http_request_duration_seconds histogram\n");
        for key @ (route, method, status) in &keys {
            let Some(s) = map.get(key) else { continue };
            let labels = format!("route=\"{route}\",method=\"{method}\",status=\"{status}\"");
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "rebyte_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {}",
                    s.buckets[i]
                );
            }
            let _ = writeln!(out, "rebyte_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}", s.count);
            let _ = writeln!(out, "rebyte_http_request_duration_seconds_sum{{{labels}}} {}", s.sum);
            let _ = writeln!(out, "rebyte_http_request_duration_seconds_count{{{labels}}} {}", s.count);
        }
        out
    }
}

/// Middleware recording every request under its route template (never the raw
/// path, so that ids do not explode the series count).
pub async fn record(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route =
        req.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = req.method().to_string();
    let start = Instant::now();
    let response = next.run(req).await;
    state.metrics.observe(route, method, response.status().as_u16(), start.elapsed().as_secs_f64());
    response
}
