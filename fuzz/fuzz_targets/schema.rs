//! A tool's input schema and a model's arguments (two JSON documents, one per line): the
//! budget check, compilation and validation never panic, and a schema the budget accepts
//! compiles and validates without running away (libFuzzer's timeout catches a hang).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_registry::{budget, schema};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut docs = data.splitn(2, |b| *b == b'\n');
    let Some(Ok(schema_doc)) = docs.next().map(serde_json::from_slice::<Value>) else {
        return;
    };
    let args = (docs.next())
        .and_then(|d| serde_json::from_slice::<Value>(d).ok())
        .unwrap_or(Value::Null);
    let _ = budget::check(&schema_doc);
    if let Ok(checker) = schema::compile(&schema_doc) {
        let _ = schema::problems(&checker, &args);
    }
});
