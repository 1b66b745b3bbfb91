//! One module per piece of test support.

mod model_server;
