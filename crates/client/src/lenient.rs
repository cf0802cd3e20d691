//! Tolerant decoding of the results the host depends on. A server's `tools/list` page with one
//! broken tool still yields every other tool (the broken one is reported), and a tool result
//! with an unknown content type keeps that block instead of failing the call. Works on raw
//! JSON, so it does not care which protocol era or SDK type produced it.

use mcp_host_core::{
    CallOutcome, Content, ListIssue, PromptArgument, PromptDescriptor, ResourceDescriptor,
    ResourceTemplateDescriptor, ToolDescriptor,
};
use serde_json::{Map, Value};

/// The largest nesting depth accepted in a schema; deeper ones are reported, not used.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// One decoded page of a `*/list` result.
#[derive(Debug, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub issues: Vec<ListIssue>,
    pub next_cursor: Option<String>,
}

fn str_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_string)
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Decodes one page whose entries are in `result[key]`; an entry `item` rejects becomes an
/// issue named by its `name` or `uri` (or index), and the rest of the page is kept. The page
/// is taken whole, so what an entry keeps (a tool's schemas) is moved out, not copied.
pub fn parse_page<T>(
    result: Value,
    key: &str,
    item: impl Fn(&mut Value) -> Result<T, String>,
) -> Result<Page<T>, String> {
    let Value::Object(mut obj) = result else {
        return Err("list result is not an object".into());
    };
    let Some(Value::Array(list)) = obj.remove(key) else {
        return Err(format!("list result has no `{key}` array"));
    };
    let mut page = Page {
        items: Vec::with_capacity(list.len()),
        issues: Vec::new(),
        // An empty-string cursor is a valid cursor; only absence ends the list.
        next_cursor: str_field(&obj, "nextCursor"),
    };
    for (i, mut entry) in list.into_iter().enumerate() {
        match item(&mut entry) {
            Ok(t) => page.items.push(t),
            Err(reason) => {
                let label = ["name", "uri"]
                    .iter()
                    .find_map(|k| entry.get(*k).and_then(Value::as_str));
                let item = label.map_or_else(|| format!("#{i}"), str::to_string);
                page.issues.push(ListIssue { item, reason });
            }
        }
    }
    Ok(page)
}

pub fn parse_tool_page(result: Value) -> Result<Page<ToolDescriptor>, String> {
    parse_page(result, "tools", parse_tool)
}

pub fn parse_prompt_page(result: Value) -> Result<Page<PromptDescriptor>, String> {
    parse_page(result, "prompts", |v| parse_prompt(v))
}

pub fn parse_resource_page(result: Value) -> Result<Page<ResourceDescriptor>, String> {
    parse_page(result, "resources", |v| parse_resource(v))
}

pub fn parse_template_page(result: Value) -> Result<Page<ResourceTemplateDescriptor>, String> {
    parse_page(result, "resourceTemplates", |v| parse_template(v))
}

fn parse_template(item: &Value) -> Result<ResourceTemplateDescriptor, String> {
    let obj = item.as_object().ok_or("entry is not an object")?;
    let uri_template = required_name(obj, "uriTemplate")?;
    Ok(ResourceTemplateDescriptor {
        name: str_field(obj, "name").unwrap_or_else(|| uri_template.clone()),
        uri_template,
        title: str_field(obj, "title"),
        description: str_field(obj, "description"),
        mime_type: str_field(obj, "mimeType"),
    })
}

fn required_name(obj: &Map<String, Value>, key: &str) -> Result<String, String> {
    match str_field(obj, key) {
        Some(n) if !n.is_empty() => Ok(n),
        Some(_) => Err(format!("empty `{key}`")),
        None => Err(format!("missing or non-string `{key}`")),
    }
}

