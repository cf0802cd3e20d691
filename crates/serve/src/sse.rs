//! A conversation's events as Server-Sent Events. The stream reads the conversation's log
//! from the database after the client's `Last-Event-ID` (or `?after=`), so a reconnect to
//! any replica resumes exactly after the last event the client saw, each event once. New
//! events are announced by this replica's doorbell, and found by a short poll when another
//! replica writes them. When this replica drains, the stream says `reconnect` and closes.
//! Each event's data is the session's event as JSON with `at_ms` (when it was written) and
//! `turn_id`.

use crate::AppState;
use crate::api::ApiError;
use crate::journal::StoredEvent;
use crate::owned::Owned;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream};
use serde::Deserialize;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

/// Events read from the log per query.
const PAGE: i64 = 256;

#[derive(Deserialize)]
pub struct After {
    after: Option<i64>,
}

struct Follow {
    state: AppState,
    /// Held while the stream is open.
    _slot: crate::streams::Slot,
    conversation: String,
    last: i64,
    ready: VecDeque<StoredEvent>,
    done: bool,
}

pub async fn events(
    State(state): State<AppState>,
    Owned { row, caller, .. }: Owned,
    headers: HeaderMap,
    Query(q): Query<After>,
) -> Result<Response, ApiError> {
    if state.hub.draining.is_cancelled() {
        return Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "this replica is shutting down; reconnect to another".into(),
        ));
    }
    let Some(slot) = state.hub.streams.open(&caller.user.id) else {
        return Err(ApiError(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "at most {} streams may be open at once",
                crate::streams::STREAMS_PER_USER
            ),
        ));
    };
    let from_header = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    let last = from_header.or(q.after).unwrap_or(0).max(0);
    let follow = Follow {
        state,
        _slot: slot,
        conversation: row.id,
        last,
        ready: VecDeque::new(),
        done: false,
    };
    Ok(Sse::new(stream_of(follow))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

fn stream_of(follow: Follow) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    stream::unfold(follow, |mut f| async move {
        let event = next(&mut f).await?;
        Some((Ok(event), f))
    })
}

/// The next event to send, waiting for one; `None` ends the stream.
async fn next(f: &mut Follow) -> Option<SseEvent> {
    if f.done {
        return None;
    }
    loop {
        if let Some(e) = f.ready.pop_front() {
            f.last = e.seq;
            return Some(
                SseEvent::default()
                    .id(e.seq.to_string())
                    .event(e.kind.clone())
                    .data(with_meta(&e)),
            );
        }
        let hub = &f.state.hub;
        let bell = hub.streams.bell(&f.conversation);
        let rung = bell.notified();
        tokio::pin!(rung);
        // Registered before the query, so an event written after it still wakes us.
        rung.as_mut().enable();
        match hub.db.events_after(&f.conversation, f.last, PAGE).await {
            Ok(page) if !page.is_empty() => {
                f.ready.extend(page);
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("cannot read a conversation's events: {e}");
                f.done = true;
                return Some(reconnect("the event log is unavailable here"));
            }
        }
        tokio::select! {
            () = &mut rung => {}
            () = tokio::time::sleep(hub.poll_interval()) => {}
            () = hub.draining.cancelled() => {
                f.done = true;
                return Some(reconnect("this replica is shutting down"));
            }
        }
    }
}

/// The event's JSON with `at_ms` (when the service wrote it, so a client can tell how long
/// delivery took) and `turn_id` added. Bodies are JSON objects the service wrote itself.
fn with_meta(e: &StoredEvent) -> String {
    let turn = e
        .turn_id
        .as_deref()
        .map(|t| format!(",\"turn_id\":\"{t}\""))
        .unwrap_or_default();
    match e.body.strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with('}') => {
            format!("{{\"at_ms\":{}{turn}}}", e.at_ms)
        }
        Some(rest) => format!("{{\"at_ms\":{}{turn},{rest}", e.at_ms),
        None => e.body.clone(),
    }
}

/// Tells the client to reconnect (elsewhere) with its last event id.
fn reconnect(why: &str) -> SseEvent {
    SseEvent::default()
        .event("reconnect")
        .data(serde_json::json!({ "type": "reconnect", "reason": why }).to_string())
}
