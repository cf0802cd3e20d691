//! Retrieval evaluation: recall@k and mean reciprocal rank of the catalogue's search over a
//! set of plain-words queries, each with the tool a person would expect. Used by the
//! `eval_search` example (a report) and by a test (a floor that must not regress).

use crate::catalogue::{Catalogue, ServerTools};
use mcp_host_core::{ServerId, ToolDescriptor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize)]
pub struct Query {
    pub query: String,
    /// The model-visible names of the right tools (any of them counts).
    pub expect: Vec<String>,
}

/// A tool as stored in the dataset (`eval/tools.json`).
#[derive(Clone, Debug, Deserialize)]
pub struct DatasetTool {
    pub server: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

pub fn catalogue_from(tools: &[DatasetTool]) -> Catalogue {
    let mut by_server: BTreeMap<&str, Vec<ToolDescriptor>> = BTreeMap::new();
    for t in tools {
        by_server
            .entry(&t.server)
            .or_default()
            .push(ToolDescriptor {
                name: t.name.clone(),
                title: t.title.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                output_schema: None,
                annotations: None,
            });
    }
    Catalogue::build(
        by_server
            .into_iter()
            .map(|(s, tools)| ServerTools::new(ServerId::new(s), tools))
            .collect(),
    )
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub queries: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr: f64,
    /// (query, expected, rank or None) for every query whose answer was not first.
    pub misses: Vec<(String, Vec<String>, Option<usize>)>,
}

pub fn evaluate(catalogue: &Catalogue, queries: &[Query]) -> Report {
    let mut r = Report {
        queries: queries.len(),
        ..Report::default()
    };
    for q in queries {
        let hits = catalogue.search(&q.query, 10);
        let rank = hits
            .iter()
            .position(|(e, _)| q.expect.contains(&e.name))
            .map(|p| p + 1);
        if let Some(k) = rank {
            r.mrr += 1.0 / k as f64;
            r.recall_at_1 += f64::from(u8::from(k <= 1));
            r.recall_at_5 += f64::from(u8::from(k <= 5));
            r.recall_at_10 += 1.0;
        }
        if rank != Some(1) {
            r.misses.push((q.query.clone(), q.expect.clone(), rank));
        }
    }
    let n = queries.len().max(1) as f64;
    r.recall_at_1 /= n;
    r.recall_at_5 /= n;
    r.recall_at_10 /= n;
    r.mrr /= n;
    r
}
