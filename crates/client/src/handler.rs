//! What a server may ask of the host, for one session: list-change notifications (which
//! wake the manager's refresh), progress notifications (handed to [`crate::progress`]), and
//! elicitation (put to a person when a front end can ask one, answered from the schema's
//! defaults when config allows, declined otherwise; withdrawn when the server stops waiting).
//! The capabilities declared match exactly what can be answered.

use crate::progress::ProgressRoutes;
use mcp_host_core::ServerId;
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion, UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, RoleClient};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc, oneshot};

/// How long a person has to answer a form before it is cancelled.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// How many of one connection's questions may wait for a person at once; more are declined
/// at once. Each waits up to [`ELICITATION_TIMEOUT`] in a queue the person works through, so
/// a server asking without end (200,000 questions, 27 MB) held a gigabyte and buried the
/// screen in forms.
pub const MAX_QUESTIONS_WAITING: usize = 4;

/// What a server asks a person.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationKind {
    /// A form: `schema` is the restricted `requestedSchema`.
    Form { message: String, schema: Value },
    /// Open a URL (the person decides whether to).
    Url { message: String, url: String },
}

/// How the person answered.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationReply {
    Accept(Value),
    Decline,
    Cancel,
}

/// A question for the person, with its own reply channel.
#[derive(Debug)]
pub struct ElicitationAsk {
    pub server: ServerId,
    pub kind: ElicitationKind,
    pub reply: oneshot::Sender<ElicitationReply>,
}

/// What the host can do for a server beyond tools, decided per server by config and by
/// whether a person is there.
#[derive(Clone, Debug, Default)]
pub struct ClientFeatures {
    /// Headless elicitation: declare form elicitation and answer with the schema's defaults.
    pub elicitation_defaults: bool,
    /// A front end that can ask a person: forms and URLs go there.
    pub ask_person: Option<(ServerId, mpsc::UnboundedSender<ElicitationAsk>)>,
}

/// Receives server→host callbacks for one server.
#[derive(Clone)]
pub struct HostHandler {
    pub(crate) info: ClientConfig,
    pub(crate) tools_changed: Arc<crate::changes::ListChanges>,
    pub(crate) offers_changed: Arc<Notify>,
    pub(crate) features: ClientFeatures,
    pub(crate) progress: ProgressRoutes,
    /// Places for this connection's questions waiting for a person.
    pub(crate) questions: Arc<tokio::sync::Semaphore>,
}

/// The answer to a form when nobody can be asked: accept with every property's default, or
/// decline (with the reason, for the log) when a required property has none.
pub fn defaults_answer(schema: &Value) -> Result<Value, String> {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = (schema.get("required").and_then(Value::as_array))
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = serde_json::Map::new();
    for (name, prop) in &props {
        match prop.get("default") {
            Some(d) => {
                content.insert(name.clone(), d.clone());
            }
            None if required.contains(&name.as_str()) => {
                return Err(format!(
                    "required field `{name}` has no default and nobody can answer"
                ));
            }
            None => {}
        }
    }
    Ok(Value::Object(content))
}

