//! Signing a user in to a remote MCP server from the web page. The page asks
//! (`POST /api/servers/{name}/signin`); the host runs the server's OAuth flow for that user,
//! with the user's own sealed vault, and the authorization server's redirect comes back to
//! the host's own `/oauth/callback`, which hands it to the flow waiting on that `state`. The
//! callback must come from the browser that asked (a `Lax` cookie carries the state), so a
//! link cannot plant someone else's authorization in a user's account. When the flow ends,
//! the user's session is restarted so the next turn connects with the new credential.

use crate::AppState;
use crate::access::{Caller, refuse};
use crate::api::ApiError;
use axum::extract::{Extension, OriginalUri, Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use mcp_host_auth::{
    AuthSettings, AuthorizationResponse, Authorizer, Grant, OAuth, OAuthError, VaultCredentialStore,
};
use mcp_host_config::{ServerReadiness, Transport};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long a sign-in waits for the person at the authorization server.
const WAIT_FOR_PERSON: Duration = Duration::from_secs(600);
/// How long the page's request waits for the flow to name the authorization URL.
const WAIT_FOR_URL: Duration = Duration::from_secs(30);
const BINDING_COOKIE: &str = "mh_remote";

/// Flows waiting for their redirect, by `state`: the user, and where the redirect goes.
#[derive(Default)]
pub struct RemoteSignins {
    waiting: Mutex<HashMap<String, (String, oneshot::Sender<String>)>>,
    /// The flow under way per (user, server): one each, so a user cannot pile them up; a
    /// new one replaces (ends) the old, which a closed tab may have left waiting.
    flows: Mutex<HashMap<(String, String), (u64, tokio::task::AbortHandle)>>,
    started: std::sync::atomic::AtomicU64,
}

/// Frees a flow's place when the flow ends, however it ends, unless a newer flow took it.
struct FlowPlace {
    signins: Arc<RemoteSignins>,
    key: (String, String),
    number: u64,
}

impl Drop for FlowPlace {
    fn drop(&mut self) {
        if let Ok(mut f) = self.signins.flows.lock()
            && f.get(&self.key).is_some_and(|(n, _)| *n == self.number)
        {
            f.remove(&self.key);
        }
    }
}

struct WebAuthorizer {
    signins: Arc<RemoteSignins>,
    user: String,
    /// The authorization URL, for the page.
    url: Mutex<Option<oneshot::Sender<String>>>,
}

fn state_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

impl Authorizer for WebAuthorizer {
    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            let state = state_of(url).ok_or_else(|| {
                OAuthError::Authorization("the authorization URL has no state".into())
            })?;
            let (tx, rx) = oneshot::channel();
            if let Ok(mut w) = self.signins.waiting.lock() {
                // Flows that ended (replaced, timed out) leave nothing waiting behind.
                w.retain(|_, (_, waiting)| !waiting.is_closed());
                w.insert(state.clone(), (self.user.clone(), tx));
            }
            if let Some(page) = self.url.lock().ok().and_then(|mut u| u.take()) {
                let _ = page.send(url.to_string());
            }
            let redirect = tokio::time::timeout(WAIT_FOR_PERSON, rx).await;
            if let Ok(mut w) = self.signins.waiting.lock() {
                w.remove(&state);
            }
            match redirect {
                Ok(Ok(location)) => AuthorizationResponse::from_redirect(&location),
                _ => Err(OAuthError::Authorization(
                    "nobody finished the sign-in in time".into(),
                )),
            }
        })
    }
}

