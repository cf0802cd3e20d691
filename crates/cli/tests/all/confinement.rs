//! What a supervised stdio server may do, as the kernel reports it from inside the server:
//! it runs with `no_new_privs` (no setuid or file-capability program it starts can gain
//! privileges) and under the seccomp filter of `client/src/seccomp.rs`, whose calls fail
//! with `EPERM`. (The first steps of issue 14's confinement.)

use crate::common::*;
use mcp_host_client::Manager;
use mcp_host_core::{Content, ServerId, ServerState};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_supervised_server_runs_with_no_new_privs_and_the_seccomp_filter() {
    let (m, calls) = Manager::start(
        vec![fake_setup("p", &["--fault", "probe"], |_| {})],
        manager_options(Duration::from_millis(50), Duration::from_millis(200)),
    );
    wait_status(&m, "p", |s| s.state == ServerState::Ready).await;
    let out = calls
        .call(
            &ServerId::new("p"),
            "probe",
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let Some(Content::Text { text }) = out.content.first() else {
        panic!("no text: {out:?}");
    };
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["NoNewPrivs:", "1"])),
        "{text}"
    );
    // 2: a filter is installed, and a call it forbids fails with EPERM.
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["Seccomp:", "2"])),
        "{text}"
    );
    assert!(
        text.contains("process_vm_readv: denied") && text.contains("os error 1"),
        "{text}"
    );
    m.shutdown().await;
}
