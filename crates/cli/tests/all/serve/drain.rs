//! SIGTERM: no new turn, `/readyz` says so, streams are told to reconnect elsewhere, a turn
//! that can finish before the deadline does, one that cannot is marked interrupted, every
//! server process is gone, and the exit status is 0.

use super::*;
use crate::common::{Sandbox, signal};
use serde_json::json;

/// The states of the conversation's turns and its events after `last`, read from the
/// service started again on the same data.
fn after_restart(setup: &Setup<'_>, token: &str, conv: &str, last: i64) -> (Vec<String>, Vec<Sse>) {
    let service = setup.start();
    let api = Api::new(&service, token);
    let r = api.get(&format!("/api/conversations/{conv}")).json();
    let states = r["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["state"].as_str().unwrap().to_string())
        .collect();
    let rest = api.events(conv, Some(last)).until("turn_ended");
    (states, rest)
}

fn exit_code(service: &mut Service) -> Option<i32> {
    let until = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = service.child.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            Instant::now() < until,
            "the service did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a drain did to a turn calling `slow` for `ms`: the turn's states, what the open
/// stream got after SIGTERM, what a client resuming after restart got, and the answer to a
/// new turn while draining.
struct Drained {
    states: Vec<String>,
    on_stream: Vec<Sse>,
    resumed: Vec<Sse>,
    new_turn: u16,
}

fn drain_case(ms: u64, drain_secs: &str, marker: &str) -> Drained {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(
        &sb,
        json!({"f": fake_entry(&["--instructions", marker], false)}),
    );
    let mut setup = Setup::new(&sb, &cat, &model);
    let token = setup.add_user("u", false);
    setup.grant("f", "*");
    setup.extra = vec!["--drain".into(), drain_secs.into()];
    let mut service = setup.start();
    let api = Api::new(&service, &token);
    api.enable("f");
    let conv = api.conversation();
    let mut events = api.events(&conv, None);
    assert_eq!(
        api.turn(&conv, &format!("call f__slow {{\"ms\": {ms}}}"))
            .status,
        202
    );
    let begun = events.until("call_begun");
    let last = begun.last().unwrap().id.unwrap();
    assert!(process_with(marker), "the server runs");
    signal(service.child.id(), nix::sys::signal::Signal::SIGTERM);
    wait_for("readyz to fail", || {
        request(&service.addr, "GET", "/readyz", &[], None).status == 503
    });
    let new_turn = api.turn(&api.conversation(), "hello").status;
    let on_stream: Vec<Sse> = std::iter::from_fn(|| events.next()).collect();
    assert_eq!(exit_code(&mut service), Some(0));
    assert!(!process_with(marker), "no server process is left");
    drop(service);
    setup.extra.clear();
    let (states, resumed) = after_restart(&setup, &token, &conv, last);
    Drained {
        states,
        on_stream,
        resumed,
        new_turn,
    }
}

fn kinds(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

#[test]
fn sigterm_lets_a_turn_finish_within_the_deadline_then_exits_0() {
    let d = drain_case(1_500, "20", "drain-finishes-marker");
    assert_eq!(d.new_turn, 503, "no new turn while draining");
    assert_eq!(d.states, ["finished"]);
    // The open stream is told at once to reconnect elsewhere; the turn goes on meanwhile,
    // and a client resuming from its last event gets the rest of it.
    assert_eq!(kinds(&d.on_stream), ["reconnect"]);
    assert_eq!(
        kinds(&d.resumed),
        ["call_ended", "text_delta", "turn_ended"]
    );
    assert_eq!(d.resumed[2].data["report"]["end"], "finished");
}

#[test]
fn sigterm_marks_a_turn_that_cannot_finish_interrupted_and_still_exits_0() {
    let d = drain_case(120_000, "1", "drain-interrupts-marker");
    assert_eq!(d.states, ["interrupted"]);
    assert_eq!(kinds(&d.on_stream), ["reconnect"]);
    let ended = d.resumed.last().unwrap();
    assert_eq!(ended.data["report"]["end"], "cancelled", "{:#?}", d.resumed);
}