fn parse_prompt(item: &Value) -> Result<PromptDescriptor, String> {
    let obj = item.as_object().ok_or("entry is not an object")?;
    let arguments = match obj.get("arguments") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(args)) => args
            .iter()
            .map(|a| {
                let a = a.as_object().ok_or("an argument is not an object")?;
                Ok(PromptArgument {
                    name: required_name(a, "name")?,
                    description: str_field(a, "description"),
                    required: a.get("required").and_then(Value::as_bool).unwrap_or(false),
                })
            })
            .collect::<Result<_, String>>()?,
        Some(_) => return Err("`arguments` is not an array".into()),
    };
    Ok(PromptDescriptor {
        name: required_name(obj, "name")?,
        title: str_field(obj, "title"),
        description: str_field(obj, "description"),
        arguments,
    })
}

fn parse_resource(item: &Value) -> Result<ResourceDescriptor, String> {
    let obj = item.as_object().ok_or("entry is not an object")?;
    let uri = required_name(obj, "uri")?;
    Ok(ResourceDescriptor {
        name: str_field(obj, "name").unwrap_or_else(|| uri.clone()),
        uri,
        title: str_field(obj, "title"),
        description: str_field(obj, "description"),
        mime_type: str_field(obj, "mimeType"),
    })
}

/// Takes what it keeps out of `item` (the schemas and annotations); the name stays, to
/// label the entry if it is refused.
fn parse_tool(item: &mut Value) -> Result<ToolDescriptor, String> {
    let obj = item.as_object_mut().ok_or("entry is not an object")?;
    let name = required_name(obj, "name")?;
    let input_schema = match obj.remove("inputSchema") {
        Some(s @ Value::Object(_)) => {
            if s.get("type").is_some_and(|t| t != "object") {
                return Err("`inputSchema` root type is not \"object\"".into());
            }
            s
        }
        Some(_) => return Err("`inputSchema` is not an object".into()),
        None => return Err("missing `inputSchema`".into()),
    };
    if depth(&input_schema) > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "`inputSchema` nests deeper than {MAX_SCHEMA_DEPTH}"
        ));
    }
    let output_schema = obj.remove("outputSchema").filter(Value::is_object);
    let annotations = obj
        .remove("annotations")
        .filter(Value::is_object)
        .map(known_annotations);
    Ok(ToolDescriptor {
        name,
        title: str_field(obj, "title"),
        description: str_field(obj, "description"),
        input_schema,
        output_schema,
        annotations,
    })
}

/// A tool's annotations as the protocol's type reads them (unknown members and nulls
/// dropped), when it can; as written when it cannot. A tool's pin hashes them, so it must
/// not depend on whether the page came as written (the wire's usual path) or through
/// rmcp's types (which take whole pages only, so one broken tool left every other's
/// annotations as written).
fn known_annotations(raw: Value) -> Value {
    use serde::Deserialize;
    rmcp::model::ToolAnnotations::deserialize(&raw)
        .ok()
        .and_then(|known| serde_json::to_value(known).ok())
        .unwrap_or(raw)
}

pub fn parse_call_result(result: &Value) -> Result<CallOutcome, String> {
    let obj = result
        .as_object()
        .ok_or("tools/call result is not an object")?;
    let content = match obj.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().map(parse_content).collect(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err("`content` is not an array".into()),
    };
    Ok(CallOutcome {
        content,
        structured: obj
            .get("structuredContent")
            .filter(|v| !v.is_null())
            .cloned(),
        is_error: obj.get("isError").and_then(Value::as_bool).unwrap_or(false),
        input_rounds: Vec::new(),
        task_id: None,
    })
}

