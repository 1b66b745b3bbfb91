//! The server's one integration-test binary: every test starts a real server
//! on 127.0.0.1:0 over a real SQLite file and talks HTTP to it.

mod suite;
mod support;
