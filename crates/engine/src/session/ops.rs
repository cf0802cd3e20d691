//! The session's operations other than turns: `@server:uri` mentions and server prompts
//! made into a message, servers' questions put to the person and their answers sent back, a
//! person's direct call through the gate, and switching the model or the conversation.

use super::{DirectFuture, ModelChoice, Session};
use crate::events::Observer;
use crate::host::{ElicitationAsk, ElicitationKind, ElicitationReply};
use crate::person::{DirectCall, DirectOutcome};
use crate::{Conversation, DEFAULT_RESULT_CHARS, cap};
use mcp_host_core::ServerId;
use mcp_host_core::event::{ElicitationAnswer, ElicitationRequest, Event, Replayed};
use mcp_host_core::sanitize::strip_terminal_escapes;
use mcp_host_models::Message;
use mcp_host_policy::Answers;
use mcp_host_store::ConversationId;
use serde_json::Value;
use std::sync::Arc;

impl Session {
    /// Attaches the resources named by `@server:uri` mentions to the message, marked as
    /// that server's content. A mention that cannot be read is left as typed, with a notice.
    pub(super) async fn attach_mentions(&self, text: String) -> String {
        let servers = &self.shared.connected.servers;
        let mut attachments = Vec::new();
        for word in text.split_whitespace() {
            let Some((server, uri)) = word.strip_prefix('@').and_then(|w| w.split_once(':')) else {
                continue;
            };
            let id = ServerId::new(server);
            if servers.status(&id).is_none() || uri.is_empty() {
                continue;
            }
            match servers.read_resource(&id, uri).await {
                Ok(contents) => {
                    for c in contents {
                        let body = cap(&strip_terminal_escapes(&c.text), DEFAULT_RESULT_CHARS);
                        attachments.push(format!(
                            "<resource server=\"{server}\" uri=\"{}\">\n{body}\n</resource>",
                            c.uri
                        ));
                    }
                }
                Err(e) => self.notice(format!("@{server}:{uri} could not be read: {e}")),
            }
        }
        if attachments.is_empty() {
            return text;
        }
        format!(
            "{text}\n\n[Attached by the user; the contents are the servers' text:]\n{}",
            attachments.join("\n")
        )
    }

    /// A server's prompt with its arguments (`name=value`, or a lone argument without its
    /// name), as one message.
    pub(super) async fn prompt(
        &self,
        server: &str,
        prompt: &str,
        args: &str,
    ) -> Result<String, String> {
        let servers = &self.shared.connected.servers;
        let command = format!("{server}:{prompt}");
        let id = ServerId::new(server);
        let declared: Vec<String> = (servers.offers(&id))
            .and_then(|o| {
                o.prompts
                    .items
                    .iter()
                    .find(|p| p.name == prompt)
                    .map(|p| p.arguments.iter().map(|a| a.name.clone()).collect())
            })
            .ok_or_else(|| format!("server `{server}` has no prompt `{prompt}` (see /help)"))?;
        let mut arguments = serde_json::Map::new();
        let mut loose = Vec::new();
        for word in args.split_whitespace() {
            match word.split_once('=') {
                Some((k, v)) if declared.iter().any(|d| d == k) => {
                    arguments.insert(k.to_string(), Value::String(v.to_string()));
                }
                _ => loose.push(word),
            }
        }
        if !loose.is_empty() {
            match declared.iter().find(|d| !arguments.contains_key(*d)) {
                Some(name) if declared.len() - arguments.len() == 1 => {
                    arguments.insert(name.clone(), Value::String(loose.join(" ")));
                }
                _ => {
                    return Err(format!(
                        "/{command}: give arguments as name=value ({})",
                        declared.join(", ")
                    ));
                }
            }
        }
        let messages = servers
            .get_prompt(&id, prompt, arguments)
            .await
            .map_err(|e| format!("/{command}: {e}"))?;
        let text: Vec<String> = messages
            .iter()
            .map(|m| strip_terminal_escapes(&m.text))
            .collect();
        Ok(text.join("\n\n"))
    }

