//! The slash commands the chat loop runs (the screen handles `/mcp`, `/tools`, `/help` and
//! `/quit` itself): `/model provider:model`, `/clear`, `/resume [ID]`, and
//! `/call SERVER TOOL {json}`, which calls a tool directly (the person typing it is the
//! approval, as with `mcp-host call`; deny rules still apply) beside any running turn.

use super::Chat;
use crate::model::choose;
use mcp_host_core::ServerId;
use mcp_host_engine::gate::{CallFacts, Gate, still_current, trusted};
use mcp_host_engine::{Conversation, Observer};
use mcp_host_policy::{Answers, Mode, Verdict};
use mcp_host_store::ConversationId;
use mcp_host_tui::{CallCard, CallState, Update};
use serde_json::Value;
use std::time::Instant;

impl Chat<'_> {
    /// Runs a slash command; returns a message to send to the model when the command makes
    /// one (a server prompt).
    pub(super) async fn slash(&mut self, name: &str, args: &str) -> Option<String> {
        let notice = match name {
            "model" => self.switch_model(args.trim()),
            "clear" => self.new_conversation().await,
            "resume" => self.resume(args.trim()).await,
            "call" => self.direct_call(args).await,
            other if other.contains(':') => match self.prompt(other, args).await {
                Ok(text) => return Some(text),
                Err(why) => Some(why),
            },
            other => Some(format!("unknown command /{other}; /help lists them")),
        };
        if let Some(text) = notice {
            self.app.apply(Update::Notice(text));
        }
        None
    }

    /// `/server:prompt [name=value ...] [text]`: the server's prompt with its arguments,
    /// as one message. A lone argument can be given without its name.
    async fn prompt(&mut self, command: &str, args: &str) -> Result<String, String> {
        let Some((server, prompt)) = command.split_once(':') else {
            return Err(format!("/{command}: not a server prompt"));
        };
        let id = ServerId::new(server);
        let declared: Vec<String> = (self.manager.offers(&id))
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
        let messages = self
            .manager
            .get_prompt(&id, prompt, arguments)
            .await
            .map_err(|e| format!("/{command}: {e}"))?;
        let text: Vec<String> = messages
            .iter()
            .map(|m| mcp_host_core::sanitize::strip_terminal_escapes(&m.text))
            .collect();
        Ok(text.join("\n\n"))
    }

    /// Attaches the resources named by `@server:uri` mentions to the message, marked as
    /// that server's content. A mention that cannot be read is left as typed, with a notice.
    pub(super) async fn attach_mentions(&mut self, text: String) -> String {
        let mut attachments = Vec::new();
        for word in text.split_whitespace() {
            let Some((server, uri)) = word.strip_prefix('@').and_then(|w| w.split_once(':')) else {
                continue;
            };
            let id = ServerId::new(server);
            if self.manager.status(&id).is_none() || uri.is_empty() {
                continue;
            }
            match self.manager.read_resource(&id, uri).await {
                Ok(contents) => {
                    for c in contents {
                        let body = mcp_host_engine::cap(
                            &mcp_host_core::sanitize::strip_terminal_escapes(&c.text),
                            mcp_host_engine::DEFAULT_RESULT_CHARS,
                        );
                        attachments.push(format!(
                            "<resource server=\"{server}\" uri=\"{}\">\n{body}\n</resource>",
                            c.uri
                        ));
                    }
                }
                Err(e) => self.app.apply(Update::Notice(format!(
                    "@{server}:{uri} could not be read: {e}"
                ))),
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

    fn switch_model(&mut self, spec: &str) -> Option<String> {
        if spec.is_empty() {
            return Some(match &self.model {
                Some((_, _, spec, _)) => format!("model: {spec}"),
                None => crate::model::NO_MODEL.to_string(),
            });
        }
        let http = match mcp_host_client::http_client(std::time::Duration::from_secs(10)) {
            Ok(h) => h,
            Err(e) => return Some(format!("{e}")),
        };
        match choose(Some(spec), None, &self.host.env, http) {
            Ok(chosen) => {
                self.set_model(chosen);
                Some(format!("model: {spec}"))
            }
            Err(e) => Some(format!("{e}")),
        }
    }

    async fn answers(&self) -> Answers {
        Answers::with_persisted(self.store.remembered().await.unwrap_or_default())
    }

    async fn new_conversation(&mut self) -> Option<String> {
        if self.conversation.is_none() {
            return Some("a turn is running; cancel it first (Ctrl-C)".into());
        }
        let model = self.model.as_ref().map(|m| m.2.clone()).unwrap_or_default();
        let answers = self.answers().await;
        match Conversation::create(&self.store, &model, &super::workdir(), 0, answers).await {
            Ok(conv) => {
                self.conversation = Some(conv);
                self.app.apply(Update::ClearTranscript);
                None
            }
            Err(e) => Some(format!("cannot start a conversation: {e}")),
        }
    }

    async fn resume(&mut self, id: &str) -> Option<String> {
        if self.conversation.is_none() {
            return Some("a turn is running; cancel it first (Ctrl-C)".into());
        }
        let id = if id.is_empty() {
            match self.store.latest_conversation(&super::workdir()).await {
                Ok(Some(c)) => c.id,
                Ok(None) => return Some("no earlier conversation in this directory".into()),
                Err(e) => return Some(format!("{e}")),
            }
        } else {
            match ConversationId::new(id) {
                Ok(id) => id,
                Err(e) => return Some(format!("{e}")),
            }
        };
        let answers = self.answers().await;
        match Conversation::resume(&self.store, &id, 0, answers).await {
            Ok(conv) => {
                self.conversation = Some(conv);
                self.replay_history();
                Some(format!("resumed conversation {id}"))
            }
            Err(e) => Some(format!("cannot resume {id}: {e}")),
        }
    }

    /// `/call SERVER TOOL [JSON]`: validated against the catalogue, decided by policy with the
    /// person as the approval, and run on its own task; its card ends when it does.
    async fn direct_call(&mut self, args: &str) -> Option<String> {
        let mut parts = args.trim().splitn(3, char::is_whitespace);
        let (Some(server), Some(tool)) = (parts.next(), parts.next()) else {
            return Some("usage: /call SERVER TOOL {json arguments}".into());
        };
        let arguments: Value = match parts.next().map(str::trim).filter(|s| !s.is_empty()) {
            None => Value::Object(Default::default()),
            Some(text) => match serde_json::from_str(text) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => return Some("the arguments must be a JSON object".into()),
                Err(e) => return Some(format!("the arguments are not valid JSON: {e}")),
            },
        };
        let catalogue = match self.tools.current(self.manager).await {
            Ok(c) => c,
            Err(e) => return Some(format!("cannot list tools: {e}")),
        };
        let id = ServerId::new(server);
        let Some(entry) = catalogue.find(&id, tool) else {
            return Some(format!(
                "server `{server}` has no tool `{tool}` (or is not ready)"
            ));
        };
        if let Err(refusal) = catalogue.prepare_call(entry, &arguments) {
            return Some(format!("{refusal}"));
        }
        let remembered = self.store.remembered().await.unwrap_or_default();
        let provenance = std::collections::BTreeSet::new();
        let facts = CallFacts {
            trusted: trusted(self.manager, &entry.key.server),
            mode: Mode::Ask,
            provenance: &provenance,
            remembered: &remembered,
        };
        let gate = Gate {
            policy: self.policy,
            hooks: self.hooks,
        };
        let decision = gate.decide(entry, &arguments, facts).await;
        self.audit.decided(entry, &arguments, &decision);
        if decision.verdict == Verdict::Deny {
            return Some(format!("denied: {}", decision.reason));
        }
        if let Err(why) = still_current(self.manager, entry).await {
            return Some(why);
        }
        self.direct_calls += 1;
        let call_id = format!("direct-{}", self.direct_calls);
        self.app.apply(Update::CallStarted(CallCard {
            call_id: call_id.clone(),
            name: entry.name.clone(),
            server: server.to_string(),
            tool: tool.to_string(),
            args: arguments.clone(),
            provenance: Vec::new(),
        }));
        let call = self.manager.detached_call(
            &entry.key.server,
            &entry.key.tool,
            arguments.as_object().cloned(),
            tokio_util::sync::CancellationToken::new(),
            None,
        );
        let results = self.direct.clone();
        let hooks = self.hooks.clone();
        let audit = crate::audit::Audit::new(&self.host.paths.data_dir);
        let entry = entry.clone();
        let started = Instant::now();
        tokio::spawn(async move {
            let outcome = call.await;
            audit.called(
                &entry,
                &arguments,
                outcome.as_ref().map_err(ToString::to_string),
                started.elapsed(),
                false,
            );
            let (state, mut preview) = match &outcome {
                Ok(o) => {
                    let state = if o.is_error {
                        CallState::Failed
                    } else {
                        CallState::Done
                    };
                    (state, mcp_host_engine::preview_text(o))
                }
                Err(e) => (CallState::Failed, e.to_string()),
            };
            if let Ok(o) = &outcome {
                for objection in hooks.post_tool_use(&entry.name, &arguments, o).await {
                    preview.push_str(&format!("\n[a PostToolUse hook objected: {objection}]"));
                }
            }
            let _ = results.send(Update::CallFinished {
                call_id,
                state,
                took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                preview,
            });
        });
        None
    }
}
