//! Found through the conformance suite's CLI client: two `mcp-host call`s started at once on
//! a new data folder both created the store, and one failed ("database is locked", or a disk
//! I/O error). Many opens of one new file at once must all succeed and agree.

use mcp_host_store::Store;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_opens_of_a_new_store_at_once_all_succeed() {
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/mcp-host/store.sqlite");
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                tokio::spawn(async move { Store::open(&path).await })
            })
            .collect();
        for open in opens {
            let opened = open.await.unwrap();
            assert!(opened.is_ok(), "round {round}: {:?}", opened.err());
        }
    }
}
