//! The stdio wire: newline-delimited JSON-RPC read under a byte cap, decoded and checked
//! here instead of inside rmcp, so that every fault a server can put on its stdout ends in
//! an immediate, visible outcome rather than a silently dropped line and a deadline:
//!
//! - a line the decoder rejects (a lone UTF-16 surrogate, a wrong envelope, `result` and
//!   `error` together, nesting deeper than [`MAX_MESSAGE_DEPTH`]) fails the request it
//!   answers at once, with the reason ([`Verdicts::rejection`] tells it from a server's
//!   own error);
//! - a server→client request that cannot be served is answered with an error, and one
//!   whose id is not a string or an integer is answered with `"id": null`;
//! - a line longer than the cap stops being read at the cap: every pending request fails
//!   at once and the connection ends, since the stream is out of step from there on (the
//!   caller stops the process);
//! - a response is delivered only for an id this side sent and has not seen answered, with
//!   the same type (a string `"1"` never answers request `1`); others are dropped, so an
//!   early or stray response can neither break a handshake nor answer the wrong request;
//! - progress is delivered only for a request still waiting: each request's progress token
//!   goes out unique to this connection (rmcp numbers them from 1 on every connection), so
//!   a server's progress for a request of an earlier connection, or for one already
//!   answered, cannot keep another request's idle deadline alive;
//! - writing to a server that stopped reading its input waits no longer than the caller:
//!   a call's write is under the call's deadlines, a line given up half-written closes
//!   stdin and puts the stream out of step (the connection ends, as after an over-long
//!   line), and at most [`MAX_WRITES_WAITING`] writes wait at once, so replies to a deaf
//!   server's own requests cannot pile up.
//!
//! A [`Wire`] is a cheap handle: a handshake that learns the server is of the older era
//! goes on over the same process with a new handle. A session keeps one to send each
//! `tools/call` past rmcp's service loop ([`Wire::send_direct`]); its answer goes from the
//! reader straight to the caller, under the same checks as any other.

use rmcp::model::{
    ClientNotification, ClientRequest, ErrorCode, ErrorData, GetMeta, JsonRpcError, JsonRpcMessage,
    JsonRpcVersion2_0, NumberOrString, ProgressToken, RequestId, ServerNotification, ServerResult,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

mod decode;
mod line_buffer;
pub(crate) use decode::answered_id;
use decode::*;
use line_buffer::{LineBuffer, LineRead};

/// Deepest nesting of arrays and objects accepted in one message: serde_json's own
/// recursion limit, so a message that decodes is never scanned twice; the depth is counted
/// only when decoding failed, to name this reason. Above the 64 levels a tool schema may
/// have plus the envelope around it, so such a tool is still refused alone (by the lenient
/// decoder), not with its whole page.
pub const MAX_MESSAGE_DEPTH: usize = 127;

/// Messages that may wait to be written to one server's stdin at once (the one being
/// written included); past that, a send fails at once. A server that stops reading its
/// input while it keeps writing requests would otherwise gather a task and its reply per
/// request here, without end. A server that reads at all drains the queue in turn, so
/// the bound is met only by one that does not.
pub const MAX_WRITES_WAITING: usize = 32;

/// Why a stream whose line was given up half-written is out of step.
const HALF_WRITTEN: &str =
    "the server stopped reading its input in the middle of a message (the rest was given up)";

/// How a request sent past rmcp ([`Wire::send_direct`]) ended on the wire.
#[derive(Debug)]
// Moved once, through a oneshot, per call: a box would cost an allocation for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum DirectAnswer {
    Result(ServerResult),
    /// The server's own error answer.
    Error(ErrorData),
    /// The decoder refused the answer, or the stream went out of step before it: why.
    Refused(String),
}

/// A request awaiting its answer.
#[derive(Debug)]
struct Pending {
    awaited: Awaited,
    /// Sent past rmcp: the answer goes here, not to rmcp's service loop.
    direct: Option<tokio::sync::oneshot::Sender<DirectAnswer>>,
}

/// Where an answer read from the wire goes.
enum Admit {
    Rmcp,
    Direct(tokio::sync::oneshot::Sender<DirectAnswer>),
    Drop,
}

