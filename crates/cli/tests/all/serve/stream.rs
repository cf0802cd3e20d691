//! A turn's events are a numbered log: a client that drops mid-turn and reconnects with
//! `Last-Event-ID` gets every later event exactly once, in order.

use super::*;
use crate::common::Sandbox;
use serde_json::json;

/// The ids of `events`, which must be consecutive from `from`.
pub fn consecutive(events: &[Sse], from: i64) {
    let ids: Vec<i64> = events.iter().filter_map(|e| e.id).collect();
    let want: Vec<i64> = (from..from + ids.len() as i64).collect();
    assert_eq!(ids, want, "{events:#?}");
}

#[test]
fn a_client_that_drops_mid_turn_resumes_after_its_last_event_exactly_once() {
    let sb = Sandbox::new();
    // A slow model: the answer streams over many events.
    let model = Model::start(60);
    let cat = catalogue(&sb, json!({}));
    let setup = Setup::new(&sb, &cat, &model);
    let token = setup.add_user("u", false);
    let service = setup.start();
    let api = Api::new(&service, &token);
    let conv = api.conversation();
    let text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen";
    let mut first = api.events(&conv, None);
    assert_eq!(api.turn(&conv, text).status, 202);
    let mut seen = vec![first.next().unwrap(), first.next().unwrap()];
    seen.extend(first.until("text_delta"));
    drop(first);
    let last = seen.last().unwrap().id.unwrap();
    // The rest of the turn, from where the client was.
    let mut again = api.events(&conv, Some(last));
    let rest = again.until("turn_ended");
    consecutive(&seen, 1);
    consecutive(&rest, last + 1);
    let streamed: String = seen
        .iter()
        .chain(&rest)
        .filter(|e| e.event == "text_delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, format!("You said: {text}"));
    // `?after=` resumes the same way (EventSource cannot set headers on its first request).
    let path = format!("/api/conversations/{conv}/events?after={last}");
    let mut by_query = Events::open(&service.addr, &path, &format!("Bearer {token}"), None);
    let same = by_query.until("turn_ended");
    assert_eq!(
        same.iter().map(|e| e.id).collect::<Vec<_>>(),
        rest.iter().map(|e| e.id).collect::<Vec<_>>()
    );
}

#[test]
fn a_server_flooding_progress_costs_the_log_a_few_rows() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(&sb, json!({"f": fake_entry(&[], false)}));
    let setup = Setup::new(&sb, &cat, &model);
    let token = setup.add_user("u", false);
    setup.grant("f", "*");
    let service = setup.start();
    let api = Api::new(&service, &token);
    api.enable("f");
    let conv = api.conversation();
    let mut events = api.events(&conv, None);
    // About 400 progress notifications in 800 ms.
    let call = "call f__slow {\"ms\": 800, \"progressEvery\": 2}";
    assert_eq!(api.turn(&conv, call).status, 202);
    let turn = events.until("turn_ended");
    let progress = turn.iter().filter(|e| e.event == "progress").count();
    assert!(
        (1..=8).contains(&progress),
        "{progress} progress rows for one 800 ms call"
    );
    consecutive(&turn, 1);
}
