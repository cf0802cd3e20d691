//! Registry benchmarks: search index build and query (lexical and hybrid) at 1,000 and
//! 10,000 tools, the one-time cost of embedding the evaluation set's real tools, catalogue
//! build, and argument-schema compile and validate. Also prints query-latency percentiles
//! (p50/p99 over 2,000 varied queries), which criterion's means do not show.
//! Run: `cargo bench -p mcp-host-registry --bench registry`.

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark: a panic is the report.

use criterion::{BenchmarkId, Criterion};
use hdrhistogram::Histogram;
use mcp_host_core::{ServerId, ToolDescriptor};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use mcp_host_registry::eval::Dataset;
use mcp_host_registry::schema;
use mcp_host_registry::search::hybrid::Embedder;
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::Instant;

const VERBS: &[&str] = &[
    "get", "list", "create", "delete", "update", "search", "read", "write", "send", "sync",
    "export", "import",
];
const NOUNS: &[&str] = &[
    "file",
    "issue",
    "user",
    "message",
    "invoice",
    "calendar_event",
    "branch",
    "commit",
    "ticket",
    "document",
    "channel",
    "repository",
    "forecast",
    "payment",
    "contact",
    "task",
    "note",
    "image",
    "report",
    "dataset",
];
const WORDS: &[&str] = &[
    "quickly",
    "the",
    "remote",
    "local",
    "project",
    "workspace",
    "with",
    "optional",
    "filters",
    "returns",
    "details",
    "about",
    "a",
    "single",
    "all",
    "matching",
    "items",
    "from",
    "service",
    "account",
    "history",
    "latest",
    "metadata",
    "content",
    "status",
    "owner",
    "team",
    "recent",
    "archived",
    "shared",
];

/// A deterministic pseudo-random sequence (no external RNG, same corpus every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

fn corpus(tools: usize) -> Vec<ServerTools> {
    let mut rng = Lcg(42);
    let servers = 30.min(tools);
    (0..servers)
        .map(|s| {
            let tools = (0..tools / servers)
                .map(|i| {
                    let (v, n) = (VERBS[rng.next(VERBS.len())], NOUNS[rng.next(NOUNS.len())]);
                    let description: Vec<&str> =
                        (0..12).map(|_| WORDS[rng.next(WORDS.len())]).collect();
                    ToolDescriptor {
                        name: format!("{v}_{n}_{i}"),
                        title: None,
                        description: Some(format!("{v} {n}: {}", description.join(" "))),
                        input_schema: json!({"type": "object", "properties": {
                            "id": {"type": "string", "description": format!("The {n} id")},
                            "limit": {"type": "integer", "minimum": 1}
                        }}),
                        output_schema: None,
                        annotations: None,
                    }
                })
                .collect::<Vec<_>>();
            ServerTools::new(ServerId::new(&format!("server{s}")), tools)
        })
        .collect()
}

fn queries() -> Vec<String> {
    let mut rng = Lcg(7);
    (0..2000)
        .map(|_| {
            format!(
                "{} the {} {}",
                VERBS[rng.next(VERBS.len())],
                NOUNS[rng.next(NOUNS.len())],
                WORDS[rng.next(WORDS.len())]
            )
        })
        .collect()
}

/// p50, p99 and max of `search` over the varied queries, after a warm-up, in µs.
fn query_latency(catalogue: &Catalogue) -> (f64, f64, f64) {
    let mut h = Histogram::<u64>::new(3).unwrap();
    let qs = queries();
    for q in qs.iter().take(200) {
        black_box(catalogue.search(q, 10));
    }
    for q in &qs {
        let t = Instant::now();
        black_box(catalogue.search(q, 10));
        h.record(t.elapsed().as_nanos() as u64).unwrap();
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    (
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.99)),
        us(h.max()),
    )
}

