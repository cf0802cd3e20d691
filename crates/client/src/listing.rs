//! Listing what a server offers (`tools/list`, `prompts/list`, `resources/list`): one
//! paginator with a page cap, cursor-loop detection, an entry cap and duplicate detection,
//! so a hostile or buggy server can neither keep the host listing forever nor hide what was
//! cut off.

use crate::lenient::{self, Page};
use crate::session::{RequestError, Session, to_value};
use mcp_host_core::{
    ListIssue, PromptDescriptor, ResourceDescriptor, ResourceTemplateDescriptor, ToolDescriptor,
};
use rmcp::model::{
    ClientRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest,
    ListToolsRequest, PaginatedRequestParams, ServerResult,
};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Pagination caps: a hostile server must not keep the host listing forever.
pub const MAX_LIST_PAGES: usize = 100;
pub const MAX_LIST_ENTRIES: usize = 5000;
/// Entries left out that are kept one by one; the rest are counted in one last issue. Each
/// is a line of a server's status and of the log at every listing, and a page of duplicates
/// made millions of them.
pub const MAX_LIST_ISSUES: usize = 50;
/// Bytes of JSON one listing may take across its pages (strings and keys, about a byte for
/// anything else). Each page is one line under the wire's cap, but a hundred of them were
/// held whole: 6.4 GB of descriptions a hostile server could make the host keep.
pub const MAX_LIST_BYTES: usize = 64 * 1024 * 1024;
/// An entry's name or key as an issue quotes it: the entry may be left out because it is
/// huge, and each kept issue is shown at every listing.
const ISSUE_KEY_BYTES: usize = 256;

/// Everything a `*/list` call returned across pages, and what was left out and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Listing<T> {
    pub items: Vec<T>,
    pub issues: Vec<ListIssue>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            issues: Vec::new(),
        }
    }
}

/// Each tool shared: a catalogue snapshot takes the definitions as listed, without a copy.
pub type ToolList = Listing<Arc<ToolDescriptor>>;

/// What a server offers besides tools, as last listed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offers {
    pub prompts: Listing<PromptDescriptor>,
    pub resources: Listing<ResourceDescriptor>,
    pub templates: Listing<ResourceTemplateDescriptor>,
}

/// The identity an entry is deduplicated by within one server's list.
pub trait Listed {
    fn key(&self) -> &str;
}

impl Listed for ToolDescriptor {
    fn key(&self) -> &str {
        &self.name
    }
}

impl Listed for PromptDescriptor {
    fn key(&self) -> &str {
        &self.name
    }
}

impl Listed for ResourceTemplateDescriptor {
    fn key(&self) -> &str {
        &self.uri_template
    }
}

impl Listed for ResourceDescriptor {
    fn key(&self) -> &str {
        &self.uri
    }
}

impl Session {
    /// Every tool, following cursors (see [`Session::paginate`]).
    pub async fn list_tools(&self, page_timeout: Duration) -> Result<ToolList, RequestError> {
        let request = |p| ClientRequest::ListToolsRequest(ListToolsRequest::with_param(p));
        let listed = (self.paginate(request, lenient::parse_tool_page, page_timeout)).await?;
        Ok(Listing {
            items: listed.items.into_iter().map(Arc::new).collect(),
            issues: listed.issues,
        })
    }

