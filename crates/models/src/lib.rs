//! Model providers for mcp-host: provider-neutral conversation types, a `Provider` trait,
//! our own streaming clients for five wire formats (Anthropic Messages, OpenAI-compatible
//! Chat Completions, OpenAI Responses and Gemini over SSE; Ollama's native chat over
//! NDJSON), one place that lowers a tool's JSON Schema to what each provider accepts
//! (`lower`), and a scripted provider for engine tests.

mod anthropic;
mod body;
mod gemini;
mod http;
mod lines;
mod lowering;
mod ndjson;
mod ollama;
mod openai;
mod responses;
mod retry;
mod sse;
mod types;
mod wire;

mod choice;
pub use anthropic::Anthropic;
pub use choice::{ChoiceError, Chosen, NO_MODEL, PROVIDERS, choose};
pub use gemini::Gemini;
pub use http::ModelClient;
pub use lowering::{Dialect, MAX_DEPTH as MAX_SCHEMA_DEPTH, lower};
/// The stream framers, for the fuzz targets in `fuzz/`.
#[doc(hidden)]
pub use ndjson::NdjsonParser;
pub use ollama::Ollama;
pub use openai::OpenAiCompatible;
pub use responses::OpenAiResponses;
pub use retry::Retry;
#[doc(hidden)]
pub use sse::SseParser;
pub use types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, Reuse, Scripted, StopReason,
    ToolCall, ToolSpec, Usage,
};

/// One of the supported providers, chosen at run time.
#[derive(Clone, Debug)]
pub enum AnyProvider {
    OpenAiCompatible(OpenAiCompatible),
    Anthropic(Anthropic),
    OpenAiResponses(OpenAiResponses),
    Gemini(Gemini),
    Ollama(Ollama),
}

impl Provider for AnyProvider {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        match self {
            Self::OpenAiCompatible(p) => p.complete(request).await,
            Self::Anthropic(p) => p.complete(request).await,
            Self::OpenAiResponses(p) => p.complete(request).await,
            Self::Gemini(p) => p.complete(request).await,
            Self::Ollama(p) => p.complete(request).await,
        }
    }
}
