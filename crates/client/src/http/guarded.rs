//! What every exchange of a Streamable HTTP transport is held to, whatever the server does.
//! Both found by the simulation.
//!
//! - **It ends when the host lets go.** rmcp's transport worker awaits its first request
//!   (the `initialize` or `server/discover` POST, and the event stream its answer comes on)
//!   without watching its own cancellation, so a handshake the host gave up on (its start-up
//!   timeout) left the worker task and its HTTP connection alive until the server ended the
//!   stream: a server that opens the stream and stays silent kept one connection per
//!   attempt forever. Every request and stream ends once the transport's [`Sever`] handle
//!   is dropped.
//! - **A request's answer comes on that request's own response.** The spec lets a server
//!   send requests and notifications on any stream, but a response only on the stream of
//!   the POST it answers (or a resumption of it). rmcp merges every stream into one, so a
//!   late answer of an earlier connection's request, sent on this connection's stream with
//!   a colliding id (every connection counts from 0), answered a different call. A
//!   response on another request's stream is dropped, and so is one on the standalone GET
//!   stream unless its request's POST was only accepted (202: some servers answer there,
//!   and rmcp waits for it); a JSON body that answers another id fails its request at
//!   once, with the reason.
//! - **A session's event stream is open before its first request.** rmcp opens the
//!   standalone GET stream in a task of its own once `notifications/initialized` is taken,
//!   and sends the next request at once, so the server could see the request first: what
//!   it sent on a stream not yet there (a notification right after the handshake) was lost,
//!   and a server that answers a pending request on the next GET (the conformance suite's
//!   `sse-retry` does) answered it on the standalone stream, where the answer is dropped.
//!   Every later POST waits until that GET has been answered or refused, for at most
//!   [`STREAM_GRACE`]: a server that holds the GET delays the session once, not forever.

use crate::wire::answered_id;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData, JsonRpcError,
    JsonRpcMessage, RequestId,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

type Events = BoxStream<'static, Result<sse_stream::Sse, SseError>>;

/// An HTTP client whose exchanges end when the transport is dropped and carry only their
/// own answers.
#[derive(Clone)]
pub struct Guarded<C> {
    inner: C,
    cut: CancellationToken,
    accepted: Accepted,
    listening: Arc<watch::Sender<Listening>>,
}

/// How long a request waits for the session's event stream to be answered.
pub const STREAM_GRACE: Duration = Duration::from_secs(2);

/// Where the session's standalone event stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Listening {
    /// Answered, refused, given up on, or not to be opened (no session yet, or none at all).
    Settled,
    /// The session was just initialized: rmcp asks for its stream next.
    Opening,
}

/// The requests whose POST the server only accepted: their answers may come on the
/// standalone stream.
type Accepted = Arc<Mutex<HashSet<RequestId>>>;

/// Held by the transport; dropping it ends everything its client still has open.
pub struct Sever {
    _cut: DropGuard,
}

/// Which answers a stream may carry.
#[derive(Clone)]
enum Answers {
    /// Only the answer to this id (a POST's stream).
    To(RequestId, Accepted),
    /// Any (a resumed stream: the request it belongs to is not known here).
    Any,
    /// Only those to requests the server accepted without answering (the standalone GET
    /// stream, a notification's POST).
    Accepted(Accepted),
}

impl Answers {
    fn admit(&self, id: &RequestId) -> bool {
        match self {
            Self::To(own, _) => id == own,
            Self::Any => true,
            Self::Accepted(accepted) => {
                (accepted.lock()).map(|mut a| a.remove(id)).unwrap_or(false)
            }
        }
    }
}

impl<C> Guarded<C> {
    pub fn new(inner: C) -> (Self, Sever) {
        let cut = CancellationToken::new();
        let sever = Sever {
            _cut: cut.clone().drop_guard(),
        };
        let accepted = Accepted::default();
        let listening = Arc::new(watch::Sender::new(Listening::Settled));
        (
            Self {
                inner,
                cut,
                accepted,
                listening,
            },
            sever,
        )
    }

