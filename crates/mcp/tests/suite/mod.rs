//! Test modules, one per behaviour area, and the shared support code.

mod broker;
mod call_tool;
mod catalog;
mod failures;
mod flow;
mod http;
mod hub;
mod prefetch;
mod resources;
mod search;
mod stdio;
pub mod support;
