//! The accept loop, in place of `axum::serve`, for two guarantees it does not give: a
//! client must send a request's whole header within [`ConnectionLimits::header_read`] (a
//! slowloris connection that trickles a header byte by byte is closed, instead of holding
//! a task and a socket forever), and at most [`ConnectionLimits::max_connections`] are open
//! at once (past that, new connections wait in the kernel's backlog, so a flood cannot
//! exhaust file descriptors and take the streams of signed-in users with it). HTTP/1.1 and
//! HTTP/2 both; on shutdown every connection is told to finish its request and close.

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read: Duration,
}

/// How long connections still open at shutdown get to finish (drain has already ended the
/// turns and closed the event streams by then).
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Serves `app` on `listener` until `closed` is cancelled.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    closed: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    builder.http2().timer(TokioTimer::new());
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = closed.cancelled() => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = closed.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, say: back off a little rather than spin on the error.
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(
            app.clone()
                .map_request(|request: hyper::Request<Incoming>| request.map(Body::new)),
        );
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(CLOSE_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("connections still open after the close grace; dropping them");
    }
}
