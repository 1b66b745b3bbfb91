//! The sandbox agent as a binary of its own, for this crate's tests and
//! benchmark; `rebyte sandbox-agent` is the production entry point.

fn main() {
    sandbox::agent::main()
}
