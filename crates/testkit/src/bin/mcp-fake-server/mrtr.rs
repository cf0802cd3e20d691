//! `ask` in 2026-07-28 (SEP-2322), where servers send no requests: its questions come back
//! as `input_required` rounds.

use super::Server;
use serde_json::{Value, json};

impl Server {
    /// `ask` in 2026-07-28 (SEP-2322): round one asks for a name, round two (its state
    /// carries the name) for a confirmation, and the third request is answered with both.
    /// An answer that is not `accept` ends the call with what came back. `mrtr-forever`
    /// asks again every time; `mrtr-many` asks a thousand questions in one round;
    /// `mrtr-sampling` asks for sampling, which the client never declared.
    pub(super) fn ask_in_rounds(&self, id: Value, params: &Value) {
        let form = |message: &str, schema: Value| json!({"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}});
        let ask = |key: &str, request: Value, state: Option<String>| {
            let mut result =
                json!({"resultType": "input_required", "inputRequests": {key: request}});
            if let Some(state) = state {
                result["requestState"] = json!(state);
            }
            self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        };
        if self.has("mrtr-sampling") {
            let sampling = json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}});
            return ask("llm", sampling, None);
        }
        let name_form = || {
            let schema = json!({"type": "object", "properties": {
                "name": {"type": "string", "title": "Your name", "minLength": 1, "default": "Ada"}
            }, "required": ["name"]});
            form("Who is asking?", schema)
        };
        if self.has("mrtr-many") {
            let requests: serde_json::Map<String, Value> =
                (0..1000).map(|n| (format!("q{n}"), name_form())).collect();
            let result = json!({"resultType": "input_required", "inputRequests": requests});
            return self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        }
        if self.has("mrtr-forever") {
            return ask("name", name_form(), Some("again".into()));
        }
        let responses = &params["inputResponses"];
        let state = params["requestState"].as_str();
        let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
        match state {
            None => ask("name", name_form(), Some("round-1".into())),
            Some("round-1") => {
                let answer = &responses["name"];
                let Some(name) = answer["content"]["name"].as_str() else {
                    return self.reply(id, text(format!("no name: {answer}")));
                };
                let schema = json!({"type": "object", "properties": {
                    "sure": {"type": "boolean", "title": "Sure?", "default": true}
                }});
                ask(
                    "sure",
                    form(&format!("Really {name}?"), schema),
                    Some(format!("round-2:{name}")),
                );
            }
            Some(s) if s.starts_with("round-2:") => {
                let sure = &responses["sure"];
                let name = &s["round-2:".len()..];
                let confirmed = sure["content"]["sure"].as_bool().unwrap_or(false);
                let action = sure["action"].as_str().unwrap_or("none");
                self.reply(
                    id,
                    text(format!("name={name} sure={confirmed} ({action}, 2 rounds)")),
                );
            }
            Some(other) => self.error(id, -32602, &format!("unknown requestState {other}"), None),
        }
    }
}
