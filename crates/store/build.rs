//! Rebuilds the crate when a migration folder changes: its files are embedded at compile
//! time (`src/migrations.rs`), and a file added without its line in the list must fail the
//! test that compares them, not go unnoticed by a stale build.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=pin_migrations");
    println!("cargo:rerun-if-changed=shared_migrations");
}
