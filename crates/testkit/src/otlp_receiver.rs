//! A local OTLP/HTTP trace receiver (JSON encoding): it accepts `POST /v1/traces` on
//! 127.0.0.1, answers 200, and keeps every span it was sent, flattened out of the
//! resource and scope wrappers, for a test to look at.

use serde_json::Value;
use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct OtlpReceiver {
    /// The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub endpoint: String,
    spans: Arc<Mutex<Vec<Value>>>,
    resources: Arc<Mutex<Vec<Value>>>,
}

impl OtlpReceiver {
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let spans = Arc::new(Mutex::new(Vec::new()));
        let resources = Arc::new(Mutex::new(Vec::new()));
        let (kept, kept_resources) = (spans.clone(), resources.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (kept, kept_resources) = (kept.clone(), kept_resources.clone());
                std::thread::spawn(move || serve(stream, &kept, &kept_resources));
            }
        });
        Ok(Self {
            endpoint,
            spans,
            resources,
        })
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Value> {
        self.spans.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The `resource` of every batch received so far.
    pub fn resources(&self) -> Vec<Value> {
        self.resources.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The spans once `done` holds for them, or what arrived by `deadline`.
    pub fn wait_for(&self, deadline: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let until = Instant::now() + deadline;
        loop {
            let spans = self.spans();
            if done(&spans) || Instant::now() >= until {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn serve(mut stream: std::net::TcpStream, kept: &Mutex<Vec<Value>>, resources: &Mutex<Vec<Value>>) {
    let (head, body) = crate::read_http_request(&mut stream);
    let ok = head.starts_with("post /v1/traces");
    if ok && let Ok(body) = serde_json::from_slice::<Value>(&body) {
        for rs in body["resourceSpans"].as_array().into_iter().flatten() {
            if let Ok(mut r) = resources.lock() {
                r.push(rs["resource"].clone());
            }
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                if let Ok(mut k) = kept.lock() {
                    k.extend(ss["spans"].as_array().into_iter().flatten().cloned());
                }
            }
        }
    }
    let (status, body) = if ok {
        ("200 OK", "{}")
    } else {
        ("404 Not Found", "")
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