    pub async fn list_prompts(
        &self,
        page_timeout: Duration,
    ) -> Result<Listing<PromptDescriptor>, RequestError> {
        let request = |p| ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(p));
        self.paginate(request, lenient::parse_prompt_page, page_timeout)
            .await
    }

    pub async fn list_resources(
        &self,
        page_timeout: Duration,
    ) -> Result<Listing<ResourceDescriptor>, RequestError> {
        let request = |p| ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(p));
        self.paginate(request, lenient::parse_resource_page, page_timeout)
            .await
    }

    pub async fn list_resource_templates(
        &self,
        page_timeout: Duration,
    ) -> Result<Listing<ResourceTemplateDescriptor>, RequestError> {
        let request = |p| {
            ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest::with_param(p))
        };
        self.paginate(request, lenient::parse_template_page, page_timeout)
            .await
    }

    /// Prompts, resources and resource templates, each only if the server declared it
    /// offers them. A failure of one list is reported as an issue of that list, not fatal:
    /// tools are what a server is for.
    pub async fn list_offers(&self, page_timeout: Duration) -> Offers {
        let (prompts, resources) = self.offers_declared();
        let mut out = Offers::default();
        if prompts {
            out.prompts = or_issue("prompts/list", self.list_prompts(page_timeout).await);
        }
        if resources {
            out.resources = or_issue("resources/list", self.list_resources(page_timeout).await);
            let templates = self.list_resource_templates(page_timeout).await;
            out.templates = or_issue("resources/templates/list", templates);
        }
        out
    }

    /// Follows `nextCursor` until it is absent, with a page cap, cursor-loop detection, an
    /// entry cap and duplicate detection; each page gets `page_timeout`. What is cut off is
    /// reported as an issue, never silently.
    async fn paginate<T: Listed>(
        &self,
        request: impl Fn(PaginatedRequestParams) -> ClientRequest,
        parse: fn(Value) -> Result<Page<T>, String>,
        page_timeout: Duration,
    ) -> Result<Listing<T>, RequestError> {
        let never = CancellationToken::new();
        let mut out = Listing::default();
        let mut seen_cursors = HashSet::new();
        let mut seen_keys = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut left_out = LeftOut::default();
        let mut bytes = 0;
        for page_no in 1..=MAX_LIST_PAGES + 1 {
            if page_no > MAX_LIST_PAGES {
                out.issues
                    .push(issue("*", format!("stopped after {MAX_LIST_PAGES} pages")));
                break;
            }
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let result = self
                .request(request(params), page_timeout, &never, None)
                .await?;
            // The wire keeps a clean page as the server wrote it ([`ServerResult::CustomResult`]);
            // any other is rmcp's reading of it, turned back into JSON.
            let value = match result {
                ServerResult::CustomResult(page) => page.0,
                other => to_value(&other)?,
            };
            let budget = MAX_LIST_BYTES - bytes;
            let weight = json_bytes(&value, budget);
            if weight > budget {
                out.issues.push(issue(
                    "*",
                    format!(
                        "stopped after {} MiB at page {page_no}",
                        MAX_LIST_BYTES >> 20
                    ),
                ));
                break;
            }
            bytes += weight;
            let page = parse(value).map_err(RequestError::Protocol)?;
            for found in page.issues {
                left_out.note(&mut out.issues, || found);
            }
            for item in page.items {
                if out.items.len() >= MAX_LIST_ENTRIES {
                    left_out.note(&mut out.issues, || {
                        issue(item.key(), format!("over {MAX_LIST_ENTRIES} entries"))
                    });
                } else if seen_keys.insert(item.key().to_string()) {
                    out.items.push(item);
                } else {
                    left_out.note(&mut out.issues, || {
                        issue(item.key(), "duplicate; the first one is kept".into())
                    });
                }
            }
            match page.next_cursor {
                None => break,
                Some(c) if !seen_cursors.insert(c.clone()) => {
                    out.issues.push(issue(
                        "*",
                        format!("cursor {c:?} repeated; stopped listing"),
                    ));
                    break;
                }
                Some(c) => cursor = Some(c),
            }
        }
        if left_out.uncounted > 0 {
            let more = left_out.uncounted;
            out.issues
                .push(issue("*", format!("{more} more entries left out")));
        }
        Ok(out)
    }
}

/// Entries left out of a listing: the first [`MAX_LIST_ISSUES`] kept, the rest counted.
#[derive(Default)]
struct LeftOut {
    uncounted: usize,
}

impl LeftOut {
    fn note(&mut self, issues: &mut Vec<ListIssue>, made: impl FnOnce() -> ListIssue) {
        if issues.len() < MAX_LIST_ISSUES {
            issues.push(made());
        } else {
            self.uncounted += 1;
        }
    }
}

/// A failed listing becomes an empty one that says why.
fn or_issue<T>(what: &str, listed: Result<Listing<T>, RequestError>) -> Listing<T> {
    listed.unwrap_or_else(|e| Listing {
        items: Vec::new(),
        issues: vec![issue("*", format!("{what} failed: {e}"))],
    })
}

/// One line per issue of a `what` listing, for a server's status: those that cut the whole
/// list (`whole`: caps, a cursor loop, a failed listing) or those about single entries.
pub fn warnings(what: &str, issues: &[ListIssue], whole: bool) -> Vec<String> {
    // Names and reasons can carry the server's text.
    let clean = mcp_host_core::sanitize::strip_terminal_escapes;
    issues
        .iter()
        .filter(|i| (i.item == "*") == whole)
        .map(|i| match i.item.as_str() {
            "*" => format!("{what}: {}", clean(&i.reason)),
            item => format!("{what}: `{}` left out: {}", clean(item), clean(&i.reason)),
        })
        .collect()
}

fn issue(item: &str, reason: String) -> ListIssue {
    ListIssue {
        item: match item.get(..item.floor_char_boundary(ISSUE_KEY_BYTES)) {
            Some(cut) if cut.len() < item.len() => format!("{cut}…"),
            _ => item.to_string(),
        },
        reason,
    }
}

/// About how many bytes `value` takes as JSON: its strings and keys, and one for any
/// other value. Counting stops once past `limit`, so a page over the budget costs no more
/// than the budget to weigh.
fn json_bytes(value: &Value, limit: usize) -> usize {
    let mut total = 0;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::String(s) => s.len(),
            Value::Array(items) => {
                stack.extend(items);
                1
            }
            Value::Object(map) => {
                for (key, v) in map {
                    total += key.len();
                    stack.push(v);
                }
                1
            }
            _ => 1,
        };
        if total > limit {
            break;
        }
    }
    total
}
