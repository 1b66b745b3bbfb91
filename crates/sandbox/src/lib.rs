//! Sandboxes: the Sandbox backend trait, the local Linux-namespace backend and the in-sandbox agent protocol.
