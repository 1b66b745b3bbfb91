//! Where an environment's initialization spends its time: named phases,
//! each the time since the previous mark, logged at `debug` so an operator
//! (or the first-use bench, `BENCH_LOG=engine=debug`) can see which part of
//! a first use is slow.

use std::fmt;
use std::time::Instant;

/// Marks taken in order; each phase lasts from the previous mark.
pub(super) struct Phases {
    last: Instant,
    marks: Vec<(&'static str, f64)>,
}

impl Phases {
    pub fn start() -> Self {
        Phases { last: Instant::now(), marks: Vec::with_capacity(8) }
    }

    /// Ends the phase called `name` now.
    pub fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.marks.push((name, (now - self.last).as_secs_f64() * 1000.0));
        self.last = now;
    }
}

impl fmt::Display for Phases {
    /// `record=0.41ms disk=0.12ms …`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, ms)) in self.marks.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name}={ms:.2}ms")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_listed_in_order_with_their_durations() {
        let mut p = Phases::start();
        p.mark("one");
        std::thread::sleep(std::time::Duration::from_millis(2));
        p.mark("two");
        let text = p.to_string();
        assert!(text.starts_with("one="), "{text}");
        let two: f64 = text.split("two=").nth(1).unwrap().trim_end_matches("ms").parse().unwrap();
        assert!(two >= 2.0, "{text}");
    }
}