    /// Puts a server's question (form or URL) to the person; the reply waits for them.
    pub(super) fn question(&mut self, ask: ElicitationAsk) {
        self.asked += 1;
        let id = format!("ask-{}", self.asked);
        let server = ask.server.to_string();
        let (request, url) = match ask.kind {
            ElicitationKind::Form { message, schema } => (
                ElicitationRequest::Form {
                    id: id.clone(),
                    server,
                    message,
                    schema,
                },
                None,
            ),
            ElicitationKind::Url { message, url } => (
                ElicitationRequest::Url {
                    id: id.clone(),
                    server,
                    message,
                    url: url.clone(),
                },
                Some(url),
            ),
        };
        self.asks.put(id, (ask.reply, url));
        self.emit(Event::ElicitationRequested(request));
    }

    pub(super) fn answer_question(&mut self, id: &str, answer: ElicitationAnswer) {
        let Some((reply, url)) = self.asks.take(id) else {
            return;
        };
        if reply.is_closed() {
            self.notice("the server no longer waits for that answer (its request ended)");
            return;
        }
        let reply_with = match answer {
            ElicitationAnswer::Accept(content) => ElicitationReply::Accept(content),
            ElicitationAnswer::Decline => ElicitationReply::Decline,
            ElicitationAnswer::Cancel => ElicitationReply::Cancel,
            // The person agreed to open it: the browser takes it from here (the server
            // learns the outcome out of band), and the request is accepted.
            ElicitationAnswer::OpenUrl => {
                let url = url.unwrap_or_default();
                self.notice(open_url(&url, &self.settings.env));
                ElicitationReply::Accept(serde_json::json!({}))
            }
        };
        let _ = reply.send(reply_with);
    }

    /// `/call SERVER TOOL {json}`: the person's call, through the gate, beside any turn;
    /// its card ends when it does. `None` when it could not start (said in a notice).
    pub(super) async fn direct_call(
        &mut self,
        server: &str,
        tool: &str,
        args: Value,
    ) -> Option<DirectFuture> {
        let shared = self.shared.clone();
        let catalogue = match shared.tools.current(&shared.connected.servers).await {
            Ok(c) => c,
            Err(e) => {
                self.notice(format!("cannot list tools: {e}"));
                return None;
            }
        };
        if catalogue.find(&ServerId::new(server), tool).is_none() {
            self.notice(format!(
                "server `{server}` has no tool `{tool}` (or is not ready)"
            ));
            return None;
        }
        self.direct_calls += 1;
        let call_id = format!("direct-{}", self.direct_calls);
        let remembered = self.shared.store.remembered().await.unwrap_or_default();
        let observer = self.observer.clone();
        let cancel = self.ending.child_token();
        let (server, tool) = (ServerId::new(server), tool.to_string());
        Some(super::beside(async move {
            let Some(entry) = catalogue.find(&server, &tool) else {
                return;
            };
            let call = DirectCall {
                catalogue: &catalogue,
                entry,
                call_id,
                args,
                remembered: &remembered,
                observer: &*observer,
            };
            match shared.connected.gate.direct(call, cancel).await {
                DirectOutcome::Invalid(why) => observer.event(crate::events::notice(why)),
                DirectOutcome::Denied(d) => {
                    observer.event(crate::events::notice(format!("denied: {}", d.reason)));
                }
                DirectOutcome::Done { objections, .. } => {
                    for objection in objections {
                        observer.event(crate::events::notice(format!(
                            "a PostToolUse hook objected to {}: {objection}",
                            entry.name
                        )));
                    }
                }
                // The card already ended with the failure.
                DirectOutcome::Failed(_) => {}
            }
        }))
    }

