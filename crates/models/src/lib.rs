//! Model providers for mcp-host: provider-neutral conversation types, a `Provider` trait,
//! our own streaming clients for Anthropic Messages and OpenAI-compatible Chat Completions
//! (SSE), and a scripted
//! provider for engine tests. Other wire formats (Anthropic, Responses, Gemini, Ollama)
//! plug in behind the same trait.

mod anthropic;
mod openai;
mod retry;
mod sse;
mod types;

pub use anthropic::Anthropic;
pub use openai::OpenAiCompatible;
pub use retry::Retry;
pub use types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, Scripted, StopReason, ToolCall,
    ToolSpec, Usage,
};

/// One of the supported providers, chosen at run time.
#[derive(Clone, Debug)]
pub enum AnyProvider {
    OpenAiCompatible(OpenAiCompatible),
    Anthropic(Anthropic),
}

impl Provider for AnyProvider {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        match self {
            Self::OpenAiCompatible(p) => p.complete(request).await,
            Self::Anthropic(p) => p.complete(request).await,
        }
    }
}
