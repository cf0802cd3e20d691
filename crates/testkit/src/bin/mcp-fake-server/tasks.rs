//! `research` (with `--fault tasks`): a call the server runs as a task (the 2026-07-28 Tasks
//! extension), followed by the client with `tasks/get`, answered with `tasks/update` and
//! stopped with `tasks/cancel`. Its arguments: `topic`, `polls` (how many `tasks/get` see it
//! working, default 3) and `ask` (it asks for a clarification first).
//!
//! Faults: `task-forever` (always working, with a TTL of 0), `task-fail` (fails on the first
//! poll, or the first after its question is answered), `task-wrong-id` (answers polls about another task), `task-repeat-ask` (keeps
//! asking the question already answered, as a slow server would until it catches up).

use super::{Locked, Server};
use serde_json::{Value, json};

const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

#[derive(Default)]
pub(super) struct FakeTask {
    topic: String,
    polls_left: u64,
    polls: u64,
    ask: bool,
    clarified: Option<String>,
    cancelled: bool,
}

impl Server {
    pub(super) fn research(&mut self, id: Value, params: &Value) {
        let declared = params
            .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/extensions")
            .and_then(|e| e.get(TASKS_EXTENSION))
            .is_some();
        if self.locked != Locked::Modern || !declared {
            return self.error(
                id,
                -32602,
                "research runs only as a task: declare io.modelcontextprotocol/tasks",
                None,
            );
        }
        let args = &params["arguments"];
        self.next_task += 1;
        let task_id = format!("task-{}", self.next_task);
        let task = FakeTask {
            topic: args["topic"].as_str().unwrap_or("nothing").to_string(),
            polls_left: args["polls"].as_u64().unwrap_or(3),
            ask: args["ask"].as_bool().unwrap_or(false),
            ..FakeTask::default()
        };
        self.tasks.insert(task_id.clone(), task);
        let mut answer = self.task_json(&task_id, "working", "queued");
        answer["resultType"] = json!("task");
        self.reply(id, answer)
    }

    fn task_json(&self, task_id: &str, status: &str, message: &str) -> Value {
        let ttl = if self.has("task-forever") { 0 } else { 60_000 };
        json!({"taskId": task_id, "status": status, "statusMessage": message,
            "createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:01Z",
            "ttlMs": ttl, "pollIntervalMs": 20})
    }

    pub(super) fn tasks_method(&mut self, method: &str, id: Value, params: &Value) {
        let task_id = params["taskId"].as_str().unwrap_or_default().to_string();
        let (forever, fail, wrong_id, repeat) = (
            self.has("task-forever"),
            self.has("task-fail"),
            self.has("task-wrong-id"),
            self.has("task-repeat-ask"),
        );
        let Some(task) = self.tasks.get_mut(&task_id) else {
            return self.error(id, -32602, &format!("unknown task {task_id:?}"), None);
        };
        let ack = json!({"resultType": "complete"});
        match method {
            "tasks/cancel" => {
                task.cancelled = true;
                return self.reply(id, ack);
            }
            "tasks/update" => {
                let answer = &params["inputResponses"]["clarify"];
                task.clarified = Some(
                    answer["content"]["interpretation"]
                        .as_str()
                        .map_or_else(|| format!("no answer: {answer}"), str::to_string),
                );
                return self.reply(id, ack);
            }
            _ => {}
        }
        task.polls += 1;
        let polls = task.polls;
        let (status, message, extra) = if task.cancelled {
            ("cancelled", "cancelled by the client".to_string(), None)
        } else if task.ask && (task.clarified.is_none() || repeat) {
            let schema = json!({"type": "object", "properties": {
                "interpretation": {"type": "string", "title": "Which one?", "default": "technical"}
            }, "required": ["interpretation"]});
            let question = json!({"method": "elicitation/create", "params": {"mode": "form",
                "message": format!("Which {} do you mean?", task.topic), "requestedSchema": schema}});
            let requests = json!({"clarify": question});
            (
                "input_required",
                "needs a clarification".into(),
                Some(("inputRequests", requests)),
            )
        } else if fail {
            let error = json!({"code": -32603, "message": "the research failed"});
            ("failed", "failed".into(), Some(("error", error)))
        } else if forever || task.polls_left > 0 {
            task.polls_left = task.polls_left.saturating_sub(1);
            ("working", format!("stage {polls}"), None)
        } else {
            let text = format!(
                "report on {} ({}) after {polls} polls",
                task.topic,
                task.clarified.as_deref().unwrap_or("as asked")
            );
            let result = json!({"content": [{"type": "text", "text": text}]});
            ("completed", "done".into(), Some(("result", result)))
        };
        if repeat && task.clarified.is_some() && polls > 3 {
            // A server that caught up with the answer at last.
            task.ask = false;
        }
        let shown_id = if wrong_id { "task-other" } else { &task_id };
        let mut answer = self.task_json(shown_id, status, &message);
        answer["resultType"] = json!("complete");
        if let Some((key, value)) = extra {
            answer[key] = value;
        }
        self.reply(id, answer)
    }
}