fn reply_result(reply: ElicitationReply) -> ElicitResult {
    match reply {
        ElicitationReply::Accept(content) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(content)
        }
        ElicitationReply::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitationReply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

impl HostHandler {
    /// A server's question (a legacy `elicitation/create`, or one round's input request),
    /// put to the person, or answered as the headless policy says.
    pub(crate) async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        let kind = match &request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => ElicitationKind::Form {
                message: message.clone(),
                schema: serde_json::to_value(requested_schema).unwrap_or_default(),
            },
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                ElicitationKind::Url {
                    message: message.clone(),
                    url: url.clone(),
                }
            }
            // A kind of request this host does not know cannot be answered.
            _ => return ElicitResult::new(ElicitationAction::Decline),
        };
        if let Some((server, asks)) = &self.features.ask_person {
            let Ok(_waiting) = self.questions.try_acquire() else {
                tracing::warn!(%server, "declined a question: {MAX_QUESTIONS_WAITING} of this server's are already waiting for a person");
                return ElicitResult::new(ElicitationAction::Decline);
            };
            let (reply, answer) = oneshot::channel();
            let ask = ElicitationAsk {
                server: server.clone(),
                kind: kind.clone(),
                reply,
            };
            if asks.send(ask).is_ok() {
                return match tokio::time::timeout(ELICITATION_TIMEOUT, answer).await {
                    Ok(Ok(reply)) => reply_result(reply),
                    // Nobody answered in time, or the front end went away.
                    _ => ElicitResult::new(ElicitationAction::Cancel),
                };
            }
        }
        match kind {
            ElicitationKind::Form { schema, .. } if self.features.elicitation_defaults => {
                match defaults_answer(&schema) {
                    Ok(content) => reply_result(ElicitationReply::Accept(content)),
                    Err(reason) => {
                        tracing::info!(%reason, "declined an elicitation");
                        ElicitResult::new(ElicitationAction::Decline)
                    }
                }
            }
            _ => {
                tracing::info!(
                    "declined an elicitation: nobody can answer and defaults are not allowed for this server"
                );
                ElicitResult::new(ElicitationAction::Decline)
            }
        }
    }
}

impl ClientHandler for HostHandler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_changed.notify_one();
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.progress.route(&params);
        std::future::ready(())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        // rmcp runs this on a task of its own, which nothing ends: a server that stops
        // waiting (it cancelled this request, or its connection ended, both of which cancel
        // `ct`) would leave its question before the person for ten minutes. Dropping the
        // wait drops the person's reply channel, which the front ends see as withdrawn.
        // Biased: a question cancelled before this task first ran is never shown at all.
        tokio::select! {
            biased;
            () = context.ct.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            result = self.elicit(request) => Ok(result),
        }
    }

    /// Roots are never declared (they are deprecated in 2026-07-28), so a server that asks
    /// anyway is told the method does not exist rather than handed an empty list.
    #[allow(deprecated)] // The trait method exists until rmcp removes roots; we refuse it.
    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        Err(rmcp::ErrorData::method_not_found::<
            rmcp::model::ListRootsRequestMethod,
        >())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.offers_changed.notify_one();
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.offers_changed.notify_one();
        std::future::ready(())
    }
}

/// What the host declares. `modern`: for a 2026-07-28 session, which also declares the
/// Tasks extension (the session follows a call's task to its end); a handshake-era server
/// is offered nothing it might not know.
pub(crate) fn client_config(
    version: ProtocolVersion,
    modern: bool,
    features: &ClientFeatures,
) -> ClientConfig {
    // Capabilities bind us to implement them: no roots or sampling; forms where a person or
    // the defaults can answer them, URLs only where a person can.
    let mut caps = ClientCapabilities::default();
    if modern {
        let mut extensions = rmcp::model::ExtensionCapabilities::new();
        extensions.insert(
            rmcp::model::TASKS_EXTENSION_ID.to_string(),
            rmcp::model::JsonObject::new(),
        );
        caps.extensions = Some(extensions);
    }
    if features.ask_person.is_some() {
        caps.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::default())
                .with_url(UrlElicitationCapability::default()),
        );
    } else if features.elicitation_defaults {
        caps.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
    }
    ClientConfig::new(
        caps,
        Implementation::new("mcp-host", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headless_forms_are_answered_with_defaults_or_declined() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "anon"},
            "count": {"type": "integer", "default": 3},
            "note": {"type": "string"}
        }, "required": ["name"]});
        assert_eq!(
            defaults_answer(&schema).unwrap(),
            json!({"name": "anon", "count": 3})
        );
        let needs_input = json!({"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]});
        assert!(
            defaults_answer(&needs_input)
                .unwrap_err()
                .contains("`token`")
        );
    }
}