/// The ids of requests sent past rmcp start here. rmcp numbers its own from 0 on each
/// connection, so the two never meet (it would take 2^30 requests), and both stay small
/// integers that any server's id type holds (a signed 32-bit one included).
const DIRECT_IDS: i64 = 1 << 30;

/// Which requests this side has sent and not seen answered, and which answers were
/// refused by the decoder (by id, so a server cannot forge one).
#[derive(Debug, Default)]
struct Correlation {
    outstanding: HashMap<RequestId, Pending>,
    /// How many requests were sent past rmcp.
    direct_sent: i64,
    rejected: HashMap<RequestId, String>,
    /// By the progress token a waiting request carries on the wire: rmcp's own token for
    /// it, and the request.
    progress: HashMap<ProgressToken, (ProgressToken, RequestId)>,
}

impl Correlation {
    /// `id` is answered or given up on: nothing more is awaited for it.
    fn settle(&mut self, id: &RequestId) -> Option<Pending> {
        self.progress.retain(|_, (_, request)| request != id);
        self.outstanding.remove(id)
    }
}

#[derive(Debug)]
struct Shared {
    correlation: Mutex<Correlation>,
    /// Why the stream can no longer be trusted (set once: an over-long line read, or a
    /// line given up half-written).
    fault: OnceLock<String>,
    /// Writes waiting for stdin or under way ([`MAX_WRITES_WAITING`]).
    writes: AtomicUsize,
    /// Makes this connection's progress tokens its own (fixed width, so a message's length
    /// does not depend on it).
    salt: u64,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            correlation: Mutex::default(),
            fault: OnceLock::new(),
            writes: AtomicUsize::new(0),
            salt: rand::random(),
        }
    }
}

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut Correlation) -> T) -> Option<T> {
        self.correlation.lock().ok().map(|mut c| f(&mut c))
    }

    fn note_sent(&self, msg: &mut TxJsonRpcMessage<RoleClient>) {
        match msg {
            JsonRpcMessage::Request(r) => {
                let awaited = match r.request {
                    ClientRequest::CallToolRequest(_) => Awaited::Call,
                    ClientRequest::ListToolsRequest(_)
                    | ClientRequest::ListPromptsRequest(_)
                    | ClientRequest::ListResourcesRequest(_)
                    | ClientRequest::ListResourceTemplatesRequest(_) => Awaited::Listing,
                    _ => Awaited::Other,
                };
                self.register(r.id.clone(), r.request.get_meta_mut(), awaited, None);
            }
            // A request given up on is not waited for: a late answer is dropped here.
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.with(|c| c.settle(id));
                }
            }
            _ => {}
        }
    }

    /// Awaits an answer to `id`, for rmcp (`direct: None`) or for a caller past it; the
    /// progress token in `meta` (the requester's own) goes out as one unique to this
    /// connection, and comes back as the requester's.
    fn register(
        &self,
        id: RequestId,
        meta: &mut rmcp::model::RequestMetaObject,
        awaited: Awaited,
        direct: Option<tokio::sync::oneshot::Sender<DirectAnswer>>,
    ) {
        let own = meta.get_progress_token();
        if let Some(wire) = self.register_token(id, own, awaited, direct) {
            meta.set_progress_token(wire);
        }
    }

    /// [`Shared::register`] for a requester's own progress token, not yet in any `_meta`:
    /// returns the token to send in its place.
    fn register_token(
        &self,
        id: RequestId,
        own: Option<ProgressToken>,
        awaited: Awaited,
        direct: Option<tokio::sync::oneshot::Sender<DirectAnswer>>,
    ) -> Option<ProgressToken> {
        let tokens = own.map(|own| {
            let wire = wire_token(self.salt, &own.0);
            (own, ProgressToken(NumberOrString::String(wire.into())))
        });
        let wire = tokens.as_ref().map(|(_, wire)| wire.clone());
        self.with(|c| {
            c.outstanding
                .insert(id.clone(), Pending { awaited, direct });
            if let Some((own, wire)) = tokens {
                c.progress.insert(wire, (own, id));
            }
        });
        wire
    }

    /// Where `msg` goes: to rmcp, but for an answer to no pending request (dropped) and an
    /// answer to a request sent past rmcp (to its sender). An error without an id (the
    /// server could not read ours) goes to rmcp, as JSON-RPC allows.
    fn admits(&self, msg: &mut RxJsonRpcMessage<RoleClient>) -> Admit {
        if let JsonRpcMessage::Notification(n) = msg
            && let ServerNotification::ProgressNotification(p) = &mut n.notification
        {
            let wire = &p.params.progress_token;
            let own = (self.with(|c| c.progress.get(wire).map(|(own, _)| own.clone()))).flatten();
            let Some(own) = own else {
                tracing::debug!(token = %wire.0, "dropped progress for no waiting request");
                return Admit::Drop;
            };
            p.params.progress_token = own;
            return Admit::Rmcp;
        }
        let id = match msg {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let Some(id) = id else {
            return Admit::Rmcp;
        };
        match self.take_outstanding(id) {
            None => {
                tracing::debug!(%id, "dropped a response to no pending request");
                Admit::Drop
            }
            Some(Pending {
                direct: Some(sender),
                ..
            }) => Admit::Direct(sender),
            Some(_) => Admit::Rmcp,
        }
    }

    /// Which kinds of answer are awaited at all (a few requests at most are outstanding).
    fn expecting(&self) -> Expecting {
        let kinds = |c: &mut Correlation| {
            let mut kinds = Expecting::default();
            for pending in c.outstanding.values() {
                kinds.calls |= pending.awaited == Awaited::Call;
                kinds.listings |= pending.awaited == Awaited::Listing;
            }
            kinds
        };
        self.with(kinds).unwrap_or_default()
    }

    /// What the request `id` still waiting for its answer is ([`Awaited::Other`] when none is).
    fn awaited(&self, id: &RequestId) -> Awaited {
        (self.with(|c| c.outstanding.get(id).map(|p| p.awaited)))
            .flatten()
            .unwrap_or(Awaited::Other)
    }

    /// The request an answer to `id` was awaited for, if one was; it is not any more.
    fn take_outstanding(&self, id: &RequestId) -> Option<Pending> {
        self.with(|c| c.settle(id)).flatten()
    }

    /// Fails the pending request `id` with `reason`: told directly when it was sent past
    /// rmcp, else as the error message returned here for rmcp to route to it.
    fn fail(
        &self,
        id: RequestId,
        pending: Pending,
        reason: String,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        match pending.direct {
            Some(sender) => {
                // The caller may have stopped waiting; then nobody wants it.
                let _ = sender.send(DirectAnswer::Refused(reason));
                None
            }
            None => Some(self.reject(id, reason)),
        }
    }

    /// Fails the request `id` with `reason`, as an error message rmcp routes to it.
    fn reject(&self, id: RequestId, reason: String) -> RxJsonRpcMessage<RoleClient> {
        self.with(|c| c.rejected.insert(id.clone(), reason.clone()));
        JsonRpcMessage::Error(JsonRpcError::new(
            Some(id),
            ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("invalid response: {reason}"),
                None,
            ),
        ))
    }
}

