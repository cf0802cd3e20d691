//! A tool as a model is offered it, provider-neutral: the catalogue makes these (and the
//! host's own tools are written as these), and each provider client lowers them to its own
//! wire shape. Typed, so nothing between the catalogue and a provider picks JSON apart.

use serde::Serialize;
use serde_json::Value;

/// One tool definition for a model: the model-visible name, the description the host chose
/// to show (cleaned and capped), and the input schema as the model reads it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}
