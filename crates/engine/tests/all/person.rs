//! A person's direct call through the gate, polled by hand: the answer wakes the caller's
//! task once, and the call then ends in that poll. A second wake-up (the progress channel
//! closing under a waker it still held) cost every call a poll of the whole call and a trip
//! to the reactor before the next one could wait.

use crate::fakes::{FakeServers, echo_tool};
use mcp_host_client::{CallError, Expect, ProgressSink};
use mcp_host_core::{CallOutcome, Content, ServerId};
use mcp_host_engine::connections::{Caller, Sent};
use mcp_host_engine::person::{DirectCall, DirectOutcome};
use mcp_host_engine::{Event, Gate, Hooks, Observer};
use mcp_host_policy::{Policy, Remembered};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Answers `echo` once `release` is notified, holding the progress sender until then, as a
/// connection holds it while its server works.
struct HeldCaller {
    release: Arc<Notify>,
}

impl Caller for HeldCaller {
    fn send(
        &self,
        _server: &ServerId,
        _tool: &str,
        _arguments: Option<Map<String, Value>>,
        _expect: Option<Expect>,
        _cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Sent {
        let release = self.release.clone();
        Box::pin(async move {
            release.notified().await;
            drop(progress);
            Ok::<_, CallError>(CallOutcome {
                content: vec![Content::Text { text: "hi".into() }],
                structured: None,
                is_error: false,
                input_rounds: Vec::new(),
                task_id: None,
            })
        })
    }
}

/// Shows calls as they go (so the call listens for progress), and counts what it was told.
#[derive(Default)]
struct Watching {
    events: AtomicUsize,
}

impl Observer for Watching {
    fn event(&self, _: Event) {
        self.events.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn the_answer_wakes_a_persons_call_once_and_it_ends_in_that_poll() {
    let release = Arc::new(Notify::new());
    let gate = Gate::new(
        HeldCaller {
            release: release.clone(),
        },
        Policy::default(),
        Hooks::default(),
        None,
    );
    let servers = FakeServers::new();
    let catalogue = Catalogue::build(vec![ServerTools::new(
        ServerId::new("f"),
        servers.tools.items.clone(),
    )]);
    let entry = catalogue.get("f__echo").expect("the echo tool is offered");
    assert_eq!(*entry.tool, echo_tool());
    let observer = Watching::default();
    let remembered = Remembered::default();
    let call = gate.direct(
        DirectCall {
            catalogue: &catalogue,
            entry,
            call_id: "direct-1".into(),
            args: json!({"message": "hi"}),
            remembered: &remembered,
            observer: &observer,
        },
        CancellationToken::new(),
    );
    let mut call = std::pin::pin!(call);
    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);

    assert!(call.as_mut().poll(&mut cx).is_pending(), "no answer yet");
    assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
    release.notify_one();
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        1,
        "the answer wakes the call"
    );
    let Poll::Ready(done) = call.as_mut().poll(&mut cx) else {
        panic!("the call did not end in the poll its answer woke");
    };
    assert!(matches!(done, DirectOutcome::Done { .. }), "{done:?}");
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        1,
        "ending the call woke its task again"
    );
    // Begun and ended: this observer follows calls.
    assert_eq!(observer.events.load(Ordering::SeqCst), 2);
}
