//! [`Metrics`]: every family of the server's work, what records into it, and
//! its rendering. The engine records turns, model steps, tokens, tool and MCP
//! calls, environments and the journal; gauges are [`Reading`]s the owning
//! component registers and the scrape calls (nothing to keep in step).

use crate::exposition::{Exposition, Kind};
use crate::metric::{Counter, Family, Histogram};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Distinct names (models, MCP server labels) a family keeps; later ones are
/// counted as `other`.
pub const NAMES_KEPT: usize = 100;
/// Longest label value kept (longer names are cut).
const LABEL_LIMIT: usize = 100;

/// Bucket bounds (seconds) of each histogram.
const TURN_BOUNDS: &[f64] = &[0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0];
const STEP_BOUNDS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];
const MCP_BOUNDS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
const SANDBOX_BOUNDS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];
const SETUP_BOUNDS: &[f64] = &[0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0];
const JOURNAL_BOUNDS: &[f64] = &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0];

/// An enum of label values with its list and its text.
macro_rules! labels {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $label:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub const COUNT: usize = Self::ALL.len();

            pub fn label(self) -> &'static str {
                match self { $($name::$variant => $label),+ }
            }
        }
    };
}

labels!(
    /// How a turn ended.
    TurnOutcome { Completed => "completed", Failed => "failed", Cancelled => "cancelled" }
);
labels!(
    /// What ran a tool call: `shell`, `read_file`/`write_file` (`file`), `call_tool`
    /// (`mcp`) or a client function.
    ToolKind { Shell => "shell", File => "file", Mcp => "mcp", Function => "function", Program => "program" }
);
labels!(
    /// The final status of a tool call's item.
    ToolOutcome { Completed => "completed", Failed => "failed", Incomplete => "incomplete" }
);
labels!(
    /// A value read at scrape time.
    Gauge {
        SandboxesRunning => "running",
        SandboxesPaused => "paused",
        EventStreamSubscribers => "subscribers",
        JournalQueueDepth => "depth",
    }
);

/// Reads a gauge's current value; registered by the component that knows it
/// (holding it weakly: a reading must not keep its component alive).
pub type Reading = Box<dyn Fn() -> u64 + Send + Sync>;

/// One model's series, looked up once per turn and recorded into per step.
#[derive(Debug)]
pub struct ModelSeries {
    turn: Histogram,
    step: Histogram,
    input_tokens: Counter,
    output_tokens: Counter,
}

impl ModelSeries {
    fn new() -> Self {
        Self {
            turn: Histogram::new(TURN_BOUNDS),
            step: Histogram::new(STEP_BOUNDS),
            input_tokens: Counter::default(),
            output_tokens: Counter::default(),
        }
    }

    /// One model call ended (answered or failed) after `d`.
    pub fn step(&self, d: Duration) {
        self.step.observe(d);
    }

    /// Tokens a model call reported.
    pub fn tokens(&self, input: u64, output: u64) {
        self.input_tokens.add(input);
        self.output_tokens.add(output);
    }
}

/// The registry of one server.
pub struct Metrics {
    turns: [Counter; TurnOutcome::COUNT],
    models: Family<String, ModelSeries>,
    tool_calls: [[Counter; ToolOutcome::COUNT]; ToolKind::COUNT],
    mcp_calls: Family<String, Histogram>,
    sandbox_first_use: Histogram,
    setup: Histogram,
    setup_failures: Counter,
    leases_lost: Counter,
    journal_commit: Histogram,
    // Taken when a component starts and at each scrape only.
    readings: Mutex<Vec<Option<Reading>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            turns: Default::default(),
            models: Family::new(NAMES_KEPT, "other".into(), ModelSeries::new),
            tool_calls: Default::default(),
            mcp_calls: Family::new(NAMES_KEPT, "other".into(), || Histogram::new(MCP_BOUNDS)),
            sandbox_first_use: Histogram::new(SANDBOX_BOUNDS),
            setup: Histogram::new(SETUP_BOUNDS),
            setup_failures: Counter::default(),
            leases_lost: Counter::default(),
            journal_commit: Histogram::new(JOURNAL_BOUNDS),
            readings: Mutex::new(Gauge::ALL.iter().map(|_| None).collect()),
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// `name` cut to a label value's length.
fn bounded(name: &str) -> &str {
    match name.char_indices().nth(LABEL_LIMIT) {
        Some((cut, _)) => &name[..cut],
        None => name,
    }
}

impl Metrics {
    /// The series of the model named `name` (an agent's `model`).
    pub fn model(&self, name: &str) -> Arc<ModelSeries> {
        self.models.get(bounded(name))
    }

    /// A turn ended; `duration` is from its start (none if it never started).
    pub fn turn_ended(&self, outcome: TurnOutcome, model: &str, duration: Option<Duration>) {
        self.turns[outcome as usize].inc();
        if let Some(d) = duration {
            self.model(model).turn.observe(d);
        }
    }

    pub fn tool_call(&self, kind: ToolKind, outcome: ToolOutcome) {
        self.tool_calls[kind as usize][outcome as usize].inc();
    }

    /// A `call_tool` to the server labelled `server` took `d`.
    pub fn mcp_call(&self, server: &str, d: Duration) {
        self.mcp_calls.get(bounded(server)).observe(d);
    }

    /// A sandbox became usable `d` after its environment's first use on this server.
    pub fn sandbox_started(&self, d: Duration) {
        self.sandbox_first_use.observe(d);
    }

    /// An environment's setup ran for `d`.
    pub fn setup_ran(&self, d: Duration) {
        self.setup.observe(d);
    }