fn latency_report() {
    println!(
        "| tools | ranking | build (ms) | first search, embeds all (ms) | query p50 (µs) | query p99 (µs) | max (µs) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in [1_000, 10_000] {
        for hybrid in [false, true] {
            let t0 = Instant::now();
            let mut catalogue = Catalogue::build(corpus(n));
            let build = t0.elapsed();
            if hybrid {
                catalogue = catalogue.with_embedder(Embedder::new());
            }
            let t1 = Instant::now();
            black_box(catalogue.search("warm", 1));
            let first = t1.elapsed();
            let (p50, p99, max) = query_latency(&catalogue);
            println!(
                "| {n} | {} | {:.1} | {:.1} | {p50:.1} | {p99:.1} | {max:.1} |",
                if hybrid { "hybrid" } else { "lexical" },
                build.as_secs_f64() * 1000.0,
                first.as_secs_f64() * 1000.0,
            );
        }
    }
    // The one-time cost on real definitions (longer than the synthetic ones): the first
    // search of a deferred catalogue embeds every tool; a later snapshot with the same
    // embedder finds its vectors cached by definition hash.
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval"));
    let data = Dataset::load(root).unwrap();
    let embedder = Embedder::new();
    let t = Instant::now();
    let model_load = embedder.model().is_some();
    let load = t.elapsed();
    let first = data.catalogue().with_embedder(embedder.clone());
    let t = Instant::now();
    black_box(first.search("warm", 1));
    let embed = t.elapsed();
    let again = data.catalogue().with_embedder(embedder);
    let t = Instant::now();
    black_box(again.search("warm", 1));
    let cached = t.elapsed();
    println!(
        "\nreal set ({} tools): model load {:.1} ms (loaded: {model_load}); embedding every tool {:.1} ms ({:.1} µs a tool); next snapshot, vectors cached {:.1} ms",
        data.tool_count(),
        load.as_secs_f64() * 1000.0,
        embed.as_secs_f64() * 1000.0,
        embed.as_secs_f64() * 1e6 / data.tool_count() as f64,
        cached.as_secs_f64() * 1000.0,
    );
}

fn tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "pattern": "^[^\\u0000]+$"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
            "mode": {"enum": ["fast", "thorough"]},
            "options": {"type": "object", "properties": {"recursive": {"type": "boolean"}}, "additionalProperties": false},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}}
        },
        "required": ["path"],
        "additionalProperties": false,
        "$defs": {"tag": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "string"}}, "required": ["k"]}}
    })
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("search");
    for n in [1_000, 10_000] {
        let servers = corpus(n);
        group.bench_with_input(BenchmarkId::new("catalogue_build", n), &servers, |b, s| {
            b.iter(|| Catalogue::build(black_box(s.clone())))
        });
        let catalogue = Catalogue::build(servers.clone());
        group.bench_with_input(BenchmarkId::new("query_top10", n), &catalogue, |b, cat| {
            b.iter(|| cat.search(black_box("create a calendar event for the team"), 10))
        });
        let hybrid = Catalogue::build(servers).with_embedder(Embedder::new());
        group.bench_with_input(
            BenchmarkId::new("hybrid_query_top10", n),
            &hybrid,
            |b, cat| b.iter(|| cat.search(black_box("create a calendar event for the team"), 10)),
        );
    }
    group.finish();
    let s = tool_schema();
    c.bench_function("schema_compile", |b| {
        b.iter(|| schema::compile(black_box(&s)).unwrap())
    });
    let v = schema::compile(&s).unwrap();
    let good = json!({"path": "/tmp/x", "limit": 10, "mode": "fast", "options": {"recursive": true}, "tags": [{"k": "a", "v": "b"}]});
    let bad = json!({"path": 3, "limit": 0, "mode": "slow", "extra": 1, "tags": [{"v": 2}]});
    c.bench_function("validate_valid_args", |b| {
        b.iter(|| schema::problems(&v, black_box(&good)))
    });
    c.bench_function("validate_invalid_args", |b| {
        b.iter(|| schema::problems(&v, black_box(&bad)))
    });
    real_server_schemas(c);
    hostile_schemas(c);
}

