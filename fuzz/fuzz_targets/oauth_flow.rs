//! A machine sign-in (`client_credentials`) against an authorization server that says what
//! the input says: protected-resource metadata, authorization-server metadata and the token
//! response are built from structured input (issuers that match or not, endpoints on the
//! server's origin, elsewhere, private, not URLs; token fields of the wrong type, negative
//! lifetimes, garbage bodies), served from loopback. Nothing may panic or hang, and a
//! message that went through carried the very token the token endpoint issued.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mcp_host_auth::{AuthSettings, Grant, OAuth};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, PingRequest, RequestId};
use rmcp::transport::streamable_http_client::StreamableHttpClient;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

#[derive(Arbitrary, Debug, Clone)]
enum Place {
    Own(String),
    OwnRoot,
    OtherLoopback,
    Private,
    Https,
    NotAUrl(String),
    Missing,
}

#[derive(Arbitrary, Debug, Clone)]
enum Field {
    Text(String),
    Number(i64),
    Null,
    Missing,
}

#[derive(Arbitrary, Debug, Clone)]
struct Input {
    resource_metadata: bool,
    resource: Place,
    servers: Vec<Place>,
    issuer: Place,
    token_endpoint: Place,
    authorization_endpoint: Place,
    grants: Option<Vec<String>>,
    auth_methods: Option<Vec<String>>,
    token_status: u8,
    access_token: Field,
    token_type: Field,
    expires_in: Field,
    refresh_token: Field,
    scope: Field,
    raw_token_body: Option<Vec<u8>>,
}

/// What the loopback server answers, by path, and the bearer tokens it was sent.
#[derive(Default)]
struct Routes {
    bodies: HashMap<String, (u16, Vec<u8>)>,
    issued: Option<String>,
    bearers: Vec<String>,
}

struct Server {
    routes: Arc<Mutex<Routes>>,
    base: String,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("loopback");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let serving = routes.clone();
        let metadata_url = format!("{base}/.well-known/oauth-protected-resource");
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                let mut first = String::new();
                let _ = reader.read_line(&mut first);
                let path = first.split(' ').nth(1).unwrap_or("/").to_string();
                let (mut length, mut bearer) = (0usize, None);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if lower.starts_with("authorization: bearer ") {
                        bearer = Some(line[22..].trim().to_string());
                    }
                }
                let mut body = vec![0; length.min(1 << 20)];
                let _ = reader.read_exact(&mut body);
                let mut routes = serving.lock().expect("routes");
                let (status, answer, extra) = if path.starts_with("/mcp") {
                    match bearer {
                        Some(b) => {
                            routes.bearers.push(b);
                            let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
                            (200, ok.to_string().into_bytes(), String::new())
                        }
                        None => (
                            401,
                            Vec::new(),
                            format!("www-authenticate: Bearer resource_metadata=\"{metadata_url}\"\r\n"),
                        ),
                    }
                } else {
                    let path = path.split('?').next().unwrap_or("").to_string();
                    let (s, b) = routes.bodies.get(&path).cloned().unwrap_or((404, Vec::new()));
                    (s, b, String::new())
                };
                drop(routes);
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n",
                    answer.len()
                );
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(&answer);
            }
        });
        Server { routes, base }
    })
}

fn place(p: &Place, base: &str) -> Option<Value> {
    Some(json!(match p {
        Place::Own(path) => format!("{base}/{}", path.trim_start_matches('/')),
        Place::OwnRoot => base.to_string(),
        Place::OtherLoopback => "http://127.0.0.2:9/as".to_string(),
        Place::Private => "http://10.255.255.1/as".to_string(),
        Place::Https => "https://localhost:1/as".to_string(),
        Place::NotAUrl(s) => s.clone(),
        Place::Missing => return None,
    }))
}

