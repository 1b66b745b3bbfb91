//! Test modules and the helpers they share.

mod basics;
mod disk;
mod enabled_network;
mod files;
mod fork;
mod isolation;
mod kill;
mod limited_secrets;
mod limits;
mod network;
mod output;
mod pause;
mod pool;
mod remote;
mod seccomp;
mod setup;
mod sharing;
mod stdio;
pub mod support;
mod system;
