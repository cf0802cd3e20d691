//! The five providers' stream decoders, end to end: the input (after a first byte that picks
//! the provider) is the body of a 200 answer from a loopback HTTP server, exactly what a
//! hostile or broken model endpoint could send. Nothing may panic or hang, and the text the
//! person saw streamed live is the text the response keeps.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_models::{
    Anthropic, Gemini, Message, ModelRequest, ModelResponse, Ollama, OpenAiCompatible,
    OpenAiResponses, Provider, ProviderError,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, OnceLock};

/// The body the server answers with next, and the server's address.
struct Server {
    body: Arc<Mutex<Vec<u8>>>,
    url: String,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("loopback");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let body: Arc<Mutex<Vec<u8>>> = Arc::default();
        let serving = body.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut request = vec![0; length];
                let _ = reader.read_exact(&mut request);
                let answer = serving.lock().expect("body").clone();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    answer.len()
                );
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(&answer);
            }
        });
        Server { body, url }
    })
}

/// One runtime and one client for every input (building them per input would be most of
/// the time); no connection is kept between inputs.
fn runtime() -> &'static (tokio::runtime::Runtime, reqwest::Client) {
    static RT: OnceLock<(tokio::runtime::Runtime, reqwest::Client)> = OnceLock::new();
    RT.get_or_init(|| {
        mcp_host_client::install_crypto_provider();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .expect("client");
        (rt, client)
    })
}

async fn complete(
    which: u8,
    url: &str,
    request: &ModelRequest,
) -> Result<ModelResponse, ProviderError> {
    let client = runtime().1.clone();
    let key = Some("k".to_string());
    match which % 5 {
        0 => {
            OpenAiCompatible::new(client, url, key)
                .complete(request)
                .await
        }
        1 => Anthropic::new(client, url, key).complete(request).await,
        2 => {
            OpenAiResponses::new(client, url, key)
                .complete(request)
                .await
        }
        3 => Gemini::new(client, url, key).complete(request).await,
        _ => Ollama::new(client, url, key).complete(request).await,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let server = server();
    *server.body.lock().expect("body") = body.to_vec();
    runtime().0.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut request =
            ModelRequest::new("m", vec![Message::User { text: "hi".into() }], Vec::new());
        request.deltas = Some(tx);
        let answer = complete(which, &server.url, &request).await;
        drop(request);
        let mut shown = String::new();
        while let Some(piece) = rx.recv().await {
            shown.push_str(&piece);
        }
        if let Ok(response) = answer {
            assert_eq!(
                shown, response.text,
                "streamed text differs from the kept text"
            );
        }
    });
});
