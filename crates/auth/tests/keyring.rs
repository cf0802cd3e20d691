//! The credential vault against a real Secret Service. These need a session bus with an
//! unlocked keyring, so they are ignored in a plain `cargo test`; `scripts/keyring-test.sh`
//! starts gnome-keyring in a private D-Bus session and runs them with `--ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

use mcp_host_auth::{CredentialKey, CredentialVault, OsKeyring, Protection, VaultChoice};
use serde_json::json;

fn key(resource: &str) -> CredentialKey {
    CredentialKey {
        issuer: "https://as.example".into(),
        resource: resource.into(),
    }
}

/// The items `secret-tool` (libsecret, a separate Secret Service client) finds for the host.
fn items_seen_by_secret_tool() -> String {
    let out = std::process::Command::new("secret-tool")
        .args(["search", "--all", "service", "mcp-host"])
        .output()
        .expect("secret-tool (libsecret-tools) is installed by scripts/install-test-deps.sh");
    // secret-tool prints the attributes and labels on stderr and the secrets on stdout.
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
#[ignore = "needs a Secret Service: scripts/keyring-test.sh"]
async fn credentials_live_in_the_os_keyring_and_not_on_disk() {
    OsKeyring::probe().expect("the test session has an unlocked keyring");
    let dir = tempfile::tempdir().unwrap();
    let vault = CredentialVault::choosing(dir.path(), VaultChoice::Auto);
    assert_eq!(vault.protection().unwrap(), Protection::OsKeyring);

    let k = key("https://mcp.example/keyring-roundtrip");
    let value = json!({"access_token": "a1", "refresh_token": "r1"});
    vault.save(&k, &value).await.unwrap();
    assert_eq!(vault.load(&k).await.unwrap(), Some(value));
    assert!(
        !vault.path(&k).exists(),
        "no file copy of a keyring credential"
    );
    // Another client of the Secret Service sees the item, labelled for a person, with the
    // token inside; the probe's canary is gone.
    let seen = items_seen_by_secret_tool();
    assert!(
        seen.contains("mcp-host OAuth credential for https://mcp.example/keyring-roundtrip"),
        "{seen}"
    );
    assert!(seen.contains("\"refresh_token\":\"r1\""), "{seen}");
    assert!(!seen.contains("canary"), "{seen}");

    // A different resource is a different item.
    assert_eq!(
        vault.load(&key("https://other.example/mcp")).await.unwrap(),
        None
    );
    vault.clear(&k).await.unwrap();
    vault.clear(&k).await.unwrap();
    assert_eq!(vault.load(&k).await.unwrap(), None);
    assert!(!items_seen_by_secret_tool().contains("keyring-roundtrip"));
}

#[tokio::test]
#[ignore = "needs a Secret Service: scripts/keyring-test.sh"]
async fn a_file_from_before_the_keyring_is_read_then_moved_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let k = key("https://mcp.example/keyring-migration");
    let old = json!({"refresh_token": "from-a-file"});
    CredentialVault::new(dir.path())
        .save(&k, &old)
        .await
        .unwrap();
    let vault = CredentialVault::choosing(dir.path(), VaultChoice::Keyring);
    assert_eq!(vault.load(&k).await.unwrap(), Some(old));
    let rotated = json!({"refresh_token": "rotated"});
    vault.save(&k, &rotated).await.unwrap();
    assert!(!vault.path(&k).exists(), "the file copy went with the save");
    assert_eq!(vault.load(&k).await.unwrap(), Some(rotated));
    vault.clear(&k).await.unwrap();
}
