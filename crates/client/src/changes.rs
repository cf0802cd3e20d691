//! What a server announced about its tool list versus what the host has applied. A server's
//! `notifications/tools/list_changed` wakes the manager's refresh; a caller about to send a
//! call can wait until the list it reads is no older than the last change announced before
//! it looked, so a definition that changed mid-turn is never called under the old decision.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// Counts announcements and the announcement each applied refresh covers.
#[derive(Debug)]
pub struct ListChanges {
    announced: AtomicU64,
    wake: Notify,
    applied: watch::Sender<u64>,
}

impl Default for ListChanges {
    fn default() -> Self {
        Self {
            announced: AtomicU64::new(0),
            wake: Notify::new(),
            applied: watch::Sender::new(0),
        }
    }
}

impl ListChanges {
    /// The server said its list changed.
    pub fn notify_one(&self) {
        self.announced.fetch_add(1, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Resolves after the next announcement (for the task that refreshes).
    pub async fn notified(&self) {
        self.wake.notified().await;
    }

    /// Taken before a refresh asks the server: that refresh covers every announcement
    /// counted so far.
    pub fn refresh_begins(&self) -> u64 {
        self.announced.load(Ordering::SeqCst)
    }

    /// A refresh that began at `covers` has been applied.
    pub fn refreshed(&self, covers: u64) {
        self.applied.send_if_modified(|v| {
            let newer = covers > *v;
            if newer {
                *v = covers;
            }
            newer
        });
    }

    /// Whether no announcement is waiting for its refresh.
    pub fn is_current(&self) -> bool {
        *self.applied.borrow() >= self.announced.load(Ordering::SeqCst)
    }

    /// Waits until every change announced so far has been applied, at most `limit`.
    pub async fn caught_up(&self, limit: Duration) -> bool {
        let wanted = self.announced.load(Ordering::SeqCst);
        let mut rx = self.applied.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|v| *v >= wanted))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn a_caller_waits_for_the_refresh_of_an_announced_change() {
        let changes = Arc::new(ListChanges::default());
        assert!(changes.is_current());
        changes.notify_one();
        assert!(!changes.is_current());
        assert!(
            !changes.caught_up(Duration::from_secs(1)).await,
            "nothing refreshed"
        );
        let covers = changes.refresh_begins();
        let refresher = {
            let changes = changes.clone();
            tokio::spawn(async move { changes.refreshed(covers) })
        };
        assert!(changes.caught_up(Duration::from_secs(1)).await);
        refresher.await.unwrap();
        // A refresh that began before a later announcement does not cover it.
        changes.notify_one();
        changes.refreshed(covers);
        assert!(!changes.is_current());
    }
}