    /// `/model`, `/model PROVIDER:MODEL` or `/model PROVIDER:MODEL --base-url URL`.
    pub(super) fn set_model(&mut self, line: &str) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (spec, base_url) = match words.as_slice() {
            [] => ("", None),
            [spec] => (*spec, None),
            [spec, "--base-url", url] => (*spec, Some(*url)),
            _ => {
                self.notice("usage: /model PROVIDER:MODEL [--base-url URL]".to_string());
                return;
            }
        };
        if spec.is_empty() {
            let text = match &self.model {
                Some(m) => format!("model: {}", m.spec),
                None => mcp_host_models::NO_MODEL.to_string(),
            };
            self.notice(text);
            return;
        }
        let http = crate::host::model_client();
        let chosen = mcp_host_models::choose(Some(spec), base_url, &self.settings.env, http)
            .map_err(|e| e.to_string());
        match chosen {
            Ok(chosen) => {
                self.model = Some(ModelChoice::from(chosen));
                self.emit(Event::ModelChanged {
                    spec: Some(spec.to_string()),
                });
                self.notice(format!("model: {spec}"));
            }
            Err(e) => self.notice(e),
        }
    }

    async fn answers(&self) -> Answers {
        Answers::with_persisted(self.shared.store.remembered().await.unwrap_or_default())
    }

    pub(super) async fn new_conversation(&mut self) {
        if self.conversation.is_none() {
            return self.notice("a turn is running; cancel it first (Ctrl-C)");
        }
        let model = self
            .model
            .as_ref()
            .map(|m| m.spec.clone())
            .unwrap_or_default();
        let answers = self.answers().await;
        let store = &self.shared.store;
        match Conversation::create(store, &model, &self.settings.workdir, 0, answers).await {
            Ok(conv) => self.replace_conversation(conv).await,
            Err(e) => self.notice(format!("cannot start a conversation: {e}")),
        }
    }

    /// Switches to stored conversation `id`, or to a new one when there is none to resume
    /// (a hosted front end's conversation that has no history yet, or whose history cannot
    /// be read). Either way the current conversation is left: a turn that
    /// follows can never land in it.
    pub(super) async fn open(&mut self, id: Option<&str>) {
        if self.conversation.is_none() {
            return self.notice("a turn is running; cancel it first (Ctrl-C)");
        }
        if let Some(id) = id {
            if let Ok(id) = ConversationId::new(id) {
                let answers = self.answers().await;
                if let Ok(conv) = Conversation::resume(&self.shared.store, &id, 0, answers).await {
                    return self.replace_conversation(conv).await;
                }
            }
            self.notice(format!(
                "conversation {id} has no history here; it goes on from a fresh start"
            ));
        }
        self.new_conversation().await;
    }

    pub(super) async fn resume(&mut self, id: Option<&str>) {
        if self.conversation.is_none() {
            return self.notice("a turn is running; cancel it first (Ctrl-C)");
        }
        let store = self.shared.store.clone();
        let id = match id {
            None => match store.latest_conversation(&self.settings.workdir).await {
                Ok(Some(c)) => c.id,
                Ok(None) => return self.notice("no earlier conversation in this directory"),
                Err(e) => return self.notice(e.to_string()),
            },
            Some(id) => match ConversationId::new(id) {
                Ok(id) => id,
                Err(e) => return self.notice(e.to_string()),
            },
        };
        let answers = self.answers().await;
        match Conversation::resume(&store, &id, 0, answers).await {
            Ok(conv) => {
                self.replace_conversation(conv).await;
                self.notice(format!("resumed conversation {id}"));
            }
            Err(e) => self.notice(format!("cannot resume {id}: {e}")),
        }
    }

    /// Makes `conv` the current conversation and shows its user and assistant messages.
    pub(super) async fn replace_conversation(&mut self, conv: Conversation) {
        self.emit(Event::ConversationStarted {
            id: conv.id().map(ToString::to_string),
            replay: replay(&conv),
        });
        if let Some(old) = self.conversation.replace(conv) {
            old.abandon(&self.shared.connected.gate, &*self.observer)
                .await;
        }
    }
}

/// A conversation's messages as a front end shows them again.
pub fn replay(conv: &Conversation) -> Vec<Replayed> {
    (conv.history.iter())
        .filter_map(|m| match m {
            Message::User { text } => Some(Replayed::User { text: text.clone() }),
            Message::Assistant { text, .. } => Some(Replayed::Assistant { text: text.clone() }),
            _ => None,
        })
        .collect()
}

impl From<mcp_host_models::Chosen> for ModelChoice {
    fn from(c: mcp_host_models::Chosen) -> Self {
        Self {
            provider: Arc::new(c.provider),
            spec: c.spec,
            model: c.model,
            context_window: c.context_window,
        }
    }
}

/// Opens a URL the person agreed to, or says to open it by hand.
fn open_url(url: &str, env: &std::collections::BTreeMap<String, String>) -> String {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return format!("not opened (not an http(s) URL): {url}");
    }
    if crate::browser::open(url, env) {
        format!("opened in your browser: {url}")
    } else {
        format!("open this URL in your browser to continue: {url}")
    }
}
