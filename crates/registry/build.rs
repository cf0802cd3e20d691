//! Names the rules a tool's input schema is compiled under (`SCHEMA_CHECKER`, read by
//! `src/schema.rs`): a hash of the code that decides whether a schema is usable (the
//! compile and its budget) and of the dependency versions it runs on (the workspace's
//! `Cargo.lock`). A verdict kept from an earlier run counts only under the same rules, so
//! any change to them, however small, compiles every schema again.

use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = Path::new(&manifest);
    let mut inputs = vec![
        root.join("src/schema.rs"),
        root.join("src/budget.rs"),
        root.join("../../Cargo.lock"),
    ];
    println!(
        "cargo:rerun-if-changed={}",
        root.join("src/budget").display()
    );
    if let Ok(dir) = std::fs::read_dir(root.join("src/budget")) {
        let mut more: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        more.sort();
        inputs.extend(more);
    }
    // FNV-1a: no dependency, and collisions are not an attack here (the hash tells builds
    // of this one program apart; a wrong verdict is still refused at the call).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for path in &inputs {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().map(|n| n.as_encoded_bytes().to_vec());
        let bytes = std::fs::read(path).unwrap_or_default();
        for b in name.unwrap_or_default().iter().chain(&bytes) {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!(
        "cargo:rustc-env=SCHEMA_CHECKER={}-{hash:016x}",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
    );
}
