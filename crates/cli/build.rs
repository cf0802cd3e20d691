//! How the release binary is linked, where the linker is known to be rustc's own LLD (the
//! default for x86_64 Linux since Rust 1.90) and the build is for this machine:
//! - identical functions are folded (`--icf=all`): generic code instantiated the same way in
//!   several crates is linked once;
//! - relative relocations are packed (`-z pack-relative-relocs`, DT_RELR) when this
//!   machine's glibc reads them (2.36 and later): the table the loader reads at every start
//!   is 30 KB instead of 1.7 MB, less to map and less resident memory;
//! - the functions a start, a call and a turn run come first, in the order of
//!   `link/hot-functions.txt` (`--symbol-ordering-file`, made by scripts/order-functions.sh):
//!   the kernel maps code 64 KiB around each fault, so used code scattered among unused code
//!   kept four times its size resident. The supervisor's own (`mcp-host-supervise`) come
//!   first in it, in the order of `link/supervise-functions.txt`.
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
    let relr = glibc_reads_relr();
    // The supervisor, one per stdio server, is laid out the same way: what it runs, spread
    // over its 1.6 MB, kept 0.6 MiB of it resident in the first one started.
    for (bin, list, map_var) in [
        ("mcp-host", "hot-functions.txt", "MCP_HOST_LINK_MAP"),
        (
            "mcp-host-supervise",
            "supervise-functions.txt",
            "MCP_HOST_SUPERVISE_LINK_MAP",
        ),
    ] {
        println!("cargo:rerun-if-changed=link/{list}");
        println!("cargo:rerun-if-env-changed={map_var}");
        println!("cargo:rustc-link-arg-bin={bin}=-Wl,--icf=all");
        if relr {
            println!("cargo:rustc-link-arg-bin={bin}=-Wl,-z,pack-relative-relocs");
        }
        let order = format!("{}/link/{list}", env("CARGO_MANIFEST_DIR"));
        if std::path::Path::new(&order).exists() {
            println!("cargo:rustc-link-arg-bin={bin}=-Wl,--symbol-ordering-file={order}");
            // Names absent from this build (a dependency bumped since the list was made)
            // are expected; the list is remade by scripts/order-functions.sh.
            println!("cargo:rustc-link-arg-bin={bin}=-Wl,--no-warn-symbol-ordering");
        }
        // scripts/order-functions.sh reads the shipped build's symbol names from a link map.
        if let Some(map) = std::env::var_os(map_var) {
            println!(
                "cargo:rustc-link-arg-bin={bin}=-Wl,-Map={}",
                map.to_string_lossy()
            );
        }
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
