//! How long the screen takes to draw a frame and to take a streamed delta, with a short and a
//! long transcript (each frame re-wraps the whole transcript), at 120×40; and the approval
//! modal with a 1 MB argument (every string revealed, shown collapsed or whole), at 80×24.

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mcp_host_core::ServerId;
use mcp_host_core::event::{
    ApprovalPrompt, CallSource, CallSubject, Event, TurnEnd, TurnReport, Usage,
};
use mcp_host_tui::{App, SessionInfo, Update};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use std::hint::black_box;

const ANSWER: &str = "# Notes\n\nThe **parser** handles *streaming* input and `code`.\n\n- one\n- two with a [link](https://example.com)\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";

fn delta(text: &str) -> Event {
    Event::TextDelta { text: text.into() }
}

fn app_with(turns: usize) -> App {
    let mut app = App::new(SessionInfo::default());
    for i in 0..turns {
        app.apply(Update::UserMessage(format!("question {i}")));
        app.on_event(&Event::CallBegun {
            subject: CallSubject {
                call_id: format!("c{i}"),
                name: "fs__read_file".into(),
                server: ServerId::new("fs"),
                tool: "read_file".into(),
                args: json!({"path": "/tmp/x", "limit": 10}),
                provenance: vec!["fs".into()],
            },
            source: CallSource::Model,
        });
        app.on_event(&Event::CallEnded {
            call_id: format!("c{i}"),
            name: "fs__read_file".into(),
            is_error: false,
            took_ms: 12,
            background_job: None,
            preview: "line one\nline two\nline three".into(),
        });
        app.on_event(&delta(ANSWER));
        app.on_event(&Event::TurnEnded {
            report: Box::new(TurnReport {
                text: String::new(),
                steps: 2,
                end: TurnEnd::Finished,
                calls: Vec::new(),
                usage: Usage::default(),
                conversation_id: None,
            }),
        });
    }
    app
}

fn bench(c: &mut Criterion) {
    for turns in [10, 200] {
        let app = app_with(turns);
        let mut terminal =
            Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|_| unreachable!());
        c.bench_function(&format!("draw a frame, {turns} turns"), |b| {
            b.iter(|| {
                let _ = terminal.draw(|f| app.render(black_box(f)));
            })
        });
    }
    c.bench_function("apply a 20-byte text delta to a 200-turn transcript", |b| {
        let mut app = app_with(200);
        app.apply(Update::UserMessage("next".into()));
        let more = delta("some more words here");
        b.iter(|| app.on_event(black_box(&more)))
    });
}

fn big_prompt() -> ApprovalPrompt {
    ApprovalPrompt {
        subject: CallSubject {
            call_id: "c1".into(),
            name: "fs__write_file".into(),
            server: ServerId::new("fs"),
            tool: "write_file".into(),
            args: json!({"content": "word ".repeat(200_000), "path": "/tmp/x"}),
            provenance: Vec::new(),
        },
        reason: "mode: ask".into(),
        description: "Write a file.".into(),
        annotations: None,
        annotations_believed: false,
        drift_diff: None,
    }
}

fn bench_approval(c: &mut Criterion) {
    c.bench_function("open an approval with a 1 MB argument", |b| {
        b.iter(|| {
            let mut app = App::new(SessionInfo::default());
            app.on_event(&Event::ApprovalRequested(black_box(big_prompt())));
            app
        })
    });
    let mut app = App::new(SessionInfo::default());
    app.on_event(&Event::ApprovalRequested(big_prompt()));
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap_or_else(|_| unreachable!());
    c.bench_function("draw the approval, 1 MB argument collapsed, 80x24", |b| {
        b.iter(|| {
            let _ = terminal.draw(|f| app.render(black_box(f)));
        })
    });
    app.on_key(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::NONE));
    c.bench_function("draw the approval, 1 MB argument whole, 80x24", |b| {
        b.iter(|| {
            let _ = terminal.draw(|f| app.render(black_box(f)));
        })
    });
}

criterion_group!(benches, bench, bench_approval);
criterion_main!(benches);
