//! Rebuilds the crate when its migrations folder changes: the files are embedded at compile
//! time (`SERVICE_MIGRATIONS` in `src/db.rs`), and a file added without its line in the list
//! must fail the test that compares them, not go unnoticed by a stale build.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
