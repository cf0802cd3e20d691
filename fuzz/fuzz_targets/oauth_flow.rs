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
use mcp_host_fuzz::Reply;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, PingRequest, RequestId};
use rmcp::transport::streamable_http_client::StreamableHttpClient;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let serving = routes.clone();
        let metadata_url: Arc<OnceLock<String>> = Arc::default();
        let url = metadata_url.clone();
        let base = mcp_host_fuzz::serve_loopback(move |request| {
            let mut routes = serving.lock().expect("routes");
            let json = "application/json";
            if request.path.starts_with("/mcp") {
                return match &request.bearer {
                    Some(b) => {
                        routes.bearers.push(b.clone());
                        let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
                        Reply {
                            status: 200,
                            content_type: json,
                            headers: String::new(),
                            body: ok.to_string().into_bytes(),
                        }
                    }
                    None => Reply {
                        status: 401,
                        content_type: json,
                        headers: format!(
                            "www-authenticate: Bearer resource_metadata=\"{}\"\r\n",
                            url.get().map(String::as_str).unwrap_or_default()
                        ),
                        body: Vec::new(),
                    },
                };
            }
            let path = request.path.split('?').next().unwrap_or("");
            let (status, body) = routes
                .bodies
                .get(path)
                .cloned()
                .unwrap_or((404, Vec::new()));
            Reply {
                status,
                content_type: json,
                headers: String::new(),
                body,
            }
        });
        let _ = metadata_url.set(format!("{base}/.well-known/oauth-protected-resource"));
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
    let (rt, http) = mcp_host_fuzz::runtime();
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
