//! The five providers' stream decoders, end to end: the input (after a first byte that picks
//! the provider) is the body of a 200 answer from a loopback HTTP server, exactly what a
//! hostile or broken model endpoint could send. Nothing may panic or hang, and the text the
//! person saw streamed live is the text the response keeps.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_fuzz::Reply;
use mcp_host_models::{
    Anthropic, Gemini, Message, ModelRequest, ModelResponse, Ollama, OpenAiCompatible,
    OpenAiResponses, Provider, ProviderError,
};
use std::sync::{Arc, Mutex, OnceLock};

/// The body the server answers with next, and the server's address.
struct Server {
    body: Arc<Mutex<Vec<u8>>>,
    url: String,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let body: Arc<Mutex<Vec<u8>>> = Arc::default();
        let serving = body.clone();
        let url = mcp_host_fuzz::serve_loopback(move |_| Reply {
            status: 200,
            content_type: "text/event-stream",
            headers: String::new(),
            body: serving.lock().expect("body").clone(),
        });
        Server { body, url }
    })
}

async fn complete(
    which: u8,
    url: &str,
    request: &ModelRequest,
) -> Result<ModelResponse, ProviderError> {
    let client = mcp_host_fuzz::model_client().clone();
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
    mcp_host_fuzz::runtime().0.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut request =
            ModelRequest::new("m", vec![Message::User { text: "hi".into() }], Vec::new());
        request.deltas = Some(tx);
        // The server ends every body, so a provider still reading after seconds is stuck.
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            complete(which, &server.url, &request),
        )
        .await
        .expect("a provider kept reading a body that had ended");
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
