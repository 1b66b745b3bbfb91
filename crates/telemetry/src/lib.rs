//! The metrics of the server's work, recorded by whichever crate does the
//! work and rendered in the Prometheus text format by the server on
//! `GET /metrics`. No dependencies: every crate may record into it without
//! knowing the server.
//!
//! # Layout
//! - [`metric`]: the building blocks: [`Counter`], [`Histogram`] (atomics only,
//!   so recording on a hot path never takes a lock) and [`Family`] (series by
//!   label value, a bounded number of them).
//! - [`exposition`]: writes families as Prometheus text.
//! - [`Metrics`] (in `catalogue`): every family of the work — turns, model steps and tokens,
//!   tool calls, MCP calls, sandboxes, environment setup, event streams, the
//!   journal — and what each crate calls to record into it. One registry per
//!   server, shared as `Arc<Metrics>`.
//!
//! Labels carry bounded sets only: fixed enums ([`TurnOutcome`], [`ToolKind`],
//! [`ToolOutcome`]) and configuration names (models, MCP server labels), of
//! which a family keeps [`NAMES_KEPT`] at most (later ones count as `other`).
//! Never an id.

#![forbid(unsafe_code)]

mod catalogue;
pub mod exposition;
pub mod metric;

pub use catalogue::{Gauge, Metrics, ModelSeries, NAMES_KEPT, Reading, ToolKind, ToolOutcome, TurnOutcome};
pub use exposition::Exposition;
pub use metric::{Counter, Family, Histogram};

/// A duration in milliseconds with microsecond precision, for log lines.
pub fn millis(d: std::time::Duration) -> f64 {
    (d.as_micros() as f64) / 1000.0
}