/// The decoder's verdicts on one connection, readable after rmcp took the wire.
#[derive(Clone, Debug)]
pub struct Verdicts(Arc<Shared>);

impl Verdicts {
    /// Why the decoder refused the answer to `id`, if it did.
    pub fn rejection(&self, id: &RequestId) -> Option<String> {
        self.0.with(|c| c.rejected.remove(id)).flatten()
    }

    /// Why the stream is out of step and the server must be stopped, if it is.
    pub fn fault(&self) -> Option<String> {
        self.0.fault.get().cloned()
    }

    /// Whether any answer was refused so far (the reason stays for [`Verdicts::take_any`]).
    pub(crate) fn refused_any(&self) -> bool {
        self.0.with(|c| !c.rejected.is_empty()).unwrap_or(false)
    }

    /// The reason of some refused answer, if there was one.
    pub(crate) fn take_any(&self) -> Option<String> {
        self.0
            .with(|c| {
                let id = c.rejected.keys().next().cloned()?;
                c.rejected.remove(&id)
            })
            .flatten()
    }

    /// Nothing sent so far is awaited any more (before a second handshake on the same
    /// connection, whose ids start again where the first one's did).
    pub(crate) fn forget_pending(&self) {
        self.0.with(|c| c.outstanding.clear());
    }
}

