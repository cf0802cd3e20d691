//! What the engine needs of the connected servers, as two traits: [`Connections`] to read
//! them (states, lists, instructions, configured facts) and [`Caller`] to send a tool call.
//! The host implements them with the connection manager (`host::Servers`) and its one
//! `ToolCaller`; a test implements them in memory, so the agent loop, the gate and the
//! session can be tested without starting a process.

use crate::host::Servers;
use mcp_host_client::listing::Offers;
use mcp_host_client::{CallError, Expect, ProgressSink, ToolCaller, ToolList};
use mcp_host_core::{CallOutcome, ServerFacts, ServerId, ServerStatus};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Reading the connected servers.
pub trait Connections: Sync {
    /// Every configured server, started or not, in a stable order.
    fn ids(&self) -> Vec<ServerId>;
    fn status(&self, id: &ServerId) -> Option<ServerStatus>;
    /// A server's state (its label) and list revision: whether a catalogue is still
    /// current. The same as read from [`Connections::status`], without copying the rest.
    fn state_and_revision(&self, id: &ServerId) -> Option<(&'static str, u64)> {
        self.status(id).map(|s| (s.state.label(), s.revision))
    }
    /// A count that moves (after the change) whenever any server's state or revision
    /// changes; `None` when not counted, and every server must be read instead.
    fn changes(&self) -> Option<u64> {
        None
    }
    fn tools(&self, id: &ServerId) -> Option<Arc<ToolList>>;
    fn offers(&self, id: &ServerId) -> Option<Arc<Offers>>;
    /// The instructions a ready server sent at initialisation.
    fn instructions(&self, id: &ServerId) -> Option<String>;
    /// The configured facts of a started server (trust, overlap, result caps).
    fn facts(&self, id: &ServerId) -> Option<Arc<ServerFacts>>;
}

/// A call on its way to a server: a future that borrows nothing.
pub type Sent = Pin<Box<dyn Future<Output = Result<CallOutcome, CallError>> + Send>>;

/// Sending a tool call. Only the gate holds one.
pub trait Caller: Send + Sync {
    fn send(
        &self,
        server: &ServerId,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        expect: Option<Expect>,
        cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Sent;
}

impl Connections for Servers {
    fn ids(&self) -> Vec<ServerId> {
        self.manager().ids().cloned().collect()
    }

    fn status(&self, id: &ServerId) -> Option<ServerStatus> {
        self.manager().status(id)
    }

    fn state_and_revision(&self, id: &ServerId) -> Option<(&'static str, u64)> {
        self.manager().state_and_revision(id)
    }

    fn changes(&self) -> Option<u64> {
        Some(self.manager().changes())
    }

    fn tools(&self, id: &ServerId) -> Option<Arc<ToolList>> {
        self.manager().tools(id)
    }

    fn offers(&self, id: &ServerId) -> Option<Arc<Offers>> {
        self.manager().offers(id)
    }

    fn instructions(&self, id: &ServerId) -> Option<String> {
        self.manager().instructions(id)
    }

    fn facts(&self, id: &ServerId) -> Option<Arc<ServerFacts>> {
        Servers::facts(self, id).cloned()
    }
}

impl Caller for ToolCaller {
    fn send(
        &self,
        server: &ServerId,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        expect: Option<Expect>,
        cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Sent {
        Box::pin(self.detached_call(server, tool, arguments, expect, cancel, progress))
    }
}
