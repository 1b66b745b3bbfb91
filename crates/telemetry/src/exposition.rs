//! The Prometheus text exposition format (version 0.0.4): a `# HELP` and
//! `# TYPE` line per family, then one line per sample, label values escaped.

use crate::metric::Histogram;
use std::fmt::{Display, Write};

/// What a family is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// The text of one scrape, written family by family.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a family: its help text and type.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.as_str());
    }

    /// One sample of the current family.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.out.push_str(name);
        self.labels(labels, None);
        let _ = writeln!(self.out, " {value}");
    }

    /// The `_bucket`, `_sum` and `_count` samples of one histogram series.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], histogram: &Histogram) {
        let s = histogram.snapshot();
        for (bound, count) in &s.cumulative {
            let _ = write!(self.out, "{name}_bucket");
            self.labels(labels, Some(&bound.to_string()));
            let _ = writeln!(self.out, " {count}");
        }
        let _ = write!(self.out, "{name}_bucket");
        self.labels(labels, Some("+Inf"));
        let _ = writeln!(self.out, " {}", s.count);
        self.sample(&format!("{name}_sum"), labels, s.sum_seconds);
        self.sample(&format!("{name}_count"), labels, s.count);
    }

    fn labels(&mut self, labels: &[(&str, &str)], le: Option<&str>) {
        if labels.is_empty() && le.is_none() {
            return;
        }
        self.out.push('{');
        let all = labels.iter().copied().chain(le.map(|le| ("le", le)));
        for (i, (name, value)) in all.enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            let _ = write!(self.out, "{name}=\"");
            for c in value.chars() {
                match c {
                    '\\' => self.out.push_str("\\\\"),
                    '"' => self.out.push_str("\\\""),
                    '\n' => self.out.push_str("\\n"),
                    c => self.out.push(c),
                }
            }
            self.out.push('"');
        }
        self.out.push('}');
    }

    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn label_values_are_escaped_and_histograms_end_with_inf_sum_and_count() {
        let mut out = Exposition::new();
        out.family("x_total", Kind::Counter, "Things.");
        out.sample("x_total", &[("model", "a\"b\\c\nd")], 3);
        let h = Histogram::new(&[0.5]);
        h.observe(Duration::from_secs(1));
        out.histogram("y_seconds", &[("model", "m")], &h);
        assert_eq!(
            out.finish(),
            "# HELP x_total Things.\n# TYPE x_total counter\nx_total{model=\"a\\\"b\\\\c\\nd\"} 3\n\
             y_seconds_bucket{model=\"m\",le=\"0.5\"} 0\ny_seconds_bucket{model=\"m\",le=\"+Inf\"} 1\n\
             y_seconds_sum{model=\"m\"} 1\ny_seconds_count{model=\"m\"} 1\n"
        );
    }
}
