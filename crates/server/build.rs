//! Rebuilds the server when a file of the web console (`console/` at the
//! repository root, embedded by `include_dir!`) is added, changed or removed:
//! the macro alone notices only changes to files it already embedded.

fn main() {
    println!("cargo:rerun-if-changed=../../console");
}
