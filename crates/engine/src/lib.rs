//! The turn loop: agent runs, tool dispatch, cancellation and the session event bus.
