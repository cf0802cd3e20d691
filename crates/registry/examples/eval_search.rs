//! Prints tool-search quality on the evaluation set (`eval/`): recall@1/5/10 and MRR by
//! part and request kind, for plain BM25 (the baseline), the host's lexical ranking and its
//! hybrid ranking. `cargo run --release -p mcp-host-registry --example eval_search
//! [-- --misses]` (`--misses` lists the dev part's requests the hybrid ranking did not
//! put first; the test part's are never listed, so tuning cannot look at them).

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A report tool: a panic is the error.

use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use mcp_host_registry::eval::{
    Dataset, Kind, Part, Report, evaluate, ranked_by, ranked_by_baseline,
};
use mcp_host_registry::exposure::{Exposure, estimate_tokens, meta_tool_definitions};
use serde_json::json;
use std::path::Path;

fn main() {
    let misses = std::env::args().any(|a| a == "--misses");
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval"));
    let data = Dataset::load(root).unwrap_or_else(|e| panic!("{e}"));
    let lexical = data.catalogue();
    let hybrid = data.hybrid_catalogue();
    println!(
        "{} servers, {} tools ({} distractors no request targets), {} requests; ranking: {}",
        data.servers.len(),
        data.tool_count(),
        data.distractor_count(),
        data.requests.len(),
        hybrid.ranking().describe()
    );
    let started = std::time::Instant::now();
    let reports = [
        (
            "BM25 baseline",
            evaluate(&data.requests, ranked_by_baseline(&lexical)),
        ),
        (
            "host lexical",
            evaluate(&data.requests, ranked_by(&lexical)),
        ),
        ("host hybrid", evaluate(&data.requests, ranked_by(&hybrid))),
    ];
    println!(
        "\n| part | kind | n | ranking | R@1 | R@5 | R@10 | MRR |\n|---|---|---|---|---|---|---|---|"
    );
    for part in [Part::Dev, Part::Test] {
        for kind in Kind::ALL.map(Some).into_iter().chain([None]) {
            for (name, report) in &reports {
                let m = match kind {
                    Some(k) => report.get(part, k),
                    None => report.overall.get(&part).cloned().unwrap_or_default(),
                };
                println!(
                    "| {part:?} | {} | {} | {name} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    kind.map_or("all", Kind::label),
                    m.requests,
                    m.recall_at_1,
                    m.recall_at_5,
                    m.recall_at_10,
                    m.mrr
                );
            }
        }
    }
    eprintln!("(evaluated in {:.2?})", started.elapsed());
    deferred_view(&data);
    if misses {
        print_misses(&reports[2].1);
    }
}

fn print_misses(report: &Report) {
    println!("\ndev requests not ranked first by the hybrid ranking:");
    for (r, place, top) in report.misses.iter().filter(|m| m.0.part == Part::Dev) {
        let place = place.map_or("-".to_string(), |k| k.to_string());
        println!(
            "{place:>3} {:<10} {}/{} {:?}  top: {}",
            r.request.kind.label(),
            r.server,
            r.request.tool,
            r.request.text,
            top.join(", ")
        );
    }
}

/// What deferred mode costs the model: the two meta-tools' definitions (with the server
/// list) and one `search_tools` answer, at about 50, 500 and 5,000 real tools (the set's
/// servers in name order, repeated under new names past its size).
fn deferred_view(data: &Dataset) {
    println!(
        "\n| tools | servers | meta-tool definitions (tokens) | a 5-hit search answer (tokens) |\n|---|---|---|---|"
    );
    for want in [50, 500, 5_000] {
        let mut servers: Vec<ServerTools> = Vec::new();
        let mut tools = 0;
        'fill: for copy in 0.. {
            for s in &data.servers {
                if tools >= want {
                    break 'fill;
                }
                tools += s.tools.len();
                let name = match copy {
                    0 => s.server.clone(),
                    n => format!("{}-{n}", s.server),
                };
                servers.push(s.server_tools(&name));
            }
        }
        let catalogue = Catalogue::build(servers.clone());
        let meta: usize = meta_tool_definitions(&catalogue)
            .iter()
            .map(estimate_tokens)
            .sum();
        let found = Exposure::for_context_window(1).search_tools(
            &catalogue,
            &json!({"query": "create an issue for the failing build", "limit": 5}),
        );
        println!(
            "| {tools} | {} | {meta} | {} |",
            servers.len(),
            found.to_string().len().div_ceil(4)
        );
    }
}
