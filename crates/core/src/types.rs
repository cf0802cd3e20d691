//! Neutral MCP types: what the host knows about a tool and a tool result, independent of the
//! SDK and of the protocol era that delivered them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The id the host assigned to a server from configuration (its config key). Routing uses this,
/// never the server's self-reported `serverInfo.name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ServerId(Arc<str>);

impl ServerId {
    pub fn new(name: &str) -> Self {
        Self(Arc::from(name))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One tool as a server declared it. Every field is untrusted server input.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDescriptor {
    /// The server's own name for the tool, sent back verbatim in `tools/call`.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Kept raw: policy decides later which hints it believes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// A list entry (tool, prompt, resource) the host could not accept, or a problem with the
/// listing itself; reported instead of silently dropped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ListIssue {
    /// The entry's name (or URI) when it had a readable one, else `#index`; `*` for the list.
    pub item: String,
    pub reason: String,
}

/// One prompt as a server declared it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptDescriptor {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

/// One resource as a server declared it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceDescriptor {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "mimeType")]
    pub mime_type: Option<String>,
}

/// One content block of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        #[serde(rename = "mimeType")]
        mime_type: Option<String>,
        /// Length of the base64 payload; the payload itself is kept in `data`.
        data: String,
    },
    Audio {
        #[serde(rename = "mimeType")]
        mime_type: Option<String>,
        data: String,
    },
    ResourceLink {
        uri: String,
        name: Option<String>,
    },
    Resource {
        uri: String,
        text: Option<String>,
        #[serde(rename = "mimeType")]
        mime_type: Option<String>,
    },
    /// A block type this host does not know; kept so nothing is lost.
    Unknown {
        raw: Value,
    },
}

/// One resource template (RFC 6570 URI template) as a server declared it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceTemplateDescriptor {
    #[serde(rename = "uriTemplate")]
    pub uri_template: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "mimeType")]
    pub mime_type: Option<String>,
}

/// What a call got through before it failed: the rounds of input it was asked (and
/// answered) and the task it ran as, for its record.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Partial {
    pub input_rounds: Vec<crate::event::InputRound>,
    pub task_id: Option<String>,
}

/// The outcome of a `tools/call` that got a result (which may still be a tool-level error).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallOutcome {
    pub content: Vec<Content>,
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// The rounds of input the server asked for before it answered (2026-07-28's
    /// `input_required`), for the call's record; not part of the result.
    #[serde(skip)]
    pub input_rounds: Vec<crate::event::InputRound>,
    /// The server's id of the task it ran the call as, when it did (the Tasks extension);
    /// for the call's record, not part of the result.
    #[serde(skip)]
    pub task_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// A form's fields are shown in the order the server wrote them, a call's arguments in
    /// the order the model did: JSON objects keep their order through every crate (the
    /// workspace's `serde_json` has `preserve_order`; hashes sort explicitly).
    #[test]
    fn json_objects_keep_the_order_they_were_written_in() {
        let schema: Value =
            serde_json::from_str(r#"{"last_name": 1, "first_name": 2, "age": 3}"#).unwrap();
        let keys: Vec<&str> = schema
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["last_name", "first_name", "age"]);
        assert_eq!(
            schema.to_string(),
            r#"{"last_name":1,"first_name":2,"age":3}"#
        );
    }
}
