//! Waking the SSE streams of a conversation when its log grows. The log in the database is
//! the only source of events; this is just the doorbell, rung by this replica's pump, and
//! on PostgreSQL by other replicas' writes too (`bells.rs`); a stream also looks at every
//! poll, for a bell that was missed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Default)]
pub struct Streams {
    bells: Mutex<HashMap<String, Arc<Notify>>>,
    /// Streams open per user.
    open: Arc<Mutex<HashMap<String, usize>>>,
}

/// Streams one user may have open at once (tabs, devices); each costs a poll of the database.
pub const STREAMS_PER_USER: usize = 16;

/// One open stream of a user; closing it (dropping) frees its place.
pub struct Slot {
    open: Arc<Mutex<HashMap<String, usize>>>,
    user: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.user);
            }
        }
    }
}

impl Streams {
    /// A place for one more stream of `user`, if they have fewer than [`STREAMS_PER_USER`].
    pub fn open(&self, user: &str) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(user.to_string()).or_default();
        if *n >= STREAMS_PER_USER {
            return None;
        }
        *n += 1;
        Some(Slot {
            open: self.open.clone(),
            user: user.to_string(),
        })
    }

    /// The doorbell of `conversation`, for a stream to wait on.
    pub fn bell(&self, conversation: &str) -> Arc<Notify> {
        let mut bells = self.bells.lock().unwrap_or_else(|e| e.into_inner());
        // Forget the bells nobody waits on any more, so the map does not grow with every
        // conversation ever streamed.
        bells.retain(|_, b| Arc::strong_count(b) > 1);
        bells.entry(conversation.to_string()).or_default().clone()
    }

    pub fn notify(&self, conversation: &str) {
        let bells = self.bells.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = bells.get(conversation) {
            b.notify_waiters();
        }
    }

    /// Wakes every stream, to look for what a missed bell would have announced.
    pub fn notify_all(&self) {
        let bells = self.bells.lock().unwrap_or_else(|e| e.into_inner());
        for b in bells.values() {
            b.notify_waiters();
        }
    }
}
