//! Calls a server runs as a task (the 2026-07-28 Tasks extension, SEP-2663, which this host
//! declares). A `tools/call` answered with `resultType: "task"` is followed to its end here,
//! so to everything above the session a task is a call that takes a while: the gate's one
//! approval covers it, its status messages arrive as the call's progress, the engine moves
//! it to the background like any long call, and cancelling the call cancels the task.
//!
//! Following a task: `tasks/get` at the server's `pollIntervalMs` (held within
//! [`MIN_POLL`]..[`MAX_POLL`]), each request under the server's tool timeout; the questions
//! of an `input_required` status go to the person (or the headless policy) through the
//! same handler as every other elicitation and are answered with `tasks/update`, counted
//! against [`MAX_INPUT_ROUNDS`] with the call's own rounds; `completed` gives the tool's
//! result, `failed` the server's error. The task ends, for the host, when the server says
//! so, when the call is cancelled (the server is sent `tasks/cancel`), or at its deadline:
//! the task's latest `ttlMs` from its start (after which the server may forget it), never
//! less than the tool timeout and never more than [`MAX_TASK_TIME`]. Progress comes only as
//! the task's `statusMessage`: the extension sends no `notifications/progress` for tasks.
//!
//! Hostile input: a status for another task id is refused; a question already answered is
//! not asked again while the server catches up with the answer; a server that keeps a
//! task working forever meets the deadline.

use super::*;
use mcp_host_core::event::InputRound;
use rmcp::model::{
    CancelTaskParams, CancelTaskRequest, CreateTaskResult, DetailedTask, GetTaskParams,
    GetTaskRequest, GetTaskResult, TaskPayload, UpdateTaskParams, UpdateTaskRequest,
};
use std::collections::BTreeSet;
use tokio::time::Instant;

/// The quickest the host polls a task, whatever the server suggests.
pub const MIN_POLL: Duration = Duration::from_millis(100);
/// The slowest: a task's progress stays visible.
pub const MAX_POLL: Duration = Duration::from_secs(30);
/// Between polls when the server suggests nothing.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// The longest the host follows one task.
pub const MAX_TASK_TIME: Duration = Duration::from_secs(60 * 60);

impl Session {
    /// Follows the task a `tools/call` was answered with to its end: the tool's result.
    /// `rounds` holds the rounds the call itself already took (they share the cap), and
    /// gets the task's as they are answered.
    pub(crate) async fn follow_task(
        &self,
        created: CreateTaskResult,
        rounds: &mut Vec<InputRound>,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Result<Value, RequestError> {
        let task_id = created.task.task_id.clone();
        let started = Instant::now();
        let mut status = DetailedTask::new(created.task, TaskPayload::Working);
        let mut answered: BTreeSet<String> = BTreeSet::new();
        let mut polls = 0u32;
        let mut last_message = None;
        loop {
            let message = status_line(&status);
            if last_message.as_ref() != Some(&message) {
                if let Some(sink) = &progress {
                    sink.send(crate::progress::Progress {
                        progress: f64::from(polls),
                        total: None,
                        message: Some(message.clone()),
                    });
                }
                last_message = Some(message);
            }
            match &status.payload {
                TaskPayload::Completed { result } => return Ok(Value::Object(result.clone())),
                TaskPayload::Failed { error } => return Err(task_error(error)),
                TaskPayload::Cancelled => {
                    return Err(RequestError::Protocol(format!(
                        "the server cancelled task {task_id}{}",
                        status
                            .task
                            .status_message
                            .as_ref()
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    )));
                }
                TaskPayload::InputRequired { input_requests } => {
                    let asked = self.answer_task_questions(
                        &task_id,
                        input_requests,
                        &mut answered,
                        rounds,
                        timeout,
                        cancel,
                    );
                    if let Some(next) = asked.await? {
                        status = next;
                        polls += 1;
                        continue;
                    }
                }
                TaskPayload::Working => {}
                // Non-exhaustive upstream: a status this host does not know is waited out.
                _ => {}
            }
            // Both may change with every status: the latest ones hold.
            let pause = poll_interval(status.task.poll_interval_ms);
            let deadline = started + task_deadline(status.task.ttl_ms, timeout);
            let now = Instant::now();
            if now >= deadline {
                self.cancel_task(&task_id).await;
                return Err(RequestError::Timeout(task_deadline(
                    status.task.ttl_ms,
                    timeout,
                )));
            }
            tokio::select! {
                () = tokio::time::sleep(pause.min(deadline - now)) => {}
                () = cancel.cancelled() => {
                    return Err(self.abandon(&task_id, RequestError::Cancelled).await);
                }
                () = self.closed.cancelled() => return Err(RequestError::Closed),
            }
            if Instant::now() >= deadline {
                // Once more round the loop, which gives up on it.
                continue;
            }
            status = match self.get_task(&task_id, timeout, cancel).await {
                Ok(next) => next,
                Err(e) => return Err(self.abandon(&task_id, e).await),
            };
            polls += 1;
        }
    }

    /// Puts the questions of an `input_required` status not yet answered to the person and
    /// sends the answers with `tasks/update`; the task's status right after, or `None` when
    /// every question was answered already (the server has yet to catch up).
    async fn answer_task_questions(
        &self,
        task_id: &str,
        input_requests: &rmcp::model::InputRequests,
        answered: &mut BTreeSet<String>,
        rounds: &mut Vec<InputRound>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Option<DetailedTask>, RequestError> {
        let fresh: rmcp::model::InputRequests = input_requests
            .iter()
            .filter(|(key, _)| !answered.contains(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(None);
        }
        if rounds.len() >= MAX_INPUT_ROUNDS {
            self.cancel_task(task_id).await;
            return Err(RequestError::Protocol(format!(
                "task {task_id} asked for input {} times without finishing; given up",
                rounds.len() + 1
            )));
        }
        answered.extend(fresh.keys().cloned());
        let (responses, answers) = match self.answer_requests(fresh, cancel).await {
            Ok(answer) => answer,
            Err(e) => return Err(self.abandon(task_id, e).await),
        };
        rounds.push(InputRound {
            requests: answers,
            request_state: false,
        });
        let update = ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(
            UpdateTaskParams::new(task_id.to_owned(), responses),
        ));
        if let Err(e) = self.request(update, timeout, cancel, None).await {
            return Err(self.abandon(task_id, e).await);
        }
        // The answer may end the wait at once: ask again without a pause.
        match self.get_task(task_id, timeout, cancel).await {
            Ok(next) => Ok(Some(next)),
            Err(e) => Err(self.abandon(task_id, e).await),
        }
    }

    /// One `tasks/get`, checked to be about the task asked for.
    async fn get_task(
        &self,
        task_id: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<DetailedTask, RequestError> {
        let request =
            ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(task_id)));
        let task = match self.request(request, timeout, cancel, None).await? {
            ServerResult::GetTaskResult(got) => got.task,
            // Decoded as something else: decode it as a task to say what is wrong with it.
            other => {
                serde_json::from_value::<GetTaskResult>(to_value(&other)?)
                    .map_err(|e| RequestError::Protocol(format!("tasks/get answer: {e}")))?
                    .task
            }
        };
        if task.task.task_id != task_id {
            return Err(RequestError::Protocol(format!(
                "tasks/get for task {task_id} was answered about task {:?}",
                task.task.task_id
            )));
        }
        Ok(task)
    }

    /// Gives up on a task: the server is told (unless the connection is what failed), and
    /// the reason is passed on.
    async fn abandon(&self, task_id: &str, why: RequestError) -> RequestError {
        if !matches!(why, RequestError::Closed | RequestError::Exited { .. }) {
            self.cancel_task(task_id).await;
        }
        why
    }

    /// Best effort: a server that cannot be told keeps its task until its TTL.
    async fn cancel_task(&self, task_id: &str) {
        let request = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(
            CancelTaskParams::new(task_id),
        ));
        let never = CancellationToken::new();
        if let Err(e) = self
            .request(request, Duration::from_secs(2), &never, None)
            .await
        {
            tracing::debug!(task = task_id, error = %e, "tasks/cancel failed");
        }
    }
}