    /// An environment failed to initialize, for good.
    pub fn setup_failed(&self) {
        self.setup_failures.inc();
    }

    /// Another node took over a session this node still ran (its writes to
    /// it are refused from then on).
    pub fn lease_lost(&self) {
        self.leases_lost.inc();
    }

    /// The journal committed a batch in `d`.
    pub fn journal_committed(&self, d: Duration) {
        self.journal_commit.observe(d);
    }

    /// Makes `reading` the source of `gauge` (replacing an earlier one).
    pub fn read(&self, gauge: Gauge, reading: Reading) {
        let mut readings = self.readings.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = readings.get_mut(gauge as usize) {
            *slot = Some(reading);
        }
    }

    fn gauge(&self, gauge: Gauge) -> u64 {
        let readings = self.readings.lock().unwrap_or_else(|e| e.into_inner());
        readings.get(gauge as usize).and_then(Option::as_ref).map_or(0, |read| read())
    }

    /// Writes every family.
    pub fn render(&self, out: &mut Exposition) {
        out.family("rebyte_turns_total", Kind::Counter, "Turns ended, by final status.");
        for outcome in TurnOutcome::ALL {
            out.sample("rebyte_turns_total", &[("status", outcome.label())], self.turns[*outcome as usize].get());
        }
        let models = self.models.snapshot();
        let name = "rebyte_turn_duration_seconds";
        out.family(name, Kind::Histogram, "Turns from start to end, by the agent's model.");
        for (model, series) in &models {
            out.histogram(name, &[("model", model)], &series.turn);
        }
        let name = "rebyte_model_step_duration_seconds";
        out.family(name, Kind::Histogram, "Model calls from request to the end of the stream, by model.");
        for (model, series) in &models {
            out.histogram(name, &[("model", model)], &series.step);
        }
        let name = "rebyte_model_tokens_total";
        out.family(name, Kind::Counter, "Tokens the models reported, by model and direction (input, output).");
        for (model, series) in &models {
            out.sample(name, &[("model", model), ("direction", "input")], series.input_tokens.get());
            out.sample(name, &[("model", model), ("direction", "output")], series.output_tokens.get());
        }
        let name = "rebyte_tool_calls_total";
        out.family(name, Kind::Counter, "Tool calls finished, by kind and outcome.");
        for kind in ToolKind::ALL {
            for outcome in ToolOutcome::ALL {
                let count = self.tool_calls[*kind as usize][*outcome as usize].get();
                out.sample(name, &[("kind", kind.label()), ("outcome", outcome.label())], count);
            }
        }
        let name = "rebyte_mcp_call_duration_seconds";
        out.family(name, Kind::Histogram, "MCP call_tool latency, by server label.");
        for (server, histogram) in self.mcp_calls.snapshot() {
            out.histogram(name, &[("server", &server)], &histogram);
        }
        out.family("rebyte_sandboxes", Kind::Gauge, "Sandboxes on this server, by state.");
        for gauge in [Gauge::SandboxesRunning, Gauge::SandboxesPaused] {
            out.sample("rebyte_sandboxes", &[("state", gauge.label())], self.gauge(gauge));
        }
        // One series each.
        let histograms = [
            (
                "rebyte_sandbox_first_use_seconds",
                "From an environment's first use on this server until its sandbox is usable (creation, and setup the first time).",
                &self.sandbox_first_use,
            ),
            (
                "rebyte_environment_setup_duration_seconds",
                "Environment setup (files, packages, setup commands), successful or not.",
                &self.setup,
            ),
            (
                "rebyte_journal_commit_duration_seconds",
                "Journal batch commits (one transaction each).",
                &self.journal_commit,
            ),
        ];
        for (name, help, histogram) in histograms {
            out.family(name, Kind::Histogram, help);
            out.histogram(name, &[], histogram);
        }
        let values = [
            (
                "rebyte_environment_setup_failures_total",
                Kind::Counter,
                "Environments that failed to initialize (sandbox creation or setup).",
                self.setup_failures.get(),
            ),
            (
                "rebyte_session_leases_lost_total",
                Kind::Counter,
                "Sessions another node took over while this node still ran them (cut off from the database \
                 longer than a lease); their late writes were refused.",
                self.leases_lost.get(),
            ),
            (
                "rebyte_event_stream_subscribers",
                Kind::Gauge,
                "Live subscribers to session event streams.",
                self.gauge(Gauge::EventStreamSubscribers),
            ),
            (
                "rebyte_journal_queue_depth",
                Kind::Gauge,
                "Writes queued in the journal and not yet committed.",
                self.gauge(Gauge::JournalQueueDepth),
            ),
        ];
        for (name, kind, help, value) in values {
            out.family(name, kind, help);
            out.sample(name, &[], value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_renders_before_anything_is_recorded_and_readings_are_read_at_render() {
        let m = Metrics::default();
        m.read(Gauge::JournalQueueDepth, Box::new(|| 7));
        let mut out = Exposition::new();
        m.render(&mut out);
        let text = out.finish();
        for line in [
            "rebyte_turns_total{status=\"completed\"} 0",
            "rebyte_tool_calls_total{kind=\"mcp\",outcome=\"failed\"} 0",
            "rebyte_sandboxes{state=\"paused\"} 0",
            "rebyte_environment_setup_failures_total 0",
            "rebyte_session_leases_lost_total 0",
            "rebyte_journal_queue_depth 7",
            "rebyte_journal_commit_duration_seconds_count 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn long_names_are_cut_to_a_label_value() {
        let m = Metrics::default();
        let long = "m".repeat(300);
        m.model(&long).tokens(1, 2);
        let kept = m.models.snapshot();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].0.len(), LABEL_LIMIT);
    }
}
