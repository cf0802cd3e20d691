//! Doorbells across replicas. On PostgreSQL every event appended to a conversation's log
//! and every answer left in a replica's inbox is announced with `NOTIFY` in the statement
//! that writes it (`journal.rs`: channels [`EVENTS`], payload the conversation id, and
//! [`INBOX`], payload the replica); each replica `LISTEN`s on one connection of its own and
//! rings its local doorbells, so a stream follows a turn running elsewhere, and an answer
//! reaches the replica running its turn, as soon as it is written. Polling stays, slowed
//! while the listener is up, for what a dropped listener connection misses: notifications
//! only wake; the log and the inbox are the truth.

use crate::hub::Hub;
use sqlx::postgres::PgListener;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The channel of appended events; must match the `pg_notify` in `journal.rs`.
pub const EVENTS: &str = "mcp_host_events";
/// The channel of inbox answers; must match the `pg_notify` in `journal.rs`.
pub const INBOX: &str = "mcp_host_inbox";

/// How long to wait before connecting again after the listener connection failed.
const RETRY: Duration = Duration::from_secs(1);

/// Listens on `url` for as long as the service runs, ringing `hub`'s doorbells.
pub async fn listen(hub: Arc<Hub>, url: String) {
    loop {
        match connect(&url).await {
            Ok(mut listener) => {
                hub.listening.store(true, Ordering::Relaxed);
                // What was written while nobody listened is found by this look.
                hub.inbox_bell.notify_one();
                hub.streams.notify_all();
                loop {
                    match listener.try_recv().await {
                        Ok(Some(n)) => ring(&hub, n.channel(), n.payload()),
                        // The connection dropped (and is made again at the next call):
                        // anything sent meanwhile is lost, so look now.
                        Ok(None) => {
                            hub.inbox_bell.notify_one();
                            hub.streams.notify_all();
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "lost the database's notifications");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for the database's notifications"),
        }
        hub.listening.store(false, Ordering::Relaxed);
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = hub.draining.cancelled() => return,
        }
    }
}

async fn connect(url: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect(url).await?;
    listener.listen_all([EVENTS, INBOX]).await?;
    Ok(listener)
}

fn ring(hub: &Hub, channel: &str, payload: &str) {
    match channel {
        EVENTS => hub.streams.notify(payload),
        INBOX if payload == hub.service.replica => hub.inbox_bell.notify_one(),
        _ => {}
    }
}