fn parse_content(block: &Value) -> Content {
    let unknown = || Content::Unknown { raw: block.clone() };
    let Some(obj) = block.as_object() else {
        return unknown();
    };
    let s = |k| str_field(obj, k);
    match obj.get("type").and_then(Value::as_str) {
        Some("text") => s("text").map_or_else(unknown, |text| Content::Text { text }),
        Some("image") => s("data").map_or_else(unknown, |data| Content::Image {
            mime_type: s("mimeType"),
            data,
        }),
        Some("audio") => s("data").map_or_else(unknown, |data| Content::Audio {
            mime_type: s("mimeType"),
            data,
        }),
        Some("resource_link") => s("uri").map_or_else(unknown, |uri| Content::ResourceLink {
            uri,
            name: s("name"),
        }),
        Some("resource") => {
            let Some(r) = obj.get("resource").and_then(Value::as_object) else {
                return unknown();
            };
            match str_field(r, "uri") {
                Some(uri) => Content::Resource {
                    uri,
                    text: str_field(r, "text"),
                    mime_type: str_field(r, "mimeType"),
                },
                None => unknown(),
            }
        }
        _ => unknown(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_broken_tool_does_not_drop_the_page() {
        let page = parse_tool_page(json!({"tools": [
            {"name": "good", "inputSchema": {"type": "object"}},
            {"name": "no_schema"},
            {"name": "bad_root", "inputSchema": {"type": "string"}},
            {"inputSchema": {"type": "object"}},
            42,
            {"name": "ok2", "inputSchema": {"type": "object"}, "icons": "weird", "x-extra": 1}
        ], "nextCursor": ""}))
        .unwrap();
        let names: Vec<_> = page.items.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["good", "ok2"]);
        let issues: Vec<_> = page.issues.iter().map(|i| i.item.as_str()).collect();
        assert_eq!(issues, ["no_schema", "bad_root", "#3", "#4"]);
        assert_eq!(
            page.next_cursor.as_deref(),
            Some(""),
            "empty cursor is a cursor"
        );
    }

    #[test]
    fn absurdly_deep_schemas_are_reported() {
        let mut schema = json!({"type": "object"});
        for _ in 0..100 {
            schema = json!({"type": "object", "properties": {"x": schema}});
        }
        let page =
            parse_tool_page(json!({"tools": [{"name": "deep", "inputSchema": schema}]})).unwrap();
        assert!(page.items.is_empty());
        assert!(page.issues[0].reason.contains("deeper"));
    }

    #[test]
    fn prompts_and_resources_are_decoded_leniently_too() {
        let prompts = parse_prompt_page(json!({"prompts": [
            {"name": "p", "arguments": [{"name": "x", "required": true}]},
            {"name": "bad", "arguments": [{"description": "no name"}]},
            {"title": "nameless"}
        ]}))
        .unwrap();
        assert_eq!(prompts.items.len(), 1);
        assert!(prompts.items[0].arguments[0].required);
        assert_eq!(prompts.issues.len(), 2);
        let resources = parse_resource_page(json!({"resources": [
            {"uri": "file:///a", "mimeType": "text/plain"}, {"name": "no uri"}
        ], "nextCursor": "2"}))
        .unwrap();
        assert_eq!(
            resources.items[0].name, "file:///a",
            "name defaults to the uri"
        );
        assert_eq!(resources.issues[0].item, "no uri");
        assert_eq!(resources.next_cursor.as_deref(), Some("2"));
    }

    #[test]
    fn call_results_keep_unknown_blocks_and_error_flag() {
        let out = parse_call_result(&json!({
            "content": [{"type": "text", "text": "hi"}, {"type": "hologram", "x": 1},
                        {"type": "image", "data": "AAA"}, {"type": "resource_link", "uri": "file:///a"}],
            "isError": true
        }))
        .unwrap();
        assert!(out.is_error);
        assert_eq!(out.content[0], Content::Text { text: "hi".into() });
        assert!(matches!(out.content[1], Content::Unknown { .. }));
        assert!(matches!(
            out.content[2],
            Content::Image {
                mime_type: None,
                ..
            }
        ));
        assert!(matches!(
            out.content[3],
            Content::ResourceLink { name: None, .. }
        ));
    }

    #[test]
    fn a_result_without_content_is_empty_not_an_error() {
        let out = parse_call_result(&json!({"structuredContent": {"a": 1}})).unwrap();
        assert!(out.content.is_empty() && !out.is_error);
        assert_eq!(out.structured, Some(json!({"a": 1})));
    }
}