/// How long the host follows a task: its TTL, within the tool timeout and [`MAX_TASK_TIME`].
fn task_deadline(ttl_ms: Option<u64>, timeout: Duration) -> Duration {
    let floor = timeout.min(MAX_TASK_TIME);
    ttl_ms
        .map_or(MAX_TASK_TIME, Duration::from_millis)
        .clamp(floor, MAX_TASK_TIME)
}

fn poll_interval(suggested_ms: Option<u64>) -> Duration {
    suggested_ms
        .map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// What the call's progress line says about the task.
fn status_line(task: &DetailedTask) -> String {
    let status = match task.status() {
        rmcp::model::TaskStatus::Working => "working",
        rmcp::model::TaskStatus::InputRequired => "waiting for input",
        rmcp::model::TaskStatus::Completed => "completed",
        rmcp::model::TaskStatus::Failed => "failed",
        rmcp::model::TaskStatus::Cancelled => "cancelled",
        _ => "in an unknown state",
    };
    match &task.task.status_message {
        Some(m) => format!("task {status}: {m}"),
        None => format!("task {status}"),
    }
}

/// A failed task's `error` (a JSON-RPC error object) as the error of the call.
fn task_error(error: &serde_json::Map<String, Value>) -> RequestError {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let message = error.get("message").and_then(Value::as_str);
    match (code, message) {
        (Some(code), Some(message)) => RequestError::Server {
            code,
            message: message.to_string(),
        },
        _ => RequestError::Protocol(format!(
            "the task failed with an error that is not a JSON-RPC error: {}",
            Value::Object(error.clone())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_is_the_ttl_within_the_tool_timeout_and_the_cap() {
        let t = Duration::from_secs(30);
        assert_eq!(task_deadline(Some(120_000), t), Duration::from_secs(120));
        assert_eq!(task_deadline(Some(0), t), t);
        assert_eq!(task_deadline(None, t), MAX_TASK_TIME);
        assert_eq!(task_deadline(Some(u64::MAX), t), MAX_TASK_TIME);
    }

    #[test]
    fn polling_follows_the_server_within_bounds() {
        assert_eq!(poll_interval(None), DEFAULT_POLL);
        assert_eq!(poll_interval(Some(0)), MIN_POLL);
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL);
    }

    #[test]
    fn a_failed_task_carries_the_servers_error() {
        let error = serde_json::json!({"code": -32603, "message": "disk full"});
        let e = task_error(error.as_object().unwrap());
        assert!(
            matches!(e, RequestError::Server { code: -32603, ref message } if message == "disk full")
        );
        let odd = serde_json::json!({"why": "no"});
        assert!(matches!(
            task_error(odd.as_object().unwrap()),
            RequestError::Protocol(_)
        ));
    }
}
