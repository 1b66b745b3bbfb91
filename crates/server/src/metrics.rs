//! `GET /metrics`: HTTP request counts and latency by route template, method
//! and status, recorded (and logged, one line per request) by the [`record`]
//! layer, followed by the families of the work itself (turns, models, tools,
//! sandboxes, the journal …) that the engine records into the shared
//! [`telemetry::Metrics`].

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use telemetry::exposition::Kind;
use telemetry::{Exposition, Family, Histogram};

use crate::state::AppState;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];
/// Series kept: routes are templates and statuses few, but a method is whatever a client sends.
const SERIES_KEPT: usize = 1000;

type Key = (String, String, u16);

/// HTTP series and the work's registry.
pub struct Metrics {
    http: Family<Key, Histogram>,
    pub work: Arc<telemetry::Metrics>,
}

impl Metrics {
    pub fn new(work: Arc<telemetry::Metrics>) -> Self {
        let overflow = ("other".to_string(), "other".to_string(), 0);
        Self { http: Family::new(SERIES_KEPT, overflow, || Histogram::new(BUCKETS)), work }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = Exposition::new();
        let rows: Vec<Row> = self.http.snapshot().into_iter().map(|((r, m, s), h)| (r, m, s.to_string(), h)).collect();
        out.family("rebyte_http_requests_total", Kind::Counter, "HTTP requests answered.");
        for row in &rows {
            out.sample("rebyte_http_requests_total", &labels(row), row.3.snapshot().count);
        }
        out.family("rebyte_http_request_duration_seconds", Kind::Histogram, "HTTP request latency.");
        for row in &rows {
            out.histogram("rebyte_http_request_duration_seconds", &labels(row), &row.3);
        }
        self.work.render(&mut out);
        out.finish()
    }
}

/// One series: route, method, status and its histogram.
type Row = (String, String, String, Arc<Histogram>);

fn labels(row: &Row) -> [(&str, &str); 3] {
    [("route", &row.0), ("method", &row.1), ("status", &row.2)]
}

/// Middleware recording and logging every request under its route template
/// (never the raw path: ids would explode the series, and a path or query can
/// carry what does not belong in a log).
pub async fn record(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route =
        req.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = req.method().to_string();
    let start = Instant::now();
    let response = next.run(req).await;
    let elapsed = start.elapsed();
    let status = response.status().as_u16();
    tracing::info!(%method, %route, status, duration_ms = telemetry::millis(elapsed), "request");
    state.metrics.http.get(&(route, method, status)).observe(elapsed);
    response
}