fn field(f: &Field) -> Option<Value> {
    match f {
        Field::Text(s) => Some(json!(s)),
        Field::Number(n) => Some(json!(n)),
        Field::Null => Some(Value::Null),
        Field::Missing => None,
    }
}

fn object(fields: Vec<(&str, Option<Value>)>) -> Vec<u8> {
    let map: serde_json::Map<String, Value> = (fields.into_iter())
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect();
    Value::Object(map).to_string().into_bytes()
}

fn routes(input: &Input, base: &str) -> HashMap<String, (u16, Vec<u8>)> {
    let mut r = HashMap::new();
    if input.resource_metadata {
        let servers: Vec<Value> = input
            .servers
            .iter()
            .take(3)
            .filter_map(|p| place(p, base))
            .collect();
        let prm = object(vec![
            ("resource", place(&input.resource, base)),
            ("authorization_servers", Some(json!(servers))),
        ]);
        r.insert(
            "/.well-known/oauth-protected-resource".into(),
            (200, prm.clone()),
        );
        r.insert(
            "/.well-known/oauth-protected-resource/mcp".into(),
            (200, prm),
        );
    }
    let metadata = object(vec![
        ("issuer", place(&input.issuer, base)),
        (
            "authorization_endpoint",
            place(&input.authorization_endpoint, base),
        ),
        ("token_endpoint", place(&input.token_endpoint, base)),
        (
            "grant_types_supported",
            input.grants.as_ref().map(|g| json!(g)),
        ),
        (
            "token_endpoint_auth_methods_supported",
            input.auth_methods.as_ref().map(|m| json!(m)),
        ),
    ]);
    for p in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        r.insert(p.into(), (200, metadata.clone()));
    }
    let status = [200, 200, 200, 400, 401, 500][usize::from(input.token_status) % 6];
    let token = match &input.raw_token_body {
        Some(raw) => raw.clone(),
        None => object(vec![
            ("access_token", field(&input.access_token)),
            ("token_type", field(&input.token_type)),
            ("expires_in", field(&input.expires_in)),
            ("refresh_token", field(&input.refresh_token)),
            ("scope", field(&input.scope)),
        ]),
    };
    if let Some(Value::String(path)) = place(&input.token_endpoint, base) {
        if let Some(own) = path.strip_prefix(base) {
            let own = own.split('?').next().unwrap_or("").to_string();
            r.insert(
                if own.is_empty() { "/".into() } else { own },
                (status, token),
            );
        }
    }
    r
}

/// One runtime and one client for every input; no connection is kept between inputs.
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
            .connect_timeout(Duration::from_millis(200))
            .timeout(Duration::from_secs(2))
            .build()
            .expect("client");
        (rt, client)
    })
}

fuzz_target!(|input: Input| {
    let server = server();
    {
        let mut r = server.routes.lock().expect("routes");
        r.bodies = routes(&input, &server.base);
        r.issued = match (&input.raw_token_body, &input.access_token) {
            (None, Field::Text(t)) => Some(t.clone()),
            _ => None,
        };
        r.bearers.clear();
    }
    let (rt, http) = runtime();
    rt.block_on(async {
        let http = http.clone();
        let mut settings = AuthSettings::new("http://127.0.0.1/callback", Grant::ClientSecret);
        settings.client_id = Some("client".into());
        settings.client_secret = Some("secret".into());
        let url = format!("{}/mcp", server.base);
        let Ok(oauth) = OAuth::new(&url, settings).await else {
            return;
        };
        let client = oauth.client(http);
        let ping: ClientJsonRpcMessage = JsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            RequestId::Number(1),
        );
        let sent = client
            .post_message(url.as_str().into(), ping, None, None, HashMap::new())
            .await;
        let r = server.routes.lock().expect("routes");
        if sent.is_ok() {
            for b in &r.bearers {
                assert_eq!(
                    Some(b),
                    r.issued.as_ref(),
                    "a bearer the token endpoint never issued"
                );
            }
        }
    });
});
