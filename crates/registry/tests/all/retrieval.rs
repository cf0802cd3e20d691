//! Retrieval quality over the repo's dataset (real servers' tool lists, our own queries)
//! must not regress below the floors measured when the index was tuned.

use mcp_host_registry::eval::{DatasetTool, Query, catalogue_from, evaluate};

fn load<T: serde::de::DeserializeOwned>(file: &str) -> T {
    let path = format!("{}/../../eval/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn recall_and_mrr_stay_above_their_floors() {
    let tools: Vec<DatasetTool> = load("tools.json");
    let queries: Vec<Query> = load("queries.json");
    let report = evaluate(&catalogue_from(&tools), &queries);
    assert!(report.recall_at_5 >= 0.95, "{report:?}");
    assert!(report.recall_at_1 >= 0.75, "{report:?}");
    assert!(report.mrr >= 0.85, "{report:?}");
}

#[test]
fn plain_questions_find_the_obvious_tool_first() {
    let catalogue = catalogue_from(&load::<Vec<DatasetTool>>("tools.json"));
    for (q, want) in [
        ("what time is it in Tokyo", "time__get_current_time"),
        ("commit my changes with a message", "git__git_commit"),
        ("save this text into notes.txt", "filesystem__write_file"),
    ] {
        assert_eq!(catalogue.search(q, 1)[0].0.name, want, "{q}");
    }
}
