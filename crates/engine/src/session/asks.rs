//! Servers' questions (forms and URLs) waiting for the person, by the id the front end
//! answers with. A question its server stopped waiting for (the request's own deadline
//! passed, or its connection ended) is dropped when the next one arrives: a server asking
//! past its deadline, question after question, would otherwise grow this without end.

use crate::host::ElicitationReply;
use std::collections::HashMap;
use tokio::sync::oneshot;

/// A question waiting: where its answer goes, and the URL of a URL request.
pub(super) type Waiting = (oneshot::Sender<ElicitationReply>, Option<String>);

#[derive(Default)]
pub(super) struct Asks(HashMap<String, Waiting>);

impl Asks {
    /// Keeps `waiting` under `id`, and drops the questions nobody waits for any more.
    pub(super) fn put(&mut self, id: String, waiting: Waiting) {
        self.0.retain(|_, (reply, _)| !reply.is_closed());
        self.0.insert(id, waiting);
    }

    /// The question `id`, no longer waiting here.
    pub(super) fn take(&mut self, id: &str) -> Option<Waiting> {
        self.0.remove(id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Questions whose servers stopped waiting go at the next question; the rest stay.
    #[test]
    fn questions_nobody_waits_for_are_dropped_at_the_next() {
        let mut asks = Asks::default();
        let mut held = Vec::new();
        for n in 0..1000 {
            let (reply, answer) = oneshot::channel();
            asks.put(format!("ask-{n}"), (reply, None));
            // Every tenth question's server is still waiting.
            if n % 10 == 0 {
                held.push(answer);
            }
        }
        assert_eq!(asks.0.len(), 100 + 1, "the held ones, and the last put");
        let (reply, _url) = asks.take("ask-990").unwrap();
        assert!(reply.send(ElicitationReply::Decline).is_ok());
        assert!(asks.take("ask-991").is_none());
        assert!(asks.take("ask-990").is_none());
        drop(held);
    }
}
