//! Prints retrieval quality over a dataset: `cargo run --release -p mcp-host-registry
//! --example eval_search [TOOLS.json QUERIES.json]` (defaults: the repo's `eval/` files).

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A report tool: a panic is the error.

use mcp_host_registry::eval::{DatasetTool, Query, catalogue_from, evaluate};

fn main() {
    let mut args = std::env::args().skip(1);
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval");
    let tools = args.next().unwrap_or_else(|| format!("{root}/tools.json"));
    let queries = args
        .next()
        .unwrap_or_else(|| format!("{root}/queries.json"));
    let tools: Vec<DatasetTool> =
        serde_json::from_str(&std::fs::read_to_string(tools).unwrap()).unwrap();
    let queries: Vec<Query> =
        serde_json::from_str(&std::fs::read_to_string(queries).unwrap()).unwrap();
    let catalogue = catalogue_from(&tools);
    let r = evaluate(&catalogue, &queries);
    println!("{} tools, {} queries", tools.len(), r.queries);
    println!(
        "recall@1 {:.3}  recall@5 {:.3}  recall@10 {:.3}  MRR {:.3}",
        r.recall_at_1, r.recall_at_5, r.recall_at_10, r.mrr
    );
    for (q, expect, rank) in &r.misses {
        let rank = rank.map_or("not in top 10".to_string(), |k| format!("rank {k}"));
        let got = catalogue
            .search(q, 1)
            .first()
            .map(|(e, _)| e.name.clone())
            .unwrap_or_default();
        println!(
            "  {rank:>14}  {q:?} wants {}, top is {got}",
            expect.join(" or ")
        );
    }
}