/// The read half: the lines read so far (kept across cancelled reads, since rmcp polls
/// `receive` inside `select!`) and messages made up here waiting to be delivered.
struct Reader<R> {
    read: R,
    lines: LineBuffer,
    queue: VecDeque<RxJsonRpcMessage<RoleClient>>,
    ended: bool,
}

/// A stdio connection to one server as an rmcp transport. Clones share the connection.
pub struct Wire<R, W> {
    reader: Arc<tokio::sync::Mutex<Reader<R>>>,
    writer: Arc<tokio::sync::Mutex<Option<W>>>,
    shared: Arc<Shared>,
}

impl<R, W> Clone for Wire<R, W> {
    fn clone(&self) -> Self {
        Self {
            reader: self.reader.clone(),
            writer: self.writer.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<R, W> Wire<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A wire over a server's stdout (`read`) and stdin (`write`), taking lines of at most
    /// `cap` bytes.
    pub fn new(read: R, write: W, cap: usize) -> Self {
        Self {
            reader: Arc::new(tokio::sync::Mutex::new(Reader {
                read,
                lines: LineBuffer::new(cap),
                queue: VecDeque::new(),
                ended: false,
            })),
            writer: Arc::new(tokio::sync::Mutex::new(Some(write))),
            shared: Arc::default(),
        }
    }

    /// What the session keeps of the wire once rmcp owns it.
    pub fn verdicts(&self) -> Verdicts {
        Verdicts(self.shared.clone())
    }

    /// Sends a `tools/call` past rmcp's service loop: the answer comes back on the receiver
    /// straight from the reader, with no task between (rmcp's loop would take the request
    /// over a channel, spawn a task to write it and route the answer through a map of its
    /// own), and the line is written from the params as they are (rmcp turns them into a
    /// JSON value first, to merge two places `_meta` can be kept). The id and the progress
    /// token are this wire's own; the rest of `_meta` is as the caller made it. Returns the
    /// id (to cancel it by) and the progress token the server's notifications for it will
    /// carry once translated back, as for rmcp's requests.
    pub(crate) async fn send_direct(
        &self,
        mut request: rmcp::model::CallToolRequest,
    ) -> std::io::Result<(
        RequestId,
        ProgressToken,
        tokio::sync::oneshot::Receiver<DirectAnswer>,
    )> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let number = self.shared.with(|c| {
            c.direct_sent += 1;
            DIRECT_IDS + c.direct_sent
        });
        let number = number.ok_or_else(|| std::io::Error::other("the wire's state is poisoned"))?;
        let (id, own) = (
            RequestId::Number(number),
            ProgressToken(NumberOrString::Number(number)),
        );
        // `_meta` as rmcp writes it: the params' own, overwritten by the request's.
        let mut meta = (request
            .extensions
            .remove::<rmcp::model::RequestMetaObject>())
        .unwrap_or_default();
        // Registered before the bytes leave, so the answer can never arrive first; and
        // forgotten again unless the whole line leaves (a caller's deadline can give the
        // write up while the server is not reading).
        let wire =
            self.shared
                .register_token(id.clone(), Some(own.clone()), Awaited::Call, Some(sender));
        let unsent = Unsent {
            shared: &self.shared,
            id: Some(&id),
        };
        if let Some(wire) = wire {
            meta.set_progress_token(wire);
        }
        let params = &mut request.params;
        match &mut params.meta {
            Some(base) => base.0.extend(meta.0),
            None => params.meta = Some(meta),
        }
        let mut bytes = serde_json::to_vec(&CallLine {
            jsonrpc: JsonRpcVersion2_0,
            id: &id,
            method: "tools/call",
            params,
        })?;
        bytes.push(b'\n');
        write_line(&self.writer, &self.shared, &bytes).await?;
        unsent.sent();
        Ok((id, own, receiver))
    }

    /// Writes a reply this side makes up (to a request it cannot serve) on its own task,
    /// so a cancelled `receive` never leaves half a line on the server's stdin.
    fn answer(&self, id: Option<RequestId>, reason: &str) {
        let id = id.map_or(Value::Null, |id| serde_json::json!(id));
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": ErrorCode::INVALID_REQUEST.0, "message": format!("Invalid request: {reason}")},
        });
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        let (writer, shared) = (self.writer.clone(), self.shared.clone());
        tokio::spawn(async move {
            // Best effort: a server that closed its stdin, or does not read it, cannot be
            // told (and past [`MAX_WRITES_WAITING`] this task ends at once).
            let _ = write_line(&writer, &shared, &bytes).await;
        });
    }

    /// The next message for rmcp, or `None` when the connection has ended.
    async fn next(&self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut reader = self.reader.lock().await;
        loop {
            if let Some(msg) = reader.queue.pop_front() {
                return Some(msg);
            }
            if reader.ended {
                return None;
            }
            let Reader { read, lines, .. } = &mut *reader;
            match lines.next_line(read).await {
                LineRead::Line => {}
                LineRead::Eof => {
                    reader.ended = true;
                    continue;
                }
                LineRead::Overlong => {
                    let reason = format!(
                        "the server sent a message longer than {} bytes",
                        reader.lines.cap()
                    );
                    tracing::warn!(%reason, "stopping a desynchronised stdio stream");
                    let _ = self.shared.fault.set(reason.clone());
                    let pending: Vec<(RequestId, Pending)> = self
                        .shared
                        .with(|c| c.outstanding.drain().collect())
                        .unwrap_or_default();
                    for (id, pending) in pending {
                        let for_rmcp = self.shared.fail(id, pending, reason.clone());
                        reader.queue.extend(for_rmcp);
                    }
                    reader.ended = true;
                    continue;
                }
            }
            let expecting = self.shared.expecting();
            let decoded = decode(reader.lines.line(), expecting, |id| self.shared.awaited(id));
            reader.lines.consume();
            match decoded {
                Decoded::Message(mut msg) => match self.shared.admits(&mut msg) {
                    Admit::Rmcp => return Some(*msg),
                    Admit::Direct(sender) => {
                        // The caller may have stopped waiting; then nobody wants it.
                        let _ = sender.send(direct_answer(*msg));
                    }
                    Admit::Drop => {}
                },
                Decoded::BadResponse { id, reason } => match self.shared.take_outstanding(&id) {
                    Some(pending) => {
                        tracing::debug!(%id, %reason, "refused a response");
                        if let Some(msg) = self.shared.fail(id, pending, reason) {
                            return Some(msg);
                        }
                    }
                    None => {
                        tracing::debug!(%id, %reason, "dropped a broken response to no pending request");
                    }
                },
                Decoded::BadRequest { id, reason } => {
                    tracing::debug!(%reason, "refused a request from the server");
                    self.answer(id, &reason);
                }
                Decoded::Ignored(reason) => {
                    tracing::debug!(%reason, "ignored a line from the server");
                }
            }
        }
    }
}

