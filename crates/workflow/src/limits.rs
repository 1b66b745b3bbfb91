//! The per-run limits of a program and their defaults. Each one, when reached, ends the run
//! `incomplete` with an error that names it.

use std::time::Duration;

/// Wall clock a run may take by default.
pub const DEFAULT_WALL_CLOCK: Duration = Duration::from_secs(30);
/// Memory the interpreter may allocate by default (the JavaScript heap and its own tables).
pub const DEFAULT_MEMORY_BYTES: usize = 64 * 1024 * 1024;
/// Nested `search_tools` / `call_tool` calls a run may make by default.
pub const DEFAULT_NESTED_CALLS: usize = 100;
/// Largest return value, as JSON, by default; a larger one is cut there and ends the run.
pub const DEFAULT_RESULT_BYTES: usize = 64 * 1024;
/// Captured `console` output kept by default; later output is dropped with a note.
pub const DEFAULT_LOG_BYTES: usize = 16 * 1024;
/// Native stack the interpreter may use (deep recursion ends there).
pub const DEFAULT_STACK_BYTES: usize = 512 * 1024;

/// What one run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub wall_clock: Duration,
    pub memory_bytes: usize,
    pub nested_calls: usize,
    pub result_bytes: usize,
    pub log_bytes: usize,
    pub stack_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_clock: DEFAULT_WALL_CLOCK,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            nested_calls: DEFAULT_NESTED_CALLS,
            result_bytes: DEFAULT_RESULT_BYTES,
            log_bytes: DEFAULT_LOG_BYTES,
            stack_bytes: DEFAULT_STACK_BYTES,
        }
    }
}

/// Why the host stopped a run before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The turn was cancelled.
    Cancelled,
    WallClock,
    NestedCalls,
}

impl Stop {
    /// The run's error, naming the limit.
    pub fn message(self, limits: &Limits) -> String {
        match self {
            Stop::Cancelled => "the program was stopped: the turn was cancelled".into(),
            Stop::WallClock => format!(
                "the program reached its wall clock limit of {} ms and was stopped",
                limits.wall_clock.as_millis()
            ),
            Stop::NestedCalls => format!(
                "the program reached its limit of {} nested calls (search_tools and call_tool) and was stopped",
                limits.nested_calls
            ),
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            Stop::Cancelled => 1,
            Stop::WallClock => 2,
            Stop::NestedCalls => 3,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Stop> {
        match code {
            1 => Some(Stop::Cancelled),
            2 => Some(Stop::WallClock),
            3 => Some(Stop::NestedCalls),
            _ => None,
        }
    }
}
