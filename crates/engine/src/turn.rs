//! One user turn: deliver finished background calls, compact the history if it nears the
//! window, then repeatedly ask the model with the exposed catalogue (read again at every
//! step, so late servers join and changed definitions show as drift) and run the step's
//! calls, until the model stops calling tools, the step cap is hit, or the user interrupts.

use crate::{
    Conversation, Engine, EngineError, MAX_CALLS_PER_RESPONSE, ResultStore, TurnEnd, TurnReport,
    cancelled, keep_allowed_calls, read_result_definition, system_prompt, unique_call_ids,
};
use mcp_host_core::event::{Event, Usage};
use mcp_host_models::{Message, ModelRequest, Provider, ProviderError, ToolSpec};
use mcp_host_registry::catalogue::Catalogue;
use mcp_host_registry::exposure::Exposure;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The tools a step offers the model. The list of the step before is offered again (the same
/// `Arc`, which a provider recognises and whose JSON it reuses) while the catalogue, the
/// exposure and the stored results are as they were: rebuilding it copied every definition
/// at every step.
fn offered_tools(conv: &mut Conversation, catalogue: &Arc<Catalogue>) -> Arc<[ToolSpec]> {
    if let Some(last) = &conv.offered
        && Arc::ptr_eq(&last.catalogue, catalogue)
        && last.exposure == conv.exposure
        && last.stored_results == conv.stored_results
    {
        return last.tools.clone();
    }
    let plan = conv.exposure.plan(catalogue);
    let mut tools = plan.definitions(&conv.exposure.loaded);
    if conv.stored_results {
        tools.push(read_result_definition());
    }
    let tools: Arc<[ToolSpec]> = tools.into();
    conv.offered = Some(Offered {
        catalogue: catalogue.clone(),
        exposure: conv.exposure.clone(),
        stored_results: conv.stored_results,
        tools: tools.clone(),
    });
    tools
}

/// The tool list a conversation offered last, with what it was made from.
#[derive(Debug)]
pub(crate) struct Offered {
    catalogue: Arc<Catalogue>,
    exposure: Exposure,
    stored_results: bool,
    tools: Arc<[ToolSpec]>,
}

impl<P: Provider> Engine<'_, P> {
    pub(crate) fn results(&self) -> Option<ResultStore> {
        self.config.store.clone().map(ResultStore::new)
    }

    /// Runs one user turn to its end. The history is kept (and saved, when the conversation
    /// is persisted) however the turn ends.
    pub async fn run_turn(
        &self,
        conv: &mut Conversation,
        user: &str,
        cancel: &CancellationToken,
    ) -> Result<TurnReport, EngineError> {
        let span = crate::trace_span!(
            "turn",
            model = %self.config.model,
            turn = conv.turn_no + 1,
            steps = tracing::field::Empty,
            tool_calls = tracing::field::Empty,
            end = tracing::field::Empty,
        );
        let outcome = self.turn(conv, user, cancel).instrument(span.clone()).await;
        if let Ok(report) = &outcome {
            span.record("steps", report.steps);
            span.record("tool_calls", report.calls.len());
            span.record("end", tracing::field::debug(report.end));
        }
        self.save(conv).await?;
        outcome
    }

    async fn turn(
        &self,
        conv: &mut Conversation,
        user: &str,
        cancel: &CancellationToken,
    ) -> Result<TurnReport, EngineError> {
        conv.turn_no += 1;
        conv.turn.user_spoke();
        let catalogue = self.tools.current(self.servers).await?;
        if conv.history.is_empty()
            && let Some(system) = system_prompt(self.servers, &catalogue)
        {
            conv.push(Message::System { text: system });
        }
        self.compact(conv).await;
        let delivered = self.deliver_background(conv).await;
        let unavailable = conv.unavailable.note(self.servers);
        conv.push(Message::User {
            text: format!("{delivered}{unavailable}{user}"),
        });
        let mut report = TurnReport {
            text: String::new(),
            steps: 0,
            end: TurnEnd::Finished,
            calls: Vec::new(),
            usage: Usage::default(),
            conversation_id: conv.id().map(ToString::to_string),
        };
        for step in 1..=self.config.max_steps {
            report.steps = step;
            // Between steps the servers may have moved: late ones join, changed definitions
            // show as drift before the model's next call is decided.
            let catalogue = if step == 1 {
                catalogue.clone()
            } else {
                self.tools.current(self.servers).await?
            };
            let tools = offered_tools(conv, &catalogue);
            let mut request =
                ModelRequest::new(self.config.model.clone(), conv.history.clone(), tools);
            request.reuse = Some(conv.next_reuse());
            let Some(mut response) = self.ask_model(request, cancel).await? else {
                return Ok(cancelled(report));
            };
            let dropped = keep_allowed_calls(&mut response.tool_calls);
            if dropped > 0 {
                self.observer.event(crate::events::notice(format!(
                    "the model asked for {} calls at once; only the first {MAX_CALLS_PER_RESPONSE} were considered, the rest dropped",
                    dropped + MAX_CALLS_PER_RESPONSE
                )));
            }
            unique_call_ids(&mut response.tool_calls, conv);
            report.usage += response.usage;
            conv.push(Message::Assistant {
                text: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
            });
            if response.tool_calls.is_empty() {
                report.text = response.text;
                return Ok(report);
            }
            self.run_step(
                &catalogue,
                conv,
                &response.tool_calls,
                cancel,
                &mut report.calls,
            )
            .await;
            if cancel.is_cancelled() {
                return Ok(cancelled(report));
            }
        }
        report.text = format!(
            "Stopped after {} model steps (the per-turn cap); the task may be unfinished.",
            self.config.max_steps
        );
        report.end = TurnEnd::StepLimit;
        Ok(report)
    }

    /// One model request; its text is passed on as it streams. `None`: interrupted.
    async fn ask_model(
        &self,
        mut request: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<Option<mcp_host_models::ModelResponse>, ProviderError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        request.deltas = Some(tx);
        let span = crate::trace_span!(
            "model.request",
            model = %request.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            input_tokens = tracing::field::Empty,
            output_tokens = tracing::field::Empty,
            tool_calls = tracing::field::Empty,
            is_error = tracing::field::Empty,
        );
        let response = self.provider.complete(&request).instrument(span.clone());
        let response = async {
            let r = response.await;
            match &r {
                Ok(answer) => {
                    span.record("input_tokens", answer.usage.input_tokens);
                    span.record("output_tokens", answer.usage.output_tokens);
                    span.record("tool_calls", answer.tool_calls.len());
                }
                Err(_) => {
                    span.record("is_error", true);
                }
            }
            r
        };
        tokio::pin!(response);
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(None),
                Some(text) = rx.recv() => self.observer.event(Event::TextDelta { text }),
                r = &mut response => {
                    while let Ok(text) = rx.try_recv() {
                        self.observer.event(Event::TextDelta { text });
                    }
                    return r.map(Some);
                }
            }
        }
    }
}
