//! Progress notifications, from the server's line to whoever shows them: routed to the
//! request they belong to by the progress token rmcp put on it, and held as the latest one
//! only. A server may send progress as fast as it can write; each request keeps one value
//! however many arrive, so a flood costs the host neither memory nor an event per line.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, watch};

/// One progress notification, as a front end shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a request's progress goes: the latest notification replaces the one before it.
#[derive(Clone, Debug)]
pub struct ProgressSink(watch::Sender<Option<Progress>>);

/// The other end: the latest progress, when there is one not seen yet.
#[derive(Debug)]
pub struct ProgressFeed(watch::Receiver<Option<Progress>>);

/// A sink and the feed that reads it.
pub fn progress_channel() -> (ProgressSink, ProgressFeed) {
    let (tx, rx) = watch::channel(None);
    (ProgressSink(tx), ProgressFeed(rx))
}

impl ProgressSink {
    pub fn send(&self, progress: Progress) {
        // Kept even with no feed left: nothing is waiting, and nothing grows.
        self.0.send_replace(Some(progress));
    }
}

impl ProgressFeed {
    /// The latest progress not seen yet, waiting for one; `None` once every sink is gone
    /// and the last value has been seen. Cancel-safe: a value is marked seen only when
    /// this returns it.
    pub async fn next(&mut self) -> Option<Progress> {
        loop {
            self.0.changed().await.ok()?;
            if let Some(progress) = self.0.borrow_and_update().clone() {
                return Some(progress);
            }
        }
    }
}

/// Where each in-flight request's progress goes, by its progress token.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProgressRoutes {
    routes: Arc<Mutex<HashMap<ProgressToken, Route>>>,
}

/// Who hears of one request's progress.
#[derive(Clone, Debug)]
struct Route {
    sink: Option<ProgressSink>,
    /// Told of each notification (a request whose idle deadline restarts on progress).
    heard: Option<Arc<Notify>>,
}

impl ProgressRoutes {
    pub(crate) fn add(&self, token: ProgressToken, sink: ProgressSink) {
        self.insert(token, Some(sink), None);
    }

    /// Routes progress for `token` to `sink`, if any, and tells `heard` of each one.
    pub(crate) fn watch(
        &self,
        token: ProgressToken,
        sink: Option<ProgressSink>,
        heard: Arc<Notify>,
    ) {
        self.insert(token, sink, Some(heard));
    }

    fn insert(&self, token: ProgressToken, sink: Option<ProgressSink>, heard: Option<Arc<Notify>>) {
        if let Ok(mut r) = self.routes.lock() {
            r.insert(token, Route { sink, heard });
        }
    }

    pub(crate) fn remove(&self, token: &ProgressToken) {
        if let Ok(mut r) = self.routes.lock() {
            r.remove(token);
        }
    }

    pub(crate) fn route(&self, params: &ProgressNotificationParam) {
        let route = self
            .routes
            .lock()
            .ok()
            .and_then(|r| r.get(&params.progress_token).cloned());
        let Some(route) = route else {
            return;
        };
        if let Some(heard) = route.heard {
            // A permit is kept when nobody waits at this instant: no notification is lost.
            heard.notify_one();
        }
        if let Some(sink) = route.sink {
            let message = params
                .message
                .as_deref()
                .map(mcp_host_core::sanitize::strip_terminal_escapes);
            sink.send(Progress {
                progress: params.progress,
                total: params.total,
                message,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(progress: f64) -> Progress {
        Progress {
            progress,
            total: None,
            message: None,
        }
    }

    /// However many notifications arrive before the feed is read, it holds one: the last.
    #[tokio::test]
    async fn a_feed_holds_only_the_latest_progress() {
        let (sink, mut feed) = progress_channel();
        for n in 0..100_000 {
            sink.send(at(f64::from(n)));
        }
        assert_eq!(feed.next().await, Some(at(99_999.0)));
        sink.send(at(1.0));
        drop(sink);
        // The value sent before the sink went is still told, then the feed ends.
        assert_eq!(feed.next().await, Some(at(1.0)));
        assert_eq!(feed.next().await, None);
    }
}
