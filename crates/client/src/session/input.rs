//! Multi-round-trip requests (2026-07-28, SEP-2322): a `tools/call`, `prompts/get` or
//! `resources/read` answered with `input_required` has its questions put to the person
//! (or answered by the headless policy) through the same handler that answers a legacy
//! server's `elicitation/create`, and is sent again, with a new id, carrying the answers
//! and the server's `requestState` byte for byte, until the server answers or
//! [`MAX_INPUT_ROUNDS`] is reached. Each round's retry carries only that round's answers
//! and state: nothing is reused across rounds or calls.
//!
//! Hostile input: a server may ask forever (the cap), ask too much at once (refused past
//! [`MAX_INPUT_REQUESTS`] questions in a round), ask for what the host never declared
//! (sampling, roots: refused, since answering would mean inventing it), or send an
//! `input_required` with nothing to answer and no state (refused: retrying it would loop).

use super::*;
use mcp_host_core::event::{InputAnswer, InputRound};
use rmcp::model::{
    ElicitationAction, InputRequest, InputRequests, InputRequiredResult, InputResponses,
};

/// How many rounds of input one request may ask for before the host gives up on it.
pub const MAX_INPUT_ROUNDS: usize = 10;
/// How many questions one round may ask. Each is put to the person in turn (or answered
/// by the headless policy and kept in the call's record): a round of a thousand is no
/// form anybody fills in.
pub const MAX_INPUT_REQUESTS: usize = 10;

/// What a retry adds to the original request.
#[derive(Default)]
pub(crate) struct Retry {
    pub input_responses: Option<InputResponses>,
    pub request_state: Option<String>,
}

impl Session {
    /// Sends the request `make` builds, and again with the answers for as long as the
    /// server asks for input; the final answer. Each round taken goes into `rounds` as it is
    /// answered, so a request that fails later still shows what was asked.
    pub(crate) async fn request_with_input(
        &self,
        make: impl Fn(Retry) -> ClientRequest,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
        rounds: &mut Vec<InputRound>,
    ) -> Result<ServerResult, RequestError> {
        let mut retry = Retry::default();
        loop {
            let sent = make(retry);
            let answer = self
                .request(sent, timeout, cancel, progress.clone())
                .await?;
            let ServerResult::InputRequiredResult(asked) = answer else {
                return Ok(answer);
            };
            if rounds.len() >= MAX_INPUT_ROUNDS {
                return Err(RequestError::Protocol(format!(
                    "the server asked for input {} times without answering; given up",
                    rounds.len() + 1
                )));
            }
            // Boxed: few requests take a round, and a call's future is moved whole (see
            // `Session::request`).
            let (next, round) = Box::pin(self.answer_round(asked, cancel)).await?;
            rounds.push(round);
            retry = next;
        }
    }

    /// Answers one round's input requests.
    async fn answer_round(
        &self,
        asked: InputRequiredResult,
        cancel: &CancellationToken,
    ) -> Result<(Retry, InputRound), RequestError> {
        let requests = asked.input_requests.unwrap_or_default();
        if requests.is_empty() && asked.request_state.is_none() {
            return Err(RequestError::Protocol(
                "the server answered input_required with nothing to answer and no state".into(),
            ));
        }
        let (responses, answers) = self.answer_requests(requests, cancel).await?;
        let round = InputRound {
            requests: answers,
            request_state: asked.request_state.is_some(),
        };
        let retry = Retry {
            input_responses: (!responses.is_empty()).then_some(responses),
            request_state: asked.request_state,
        };
        Ok((retry, round))
    }

    /// Puts each elicitation to the person (or the headless policy) through the handler
    /// that answers a legacy `elicitation/create`; what they answered, and how, for the
    /// record. Shared by a request's rounds and a task's (`tasks/update`).
    pub(crate) async fn answer_requests(
        &self,
        requests: InputRequests,
        cancel: &CancellationToken,
    ) -> Result<(InputResponses, Vec<InputAnswer>), RequestError> {
        let handler = self.service.service();
        let mut responses = InputResponses::new();
        let mut answers = Vec::new();
        if requests.len() > MAX_INPUT_REQUESTS {
            return Err(RequestError::Protocol(format!(
                "the server asked {} questions at once; at most {MAX_INPUT_REQUESTS} are put \
                 to a person",
                requests.len()
            )));
        }
        for (key, request) in requests {
            let InputRequest::Elicitation(elicit) = request else {
                return Err(RequestError::Protocol(format!(
                    "the server asked (`{key}`) for sampling or roots, which this host did not declare"
                )));
            };
            let kind = match &elicit.params {
                rmcp::model::ElicitRequestParams::UrlElicitationParams { .. } => "url",
                _ => "form",
            };
            let result = tokio::select! {
                r = handler.elicit(elicit.params) => r,
                () = cancel.cancelled() => return Err(RequestError::Cancelled),
            };
            answers.push(InputAnswer {
                key: key.clone(),
                kind: kind.into(),
                action: match result.action {
                    ElicitationAction::Accept => "accept",
                    ElicitationAction::Decline => "decline",
                    // Non-exhaustive upstream; this host answers only the three.
                    _ => "cancel",
                }
                .into(),
            });
            let value =
                serde_json::to_value(&result).map_err(|e| RequestError::Protocol(e.to_string()))?;
            responses.insert(key, value);
        }
        Ok((responses, answers))
    }
}
