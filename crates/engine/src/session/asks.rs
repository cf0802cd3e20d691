//! Servers' questions (forms and URLs) waiting for the person, by the id the front end
//! answers with. A question its server stopped waiting for (the request's own deadline
//! passed, or its connection ended) is taken out as soon as that happens
//! ([`Asks::withdrawn`]), so the front end can put it away, and a server asking past its
//! deadline, question after question, cannot grow this without end.

use crate::host::ElicitationReply;
use std::collections::HashMap;
use std::task::Poll;
use tokio::sync::oneshot;

/// A question waiting: where its answer goes, and the URL of a URL request.
pub(super) type Waiting = (oneshot::Sender<ElicitationReply>, Option<String>);

#[derive(Default)]
pub(super) struct Asks(HashMap<String, Waiting>);

impl Asks {
    /// Keeps `waiting` under `id`.
    pub(super) fn put(&mut self, id: String, waiting: Waiting) {
        self.0.insert(id, waiting);
    }

    /// The id of a question whose server stopped waiting for it, taken out; pending while
    /// there is none (a question put since is watched from the next call on).
    pub(super) async fn withdrawn(&mut self) -> String {
        std::future::poll_fn(|cx| {
            let gone = (self.0.iter_mut())
                .find_map(|(id, (reply, _))| reply.poll_closed(cx).is_ready().then(|| id.clone()));
            match gone {
                Some(id) => {
                    self.0.remove(&id);
                    Poll::Ready(id)
                }
                None => Poll::Pending,
            }
        })
        .await
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

    /// Each question whose server stopped waiting is told once, as it happens; the rest
    /// stay to be answered.
    #[tokio::test]
    async fn questions_nobody_waits_for_are_withdrawn() {
        let mut asks = Asks::default();
        let mut held = Vec::new();
        let mut dropped = Vec::new();
        for n in 0..20 {
            let (reply, answer) = oneshot::channel();
            asks.put(format!("ask-{n}"), (reply, None));
            // Every fifth question's server is still waiting.
            if n % 5 == 0 {
                held.push(answer);
            } else {
                dropped.push(answer);
            }
        }
        {
            let pending = std::pin::pin!(asks.withdrawn());
            assert!(
                futures::poll!(pending).is_pending(),
                "all are still waited for"
            );
        }
        drop(dropped);
        let mut gone = Vec::new();
        for _ in 0..16 {
            gone.push(asks.withdrawn().await);
        }
        gone.sort();
        assert_eq!(gone.len(), 16);
        assert!(gone.iter().all(|id| id != "ask-0" && id != "ask-15"));
        assert_eq!(asks.0.len(), 4);
        {
            let more = std::pin::pin!(asks.withdrawn());
            assert!(futures::poll!(more).is_pending());
        }
        let (reply, _url) = asks.take("ask-10").unwrap();
        assert!(reply.send(ElicitationReply::Decline).is_ok());
        assert!(asks.take("ask-11").is_none());
        drop(held);
    }
}
