//! Model providers for mcp-host: provider-neutral conversation types, a `Provider` trait,
//! our own streaming client for OpenAI-compatible Chat Completions (SSE), and a scripted
//! provider for engine tests. Other wire formats (Anthropic, Responses, Gemini, Ollama)
//! plug in behind the same trait.

mod openai;
mod sse;
mod types;

pub use openai::OpenAiCompatible;
pub use types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, Scripted, StopReason, ToolCall,
    ToolSpec,
};
