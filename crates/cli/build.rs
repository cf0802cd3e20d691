//! How the release binary is linked, where the linker is known to be rustc's own LLD (the
//! default for x86_64 Linux since Rust 1.90) and the build is for this machine:
//! - identical functions are folded (`--icf=all`): generic code instantiated the same way in
//!   several crates is linked once;
//! - relative relocations are packed (`-z pack-relative-relocs`, DT_RELR) when this
//!   machine's glibc reads them (2.36 and later): the table the loader reads at every start
//!   is 30 KB instead of 1.7 MB, less to map and less resident memory.
//!
//! Elsewhere (another linker, a cross build, a debug build) nothing changes.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let release = env("PROFILE") == "release";
    let native = env("TARGET") == "x86_64-unknown-linux-gnu" && env("TARGET") == env("HOST");
    // Cargo sets RUSTC_LINKER only when a linker is configured for the target.
    let own_linker = std::env::var_os("RUSTC_LINKER").is_none();
    if !(release && native && own_linker) {
        return;
    }
    println!("cargo:rustc-link-arg-bin=mcp-host=-Wl,--icf=all");
    if glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bin=mcp-host=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc is 2.36 or later (`getconf GNU_LIBC_VERSION`: "glibc 2.36").
fn glibc_reads_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().strip_prefix("glibc ").unwrap_or("");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