    /// Waits, for at most [`STREAM_GRACE`], until the session's event stream is no longer
    /// being opened.
    async fn stream_settled(&self) {
        if *self.listening.borrow() == Listening::Settled {
            return;
        }
        let mut state = self.listening.subscribe();
        let settled = state.wait_for(|l| *l == Listening::Settled);
        if tokio::time::timeout(STREAM_GRACE, settled).await.is_err() {
            tracing::debug!("the event stream's GET is unanswered; requests go on without it");
            self.listening.send_replace(Listening::Settled);
        }
    }

    /// The answers a POST of `message` may bring back.
    fn answers_to(&self, message: &ClientJsonRpcMessage) -> Answers {
        match message {
            JsonRpcMessage::Request(r) => Answers::To(r.id.clone(), self.accepted.clone()),
            _ => Answers::Accepted(self.accepted.clone()),
        }
    }

    /// A GET that resumes a stream (`Last-Event-ID`) may carry the answer of the request
    /// that stream belonged to; the standalone stream only those of accepted requests.
    fn resumed(&self, last_event_id: &Option<String>) -> Answers {
        match last_event_id {
            Some(_) => Answers::Any,
            None => Answers::Accepted(self.accepted.clone()),
        }
    }

    /// `call`, unless the transport is dropped first, with `check` applied to what it
    /// returns.
    async fn guard<T, E>(
        &self,
        call: impl Future<Output = Result<T, StreamableHttpError<E>>>,
        check: impl FnOnce(T, &CancellationToken) -> Result<T, StreamableHttpError<E>>,
    ) -> Result<T, StreamableHttpError<E>>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        tokio::select! {
            r = call => r.and_then(|t| check(t, &self.cut)),
            () = self.cut.cancelled() => Err(StreamableHttpError::TransportChannelClosed),
        }
    }
}

/// The two messages of the `initialize` handshake, which come before any event stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Handshake {
    Initialize,
    Initialized,
}

impl Handshake {
    fn of(message: &ClientJsonRpcMessage) -> Option<Self> {
        match message {
            JsonRpcMessage::Request(r) => {
                matches!(r.request, ClientRequest::InitializeRequest(_)).then_some(Self::Initialize)
            }
            JsonRpcMessage::Notification(n) => matches!(
                n.notification,
                ClientNotification::InitializedNotification(_)
            )
            .then_some(Self::Initialized),
            _ => None,
        }
    }
}

/// `events`, ending when the transport is dropped, without the answers it may not carry.
fn guarded_events(events: Events, cut: &CancellationToken, answers: Answers) -> Events {
    events
        .take_until(cut.clone().cancelled_owned())
        .filter(move |event| {
            let answered = match event {
                Ok(sse) => sse.data.as_deref().and_then(answered_id),
                Err(_) => None,
            };
            let keep = answered.is_none_or(|id| answers.admit(&id));
            if !keep {
                tracing::debug!("dropped an answer sent on another request's stream");
            }
            std::future::ready(keep)
        })
        .boxed()
}

