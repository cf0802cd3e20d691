//! Rebuilds the crate when a migration is added or edited: `sqlx::migrate!` embeds the
//! `migrations/` and `pin_migrations/` directories at compile time, and cargo does not
//! otherwise watch them.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=pin_migrations");
}