impl<R, W> Transport<RoleClient> for Wire<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Registered before the bytes leave, so the answer can never arrive first.
        self.shared.note_sent(&mut item);
        let (writer, shared) = (self.writer.clone(), self.shared.clone());
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            write_line(&writer, &shared, &bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.next().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping stdin is how a stdio server is told to stop.
        if let Some(mut w) = self.writer.lock().await.take() {
            let _ = w.shutdown().await;
        }
        Ok(())
    }
}

/// Writes one whole line (with its newline) to the server's stdin, unless it was closed or
/// [`MAX_WRITES_WAITING`] writes are waiting already (`WouldBlock`). Given up on (its future
/// dropped, as a caller's deadline does) after part of the line went out, the stream is out
/// of step: stdin is closed and the fault recorded, so that the server never reads a later
/// line as the rest of this one, and the connection is ended as after an over-long line.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<Option<W>>,
    shared: &Shared,
    line: &[u8],
) -> std::io::Result<()> {
    let Some(_waiting) = Waiting::enter(&shared.writes) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            format!(
                "the server is not reading its input ({MAX_WRITES_WAITING} messages are \
                 waiting to be written)"
            ),
        ));
    };
    let mut half = HalfLine {
        slot: writer.lock().await,
        shared,
        partial: false,
    };
    let Some(w) = half.slot.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "stdin is closed",
        ));
    };
    let mut rest = line;
    while !rest.is_empty() {
        match w.write(rest).await {
            Ok(0) => {
                half.partial = false;
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            Ok(n) => {
                rest = rest.get(n..).unwrap_or_default();
                half.partial = !rest.is_empty();
            }
            // The pipe is gone (the server exited): nothing is out of step.
            Err(e) => {
                half.partial = false;
                return Err(e);
            }
        }
    }
    w.flush().await
}

