//! Waking the SSE streams of a conversation when its log grows on this replica. The log in
//! the database is the only source of events; this is just the doorbell. A stream on another
//! replica hears nothing and finds the new events at its next poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Default)]
pub struct Streams {
    bells: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Streams {
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
}