/// `POST /api/servers/{name}/signin`: starts the flow; answers with the URL to open.
pub async fn start(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    method: Method,
    uri: OriginalUri,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let user = caller.user.clone();
    let visible = state.hub.db.may_enable(&user, &name).await?;
    let entry = (state.hub.service.catalogue.entries.iter()).find(|e| e.name == name);
    let spec = match entry.map(|e| &e.readiness) {
        Some(ServerReadiness::Start(spec)) if visible => spec.clone(),
        _ => {
            return Ok(refuse(
                &state,
                Some(&user),
                &method,
                uri.path(),
                StatusCode::NOT_FOUND,
                "no such server for this user",
            )
            .await);
        }
    };
    let Transport::Http { url, headers, .. } = &spec.transport else {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("`{name}` is a local server; OAuth is for remote servers"),
        ));
    };
    let key = (user.id.clone(), name.clone());
    let number = (state.signins.started).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let place = FlowPlace {
        signins: state.signins.clone(),
        key: key.clone(),
        number,
    };
    let (url_tx, url_rx) = oneshot::channel();
    let authorizer = Arc::new(WebAuthorizer {
        signins: state.signins.clone(),
        user: user.id.clone(),
        url: Mutex::new(Some(url_tx)),
    });
    let redirect_uri = format!("{}/oauth/callback", state.public_url.trim_end_matches('/'));
    let bad = |e: OAuthError| ApiError(StatusCode::BAD_GATEWAY, e.to_string());
    let settings = AuthSettings::new(redirect_uri, Grant::AuthorizationCode(authorizer))
        .configured(spec.oauth.as_deref())
        .map_err(bad)?;
    let vault = (state.hub.service).vault(&user, &state.hub.db.user_data(&user.id));
    let store = VaultCredentialStore::new(vault, url).map_err(bad)?;
    let settings = settings.with_stored_secret(&store).await.map_err(bad)?;
    let store = store.with_client_secret(settings.client_secret.clone());
    let oauth = OAuth::with_store(url, settings, Arc::new(store))
        .await
        .map_err(bad)?;
    let (url, headers, hub) = (url.clone(), headers.clone(), state.hub.clone());
    let flow = tokio::spawn(async move {
        let _place = place;
        let limit = WAIT_FOR_PERSON + Duration::from_secs(60);
        let done = mcp_host_engine::host::sign_in(&url, &headers, &oauth, limit).await;
        if let Err(e) = &done {
            tracing::warn!(user = %user.name, "a remote sign-in failed: {e}");
        }
        // The next turn's session connects with whatever is stored now.
        hub.restart_user(&user).await;
        done.map(|()| oauth.rounds())
    });
    if let Ok(mut flows) = state.signins.flows.lock()
        && let Some((_, older)) = flows.insert(key, (number, flow.abort_handle()))
    {
        older.abort();
    }
    tokio::select! {
        Ok(location) = url_rx => {
            let binding = state_of(&location).unwrap_or_default();
            let secure = if state.secure_cookies { "; Secure" } else { "" };
            let cookie = format!("{BINDING_COOKIE}={binding}; HttpOnly; SameSite=Lax; Path=/oauth; Max-Age=600{secure}");
            Ok(([(header::SET_COOKIE, cookie)], axum::Json(json!({ "url": location }))).into_response())
        }
        done = tokio::time::timeout(WAIT_FOR_URL, flow) => match done {
            Ok(Ok(Ok(_))) => Ok(axum::Json(json!({ "signed_in": true })).into_response()),
            Ok(Ok(Err(e))) => Err(ApiError(StatusCode::BAD_GATEWAY, format!("cannot sign in to `{name}`: {e}"))),
            _ => Err(ApiError(StatusCode::GATEWAY_TIMEOUT, format!("`{name}` did not start a sign-in in time"))),
        },
    }
}

/// `GET /oauth/callback`: the authorization server sends the browser back here.
pub async fn callback(
    State(state): State<AppState>,
    method: Method,
    uri: OriginalUri,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let sent_state = q.get("state").cloned().unwrap_or_default();
    let binding = crate::signin::cookie(&headers, BINDING_COOKIE);
    let waiting = (state.signins.waiting.lock().ok()).and_then(|mut w| {
        if binding.as_deref() == Some(sent_state.as_str()) {
            w.remove(&sent_state)
        } else {
            None
        }
    });
    let Some((_, reply)) = waiting else {
        return refuse(
            &state,
            None,
            &method,
            uri.path(),
            StatusCode::FORBIDDEN,
            "a remote sign-in callback nobody in this browser started",
        )
        .await;
    };
    let query = uri.query().unwrap_or_default();
    let location = format!(
        "{}/oauth/callback?{query}",
        state.public_url.trim_end_matches('/')
    );
    if reply.send(location).is_err() {
        return (
            StatusCode::GONE,
            "This sign-in was replaced by a newer one or timed out. Start it again from mcp-host.",
        )
            .into_response();
    }
    let clear = format!("{BINDING_COOKIE}=; HttpOnly; SameSite=Lax; Path=/oauth; Max-Age=0");
    (
        [
            (header::SET_COOKIE, clear),
            (header::CONTENT_TYPE, "text/plain; charset=utf-8".into()),
        ],
        "Signed in. You can close this tab and go back to mcp-host.",
    )
        .into_response()
}