/// A place among the writes waiting for one stdin, given back when dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Option<Self> {
        if count.fetch_add(1, Ordering::Relaxed) >= MAX_WRITES_WAITING {
            count.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(Self(count))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Stdin held for one line; dropped with part of the line written, it closes stdin and
/// records why (see [`write_line`]).
struct HalfLine<'a, W> {
    slot: tokio::sync::MutexGuard<'a, Option<W>>,
    shared: &'a Shared,
    partial: bool,
}

impl<W> Drop for HalfLine<'_, W> {
    fn drop(&mut self) {
        if self.partial {
            self.slot.take();
            let _ = self.shared.fault.set(HALF_WRITTEN.into());
        }
    }
}

/// A request registered as awaited before its line was written: forgotten again when
/// dropped before [`Unsent::sent`] (the write failed or was given up on).
struct Unsent<'a> {
    shared: &'a Shared,
    id: Option<&'a RequestId>,
}

impl Unsent<'_> {
    fn sent(mut self) {
        self.id = None;
    }
}

impl Drop for Unsent<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.shared.with(|c| c.settle(id));
        }
    }
}

/// The progress token a requester's `own` goes out as on a connection salted `salt`:
/// `{salt:016x}-{own}`, written by hand because `format!` was a fifth of registering a call.
fn wire_token(salt: u64, own: &NumberOrString) -> String {
    let mut wire = mcp_host_core::hex::lower(&salt.to_be_bytes());
    wire.push('-');
    match own {
        NumberOrString::String(s) => wire.push_str(s),
        NumberOrString::Number(n) => {
            if *n < 0 {
                wire.push('-');
            }
            let mut digits = [0u8; 20];
            let mut at = digits.len();
            let mut rest = n.unsigned_abs();
            loop {
                at -= 1;
                // A digit: `rest % 10` is below 10.
                digits[at] = b'0' + (rest % 10) as u8;
                rest /= 10;
                if rest == 0 {
                    break;
                }
            }
            wire.extend(digits[at..].iter().map(|&d| char::from(d)));
        }
    }
    wire
}

/// A `tools/call` request line as [`Wire::send_direct`] writes it.
#[derive(serde::Serialize)]
struct CallLine<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: &'a RequestId,
    method: &'static str,
    params: &'a rmcp::model::CallToolRequestParams,
}

/// An answer read for a request sent past rmcp, as that request's caller takes it.
fn direct_answer(msg: RxJsonRpcMessage<RoleClient>) -> DirectAnswer {
    match msg {
        JsonRpcMessage::Response(r) => DirectAnswer::Result(r.result),
        JsonRpcMessage::Error(e) => DirectAnswer::Error(e.error),
        // Only answers carry the id a request was sent with.
        JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {
            DirectAnswer::Refused("the answer is not a response".into())
        }
    }
}

/// Any other transport (Streamable HTTP) with the same id correlation as the stdio wire:
/// an answer is delivered only for an id this side sent and has not seen answered.
pub struct Correlated<T> {
    inner: T,
    shared: Arc<Shared>,
}

impl<T> Correlated<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            shared: Arc::default(),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Correlated<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.shared.note_sent(&mut item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let mut msg = self.inner.receive().await?;
            // Nothing is sent past rmcp on this transport, so nothing is answered that way.
            if let Admit::Rmcp = self.shared.admits(&mut msg) {
                return Some(msg);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests;
