//! Choosing the model from `-m provider:model` (or `MCP_HOST_MODEL`): which wire format,
//! which base URL (a flag, then the provider's environment variable, then its public
//! default), which key, and the context window assumed for it.

use crate::{
    Anthropic, AnyProvider, Gemini, ModelClient, Ollama, OpenAiCompatible, OpenAiResponses,
};
use std::collections::BTreeMap;

pub const NO_MODEL: &str = "no model configured: pass -m provider:model (for example \
`-m anthropic:claude-sonnet-4-5` with ANTHROPIC_API_KEY set, `-m openai:gpt-4.1` with \
OPENAI_API_KEY, `-m gemini:gemini-2.5-pro` with GEMINI_API_KEY, `-m ollama:llama3.1`, or \
`-m openai-compatible:NAME --base-url http://127.0.0.1:8080/v1`), or set MCP_HOST_MODEL";

pub const PROVIDERS: &str = "anthropic, openai, openai-chat, openai-compatible, gemini, ollama";

/// Why no model could be chosen, in words for the person who chose.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ChoiceError(String);

macro_rules! bail {
    ($($t:tt)*) => { return Err(ChoiceError(format!($($t)*))) };
}

/// A chosen model.
pub struct Chosen {
    pub provider: AnyProvider,
    pub model: String,
    /// `provider:model` as given.
    pub spec: String,
    /// Tokens of context assumed when no flag says otherwise.
    pub context_window: usize,
}

/// Resolves `spec` (`provider:model`). `env` reads the host's environment; `http` is the
/// client the provider posts through.
pub fn choose(
    spec: Option<&str>,
    base_url: Option<&str>,
    env: &BTreeMap<String, String>,
    http: ModelClient,
) -> Result<Chosen, ChoiceError> {
    let var = |k: &str| env.get(k).cloned().filter(|v| !v.is_empty());
    let Some(spec) = spec.map(str::to_string).or_else(|| var("MCP_HOST_MODEL")) else {
        bail!("{NO_MODEL}")
    };
    let Some((provider, model)) = spec.split_once(':').filter(|(_, m)| !m.is_empty()) else {
        bail!("`{spec}` is not provider:model; {NO_MODEL}")
    };
    let base = |var_name: &str, default: &str| {
        base_url
            .map(str::to_string)
            .or_else(|| var(var_name))
            .unwrap_or_else(|| default.to_string())
    };
    // A local or proxy endpoint may need no key; the public APIs do.
    let key = |var_name: &str, base_var: &str| -> Result<Option<String>, ChoiceError> {
        let key = var(var_name);
        if key.is_none() && base_url.is_none() && var(base_var).is_none() {
            bail!("{provider} needs {var_name} (or a --base-url for a local endpoint)");
        }
        Ok(key)
    };
    let (url, key, context_window) = match provider {
        "anthropic" => (
            base("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            key("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")?,
            200_000,
        ),
        "openai" | "openai-chat" => (
            base("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            key("OPENAI_API_KEY", "OPENAI_BASE_URL")?,
            128_000,
        ),
        "openai-compatible" => {
            let Some(url) = base_url
                .map(str::to_string)
                .or_else(|| var("OPENAI_BASE_URL"))
            else {
                bail!("openai-compatible needs --base-url (or OPENAI_BASE_URL)")
            };
            (url, var("OPENAI_API_KEY"), 128_000)
        }
        "gemini" => (
            base(
                "GEMINI_BASE_URL",
                "https://generativelanguage.googleapis.com",
            ),
            key("GEMINI_API_KEY", "GEMINI_BASE_URL")?,
            1_000_000,
        ),
        "ollama" => {
            let url = base("OLLAMA_HOST", "http://127.0.0.1:11434");
            let url = if url.contains("://") {
                url
            } else {
                format!("http://{url}")
            };
            (url, None, 32_000)
        }
        other => bail!("unknown provider `{other}` (supported: {PROVIDERS})"),
    };
    let provider = match provider {
        "anthropic" => AnyProvider::Anthropic(Anthropic::new(http, &url, key)),
        "openai" => AnyProvider::OpenAiResponses(OpenAiResponses::new(http, &url, key)),
        "gemini" => AnyProvider::Gemini(Gemini::new(http, &url, key)),
        "ollama" => AnyProvider::Ollama(Ollama::new(http, &url, None)),
        // "openai-chat" and "openai-compatible": the match above let no other name through.
        _ => AnyProvider::OpenAiCompatible(OpenAiCompatible::new(http, &url, key)),
    };
    Ok(Chosen {
        provider,
        model: model.to_string(),
        spec: spec.clone(),
        context_window,
    })
}