/// An id as JSON spells it, so a string `"2"` and a number `2` read differently.
fn id_text(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

fn guarded_answer<E: std::error::Error + Send + Sync + 'static>(
    response: StreamableHttpPostResponse,
    cut: &CancellationToken,
    answers: Answers,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<E>> {
    match response {
        StreamableHttpPostResponse::Sse(events, session) => Ok(StreamableHttpPostResponse::Sse(
            guarded_events(events, cut, answers),
            session,
        )),
        StreamableHttpPostResponse::Json(message, session) => {
            let id = match &message {
                JsonRpcMessage::Response(r) => Some(&r.id),
                JsonRpcMessage::Error(e) => e.id.as_ref(),
                _ => None,
            };
            match (id, &answers) {
                // The request fails at once, with the reason, and the session goes on (an
                // error from the client here would end the whole transport).
                (Some(id), Answers::To(own, _)) if id != own => {
                    let why = format!(
                        "invalid response: the answer to request {} is for request {}",
                        id_text(own),
                        id_text(id)
                    );
                    let error = ErrorData::new(ErrorCode::INTERNAL_ERROR, why, None);
                    let failed = JsonRpcMessage::Error(JsonRpcError::new(Some(own.clone()), error));
                    Ok(StreamableHttpPostResponse::Json(failed, session))
                }
                _ => Ok(StreamableHttpPostResponse::Json(message, session)),
            }
        }
        StreamableHttpPostResponse::Accepted => {
            if let Answers::To(own, accepted) = &answers
                && let Ok(mut a) = accepted.lock()
            {
                a.insert(own.clone());
            }
            Ok(StreamableHttpPostResponse::Accepted)
        }
        // `non_exhaustive`: whatever rmcp adds later passes as it is.
        other => Ok(other),
    }
}

impl<C: StreamableHttpClient + Sync> Guarded<C> {
    /// A POST of `message` made by `send`: after the session's event stream is settled
    /// (the handshake's own two messages do not wait), held to the answers it may carry.
    async fn post<F>(
        &self,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        send: impl FnOnce(ClientJsonRpcMessage, Option<Arc<str>>) -> F,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>>
    where
        F: Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>>>,
    {
        let answers = self.answers_to(&message);
        let step = Handshake::of(&message);
        // rmcp opens the stream only for a session (a server that gave no id has none).
        let opens_stream = step == Some(Handshake::Initialized) && session_id.is_some();
        let call = async {
            if step.is_none() {
                self.stream_settled().await;
            }
            send(message, session_id).await
        };
        let response = (self.guard(call, |r, cut| guarded_answer(r, cut, answers))).await;
        if opens_stream && response.is_ok() {
            self.listening.send_replace(Listening::Opening);
        }
        response
    }

    /// A GET without `Last-Event-ID` is the session's standalone stream: once it is
    /// answered (or refused, or failed), requests no longer wait for it.
    fn stream_answered(&self, standalone: bool) {
        if standalone {
            self.listening.send_replace(Listening::Settled);
        }
    }

    /// The legacy HTTP+SSE transport's one event stream, which carries every answer of its
    /// connection (the POSTs are only accepted, and the answer may come before the POST's
    /// own response does).
    pub async fn legacy_stream(
        &self,
        uri: Arc<str>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<C::Error>> {
        let call = self.inner.get_stream_with_max_sse_event_size(
            uri,
            None,
            None,
            None,
            custom_headers,
            max_sse_event_size,
        );
        self.guard(call, |e, cut| Ok(guarded_events(e, cut, Answers::Any)))
            .await
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Guarded<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>> {
        self.post(message, session_id, |message, session_id| {
            (self.inner).post_message(uri, message, session_id, auth_header, custom_headers)
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>> {
        self.post(message, session_id, |message, session_id| {
            self.inner.post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>> {
        self.post(message, session_id, |message, session_id| {
            self.inner.post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        let call = (self.inner).delete_session(uri, session_id, auth_header, custom_headers);
        self.guard(call, |(), _| Ok(())).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<C::Error>> {
        let answers = self.resumed(&last_event_id);
        let standalone = last_event_id.is_none();
        let call =
            (self.inner).get_stream(uri, session_id, last_event_id, auth_header, custom_headers);
        let events = (self.guard(call, |e, cut| Ok(guarded_events(e, cut, answers)))).await;
        self.stream_answered(standalone);
        events
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<C::Error>> {
        let answers = self.resumed(&last_event_id);
        let standalone = last_event_id.is_none();
        let call = self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        let events = (self.guard(call, |e, cut| Ok(guarded_events(e, cut, answers)))).await;
        self.stream_answered(standalone);
        events
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

    use super::*;
    use rmcp::model::ServerJsonRpcMessage;

    fn event(data: &str) -> Result<sse_stream::Sse, SseError> {
        Ok(sse_stream::Sse {
            data: Some(data.to_string()),
            ..Default::default()
        })
    }

    fn stream_of(lines: &[&str]) -> Events {
        let events: Vec<_> = lines.iter().map(|l| event(l)).collect();
        futures::stream::iter(events).boxed()
    }

    async fn kept(events: Events) -> Vec<String> {
        events
            .map(|e| e.unwrap().data.unwrap_or_default())
            .collect()
            .await
    }

    const OTHER: &str = r#"{"jsonrpc":"2.0","id":2,"result":{}}"#;
    const OWN: &str = r#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
    const ASKS: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    const NOTE: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;

    fn to(id: i64) -> Answers {
        Answers::To(RequestId::Number(id), Accepted::default())
    }

    #[tokio::test]
    async fn a_requests_stream_carries_only_its_own_answer() {
        let cut = CancellationToken::new();
        let lines = [
            OTHER,
            ASKS,
            NOTE,
            r#"{"jsonrpc":"2.0","id":"3","result":{}}"#,
            OWN,
        ];
        let got = kept(guarded_events(stream_of(&lines), &cut, to(3))).await;
        assert_eq!(
            got,
            [ASKS, NOTE, OWN],
            "another id, and a string \"3\", are dropped"
        );
    }

    #[tokio::test]
    async fn the_standalone_stream_carries_only_answers_to_accepted_requests_once() {
        let (guarded, _sever) = Guarded::new(());
        let lines = [OTHER, ASKS];
        let standalone = guarded.resumed(&None);
        let got = kept(guarded_events(stream_of(&lines), &guarded.cut, standalone)).await;
        assert_eq!(got, [ASKS], "no request was only accepted");
        // The POST of request 2 was answered 202: its answer may come here, once.
        let post = Answers::To(RequestId::Number(2), guarded.accepted.clone());
        let accepted = StreamableHttpPostResponse::Accepted;
        guarded_answer::<std::io::Error>(accepted, &guarded.cut, post).unwrap();
        let twice = [OTHER, OTHER, ASKS];
        let standalone = guarded.resumed(&None);
        let got = kept(guarded_events(stream_of(&twice), &guarded.cut, standalone)).await;
        assert_eq!(got, [OTHER, ASKS]);
        let resuming = guarded.resumed(&Some("7".into()));
        let got = kept(guarded_events(stream_of(&lines), &guarded.cut, resuming)).await;
        assert_eq!(
            got,
            [OTHER, ASKS],
            "a resumed stream may carry its request's answer"
        );
    }

    #[tokio::test]
    async fn a_json_body_answering_another_request_fails_that_request() {
        let cut = CancellationToken::new();
        let body: ServerJsonRpcMessage = serde_json::from_str(OTHER).unwrap();
        let response = StreamableHttpPostResponse::Json(body, None);
        let got = guarded_answer::<std::io::Error>(response, &cut, to(3)).unwrap();
        let StreamableHttpPostResponse::Json(JsonRpcMessage::Error(e), _) = got else {
            panic!("taken as the answer")
        };
        assert_eq!(e.id, Some(RequestId::Number(3)), "request 3 fails");
        assert!(e.error.message.contains("is for request 2"), "{e:?}");
        let own: ServerJsonRpcMessage = serde_json::from_str(OWN).unwrap();
        let response = StreamableHttpPostResponse::Json(own, None);
        assert!(guarded_answer::<std::io::Error>(response, &cut, to(3)).is_ok());
    }

    #[tokio::test]
    async fn dropping_the_transport_ends_its_streams() {
        let (guarded, sever) = Guarded::new(());
        let open = futures::stream::pending::<Result<sse_stream::Sse, SseError>>().boxed();
        let mut events = guarded_events(open, &guarded.cut, Answers::Any);
        drop(sever);
        assert!(events.next().await.is_none());
    }

    /// A server that takes every POST, telling the test its method, and holds the event
    /// stream's GET until the test releases it (then refuses it, as a server without one).
    #[derive(Clone)]
    struct HeldStream {
        posted: tokio::sync::mpsc::UnboundedSender<String>,
        release: Arc<tokio::sync::Semaphore>,
    }

    type Failed = StreamableHttpError<std::io::Error>;

    impl StreamableHttpClient for HeldStream {
        type Error = std::io::Error;

        async fn post_message(
            &self,
            _uri: Arc<str>,
            message: ClientJsonRpcMessage,
            _session_id: Option<Arc<str>>,
            _auth_header: Option<String>,
            _custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<StreamableHttpPostResponse, Failed> {
            let body = serde_json::to_value(&message).unwrap();
            self.posted
                .send(body["method"].as_str().unwrap().into())
                .unwrap();
            Ok(StreamableHttpPostResponse::Accepted)
        }

        async fn delete_session(
            &self,
            _uri: Arc<str>,
            _session_id: Arc<str>,
            _auth_header: Option<String>,
            _custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<(), Failed> {
            Ok(())
        }

        async fn get_stream(
            &self,
            _uri: Arc<str>,
            _session_id: Option<Arc<str>>,
            _last_event_id: Option<String>,
            _auth_header: Option<String>,
            _custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<Events, Failed> {
            let _released = self.release.acquire().await;
            Err(StreamableHttpError::ServerDoesNotSupportSse)
        }
    }

    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

    fn held() -> (
        Guarded<HeldStream>,
        Sever,
        tokio::sync::mpsc::UnboundedReceiver<String>,
        Arc<tokio::sync::Semaphore>,
    ) {
        let (posted, told) = tokio::sync::mpsc::unbounded_channel();
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let server = HeldStream {
            posted,
            release: release.clone(),
        };
        let (guarded, sever) = Guarded::new(server);
        (guarded, sever, told, release)
    }

    async fn post(guarded: &Guarded<HeldStream>, message: &str) {
        let message = serde_json::from_str(message).unwrap();
        let session = Some(Arc::from("session-1"));
        let uri = Arc::from("http://127.0.0.1:1/mcp");
        let sent = guarded.post_message(uri, message, session, None, HashMap::new());
        sent.await.unwrap();
    }

    /// Opens the standalone stream in a task, as rmcp does.
    fn listen(guarded: &Guarded<HeldStream>) {
        let guarded = guarded.clone();
        tokio::spawn(async move {
            let uri = Arc::from("http://127.0.0.1:1/mcp");
            let session = Some(Arc::from("session-1"));
            let _ = (guarded.get_stream(uri, session, None, None, HashMap::new())).await;
        });
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_waits_until_the_sessions_event_stream_is_answered() {
        let (guarded, _sever, mut told, release) = held();
        post(&guarded, INITIALIZED).await;
        assert_eq!(told.recv().await.unwrap(), "notifications/initialized");
        let listing = tokio::spawn({
            let guarded = guarded.clone();
            async move { post(&guarded, LIST).await }
        });
        listen(&guarded);
        // Virtual time: this returns only once every task is idle, and before the grace.
        let early = tokio::time::timeout(STREAM_GRACE / 2, told.recv()).await;
        assert!(
            early.is_err(),
            "sent before the stream was answered: {early:?}"
        );
        release.add_permits(1);
        assert_eq!(told.recv().await.unwrap(), "tools/list");
        listing.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_event_stream_delays_the_session_once_by_the_grace() {
        let (guarded, _sever, mut told, _release) = held();
        let started = tokio::time::Instant::now();
        post(&guarded, LIST).await;
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "no session initialized yet"
        );
        post(&guarded, INITIALIZED).await;
        listen(&guarded);
        post(&guarded, LIST).await;
        let waited = started.elapsed();
        assert!(
            waited >= STREAM_GRACE && waited < 2 * STREAM_GRACE,
            "{waited:?}"
        );
        post(&guarded, LIST).await;
        assert_eq!(
            started.elapsed(),
            waited,
            "given up on once, not waited for again"
        );
        let methods: Vec<_> = std::iter::from_fn(|| told.try_recv().ok()).collect();
        assert_eq!(
            methods,
            [
                "tools/list",
                "notifications/initialized",
                "tools/list",
                "tools/list"
            ]
        );
    }
}
