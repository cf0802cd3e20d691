//! Reading what a server offers besides tools: a prompt's messages (`prompts/get`) and a
//! resource's contents (`resources/read`), decoded leniently into plain text for a front end
//! to attach to a message. Everything here is server output: the caller marks it as such.

use crate::session::{RequestError, Retry, Session, to_value};
use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ReadResourceRequest,
    ReadResourceRequestParams,
};
use serde_json::{Map, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One message of a prompt, as text.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptMessage {
    pub role: String,
    pub text: String,
}

/// One content item of a resource: its text, or a note of its binary size.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceText {
    pub uri: String,
    pub mime_type: Option<String>,
    pub text: String,
}

fn content_text(content: &Value) -> String {
    match content.get("type").and_then(Value::as_str) {
        Some("text") => content["text"].as_str().unwrap_or_default().to_string(),
        Some("resource") => content["resource"]["text"]
            .as_str()
            .map_or_else(|| "[binary resource]".to_string(), str::to_string),
        Some(other) => format!("[{other} content not shown]"),
        None => String::new(),
    }
}

impl Session {
    /// `prompts/get`: the prompt's messages with `arguments` filled in.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Vec<PromptMessage>, RequestError> {
        let make = |retry: Retry| {
            let mut params = GetPromptRequestParams::new(name);
            if !arguments.is_empty() {
                params.arguments = Some(arguments.clone());
            }
            params.input_responses = retry.input_responses;
            params.request_state = retry.request_state;
            ClientRequest::GetPromptRequest(GetPromptRequest::new(params))
        };
        let result = self
            .request_with_input(
                make,
                timeout,
                &CancellationToken::new(),
                None,
                &mut Vec::new(),
            )
            .await?;
        let value = to_value(&result)?;
        let messages = value["messages"].as_array().cloned().unwrap_or_default();
        Ok(messages
            .iter()
            .map(|m| PromptMessage {
                role: m["role"].as_str().unwrap_or("user").to_string(),
                text: content_text(&m["content"]),
            })
            .collect())
    }

    /// `resources/read`: every content item of the resource at `uri`.
    pub async fn read_resource(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<Vec<ResourceText>, RequestError> {
        let make = |retry: Retry| {
            let mut params = ReadResourceRequestParams::new(uri);
            params.input_responses = retry.input_responses;
            params.request_state = retry.request_state;
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params))
        };
        let result = self
            .request_with_input(
                make,
                timeout,
                &CancellationToken::new(),
                None,
                &mut Vec::new(),
            )
            .await?;
        let value = to_value(&result)?;
        let contents = value["contents"].as_array().cloned().unwrap_or_default();
        Ok(contents
            .iter()
            .map(|c| ResourceText {
                uri: c["uri"].as_str().unwrap_or(uri).to_string(),
                mime_type: c["mimeType"].as_str().map(str::to_string),
                text: c["text"].as_str().map_or_else(
                    || {
                        let size = c["blob"].as_str().map_or(0, |b| b.len() / 4 * 3);
                        format!("[binary content, about {size} bytes, not shown]")
                    },
                    str::to_string,
                ),
            })
            .collect())
    }
}
