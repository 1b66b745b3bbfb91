//! Test support: the scripted model server and the TestServer builder shared by integration tests.

pub mod model_server;
pub mod npm;
pub mod postgres;
pub mod process;
