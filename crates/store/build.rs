//! Rebuilds the crate when a migration is added or edited: `sqlx::migrate!` embeds the
//! `migrations/` directory at compile time, and cargo does not otherwise watch it.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