/// Validation cost per call on the real servers' schemas of the evaluation set
/// (`eval/servers`: 56 servers from npm and PyPI): one iteration validates one typical
/// argument object for every tool whose schema compiles.
fn real_server_schemas(c: &mut Criterion) {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval"));
    let data = Dataset::load(root).expect("the evaluation set loads");
    let descriptors: Vec<std::sync::Arc<ToolDescriptor>> = (data.servers.iter())
        .flat_map(|s| s.server_tools(&s.server).tools)
        .collect();
    let cases: Vec<_> = (descriptors.iter())
        .filter_map(|t| {
            let s = &t.input_schema;
            Some((schema::compile(s).ok()?, sample_args(s)))
        })
        .collect();
    println!(
        "real schemas: {} of {} compile",
        cases.len(),
        descriptors.len()
    );
    c.bench_function("validate_real_schemas", |b| {
        b.iter(|| {
            for (v, args) in &cases {
                let _ = black_box(schema::problems(v, black_box(args)));
            }
        })
    });
    // What the gate adds to every call right before sending: the server's current
    // definition hashed (canonical JSON + SHA-256) and compared with the decided one.
    c.bench_function("definition_hash_real", |b| {
        b.iter(|| {
            for d in &descriptors {
                let definition = mcp_host_registry::catalogue::Entry::definition(black_box(d));
                black_box(mcp_host_registry::pins::definition_hash(&definition));
            }
        })
    });
    // The same check as the gate makes it: the current descriptor compared with the one
    // decided on (a clone, so the comparison walks two separate trees).
    let decided = descriptors.clone();
    c.bench_function("descriptor_compare_real", |b| {
        b.iter(|| {
            for (now, then) in descriptors.iter().zip(&decided) {
                black_box(black_box(now) == black_box(then));
            }
        })
    });
    c.bench_function("compile_real_schemas", |b| {
        b.iter(|| {
            for t in &descriptors {
                black_box(schema::compile(black_box(&t.input_schema)).is_ok());
            }
        })
    });
}

/// The two hostile cases of issue 12: an expansion schema refused at compile time, and a
/// validation stopped at its step budget (the longest any call can validate).
fn hostile_schemas(c: &mut Criterion) {
    let expansion = mcp_host_testkit::expansion_schema(12, 8);
    c.bench_function("compile_refuses_expansion_schema", |b| {
        b.iter(|| schema::compile(black_box(&expansion)).is_err())
    });
    let branches: Vec<Value> = (0..8)
        .map(|i| json!({"type": "array", "minItems": i % 2, "items": {"$ref": "#/$defs/n"}}))
        .collect();
    let slow = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"anyOf": branches}}});
    let v = schema::compile(&slow).unwrap();
    let mut deep = json!("leaf");
    for _ in 0..14 {
        deep = json!([deep]);
    }
    let args = json!({"x": deep});
    let mut group = c.benchmark_group("budget");
    group.sample_size(10);
    group.bench_function("validation_stopped_at_step_budget", |b| {
        b.iter(|| schema::problems(&v, black_box(&args)).is_err())
    });
    group.finish();
}

/// Arguments a model would plausibly send: every property filled with a value of its type.
fn sample_args(schema: &Value) -> Value {
    let mut args = serde_json::Map::new();
    for (k, p) in schema["properties"].as_object().into_iter().flatten() {
        let v = match p["type"].as_str() {
            _ if p.get("enum").is_some() => p["enum"][0].clone(),
            Some("string") => json!("/tmp/project/src/main.rs"),
            Some("integer") | Some("number") => json!(3),
            Some("boolean") => json!(true),
            Some("array") => json!(["a", "b"]),
            Some("object") => json!({}),
            _ => json!("x"),
        };
        args.insert(k.clone(), v);
    }
    Value::Object(args)
}

fn main() {
    latency_report();
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
