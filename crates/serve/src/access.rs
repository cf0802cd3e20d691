//! Who is asking, and whether the request may do anything at all. Every request passes
//! [`guard`] first: its `Host` must be one this service answers to and its `Origin`, when
//! sent, must be this service's own (DNS rebinding and cross-site requests stop here, before
//! any credential is looked at: the MCP Inspector's CVE-2025-49596 was an unauthenticated
//! local control channel a web page could reach). `/api` then needs a caller: an API token
//! (`Authorization: Bearer mhk_…`) or a browser sign-in cookie, which for any state-changing
//! method also needs its CSRF token in `X-CSRF-Token`. Each caller has a request budget.
//! Every refusal is answered without detail and logged (never with a token or body).

use crate::AppState;
use crate::users::User;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

pub const SESSION_COOKIE: &str = "mh_session";
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The caller of an `/api` request, as handlers receive it.
#[derive(Clone, Debug)]
pub struct Caller {
    pub user: User,
    /// The CSRF token of a browser sign-in (`None` for an API token).
    pub csrf: Option<String>,
}

/// What the service answers to: the `Host` values and `Origin`s of its own pages.
#[derive(Clone, Debug)]
pub struct Origins {
    pub hosts: Vec<String>,
    pub origins: Vec<String>,
}

impl Origins {
    /// The hosts and origins of `public_url` and, for a loopback listener, the loopback
    /// names of its port.
    pub fn for_service(public_url: &str, listen: std::net::SocketAddr) -> Self {
        let mut hosts = Vec::new();
        let mut origins = Vec::new();
        if let Some(rest) = public_url.split_once("://").map(|(_, r)| r) {
            let host = rest
                .split('/')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            hosts.push(host);
            origins.push(public_url.trim_end_matches('/').to_ascii_lowercase());
        }
        if listen.ip().is_loopback() {
            let port = listen.port();
            for name in ["127.0.0.1", "localhost", "[::1]"] {
                hosts.push(format!("{name}:{port}"));
                origins.push(format!("http://{name}:{port}"));
            }
        }
        hosts.sort();
        hosts.dedup();
        origins.sort();
        origins.dedup();
        Self { hosts, origins }
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_ascii_lowercase);
        host.is_some_and(|h| self.hosts.contains(&h))
    }

    fn origin_ok(&self, headers: &HeaderMap) -> bool {
        match headers.get(header::ORIGIN).map(|o| o.to_str()) {
            None => true,
            Some(Ok(o)) => self.origins.contains(&o.to_ascii_lowercase()),
            Some(Err(_)) => false,
        }
    }
}

/// Requests per caller: a bucket of `burst` refilled at `per_second`.
pub struct RateLimit {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimit {
    pub fn new(per_second: f64, burst: f64) -> Self {
        Self {
            per_second,
            burst,
            buckets: Mutex::default(),
        }
    }

    fn take(&self, who: &str) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let (tokens, at) = buckets.entry(who.to_string()).or_insert((self.burst, now));
        *tokens = (*tokens + at.elapsed().as_secs_f64() * self.per_second).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The session cookie's name. With `Secure` it carries the `__Host-` prefix: a browser
/// then keeps it only as set by this very host, secure, for `Path=/` and no `Domain`, so a
/// sibling subdomain cannot plant a session cookie of its choosing (cookie tossing). A
/// cookie under the plain name is then not read at all.
pub fn session_cookie_name(secure: bool) -> &'static str {
    if secure {
        HOST_SESSION_COOKIE
    } else {
        SESSION_COOKIE
    }
}

const HOST_SESSION_COOKIE: &str = "__Host-mh_session";

/// The session cookie's value, if the request carries one under this service's name.
pub fn session_cookie(headers: &HeaderMap, secure: bool) -> Option<String> {
    crate::signin::cookie(headers, session_cookie_name(secure))
}

pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// Equal in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Paths a load balancer probes by address, without this service's host name.
fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz")
}

/// Characters of a refused request's path that are logged.
const MAX_LOGGED_PATH: usize = 200;

/// Requests a second, across everyone, to the pages that write before anyone has signed in
/// (starting a sign-in, a callback), in bursts of five times as many.
pub const ANONYMOUS_PER_SECOND: f64 = 20.0;

/// Refuses, logs, and counts a request.
pub async fn refuse(
    state: &AppState,
    user: Option<&User>,
    method: &Method,
    path: &str,
    status: StatusCode,
    why: &str,
) -> Response {
    state.hub.metrics.refused();
    // A path is the caller's text: only its start is kept.
    let path: String = path.chars().take(MAX_LOGGED_PATH).collect();
    tracing::warn!(user = user.map(|u| u.name.as_str()), %method, path, status = status.as_u16(), "refused: {why}");
    // A signed-in caller's refusal goes into the refusal log (an account probing another's
    // objects is what an admin must see). A caller without a credential costs the database
    // nothing: anyone can send those, as fast as they like; the warning and the count have them.
    if user.is_some() {
        // The refusal is answered even if it cannot be recorded; the warning above has it.
        let _ = state
            .hub
            .db
            .log_refusal(user, method.as_str(), &path, status.as_u16(), why)
            .await;
    }
    let body = serde_json::json!({ "error": status.canonical_reason().unwrap_or("refused") });
    (status, axum::Json(body)).into_response()
}

/// Runs before every route; every answer says its content type is not to be sniffed (a
/// stored result served as text must never be run as a page).
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut response = checked(state, request, next).await;
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    response
}

async fn checked(state: AppState, mut request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let headers = request.headers();
    if !is_probe(&path) && !state.origins.host_ok(headers) {
        return refuse(
            &state,
            None,
            &method,
            &path,
            StatusCode::MISDIRECTED_REQUEST,
            "unknown Host",
        )
        .await;
    }
    if !state.origins.origin_ok(headers) {
        return refuse(
            &state,
            None,
            &method,
            &path,
            StatusCode::FORBIDDEN,
            "foreign Origin",
        )
        .await;
    }
    if !path.starts_with("/api/") {
        // The sign-in pages write (a sign-in under way, a session) for callers nobody knows
        // yet: they share one budget, so a flood of them cannot flood the database.
        let writes = matches!(
            path.as_str(),
            "/signin" | "/auth/login" | "/auth/callback" | "/oauth/callback"
        );
        if writes && !state.anonymous.take("anonymous") {
            return refuse(
                &state,
                None,
                &method,
                &path,
                StatusCode::TOO_MANY_REQUESTS,
                "the sign-in budget is spent",
            )
            .await;
        }
        return next.run(request).await;
    }
    let caller = match caller(&state, headers).await {
        Ok(Some(c)) => c,
        Ok(None) => {
            return refuse(
                &state,
                None,
                &method,
                &path,
                StatusCode::UNAUTHORIZED,
                "no valid credential",
            )
            .await;
        }
        Err(e) => {
            tracing::error!("cannot check a credential: {e}");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
    };
    if let Some(expected) = &caller.csrf {
        let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        if !is_safe(&method) && !sent.is_some_and(|s| same_secret(s, expected)) {
            return refuse(
                &state,
                Some(&caller.user),
                &method,
                &path,
                StatusCode::FORBIDDEN,
                "missing or wrong CSRF token",
            )
            .await;
        }
    }
    if !state.limits.take(&caller.user.id) {
        return refuse(
            &state,
            Some(&caller.user),
            &method,
            &path,
            StatusCode::TOO_MANY_REQUESTS,
            "request budget spent",
        )
        .await;
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

async fn caller(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<Caller>, crate::db::DbError> {
    if let Some(token) = bearer(headers) {
        let user = state.hub.db.user_for_token(token).await?;
        return Ok(user.map(|user| Caller { user, csrf: None }));
    }
    let Some(cookie) = session_cookie(headers, state.secure_cookies) else {
        return Ok(None);
    };
    let found = state.hub.db.web_session(&cookie).await?;
    Ok(found.map(|(user, csrf)| Caller {
        user,
        csrf: Some(csrf),
    }))
}

/// The `Set-Cookie` of a new browser sign-in.
pub fn session_set_cookie(value: &str, secure: bool) -> String {
    session_cookie_header(value, crate::users::WEB_SESSION_MS / 1000, secure)
}

/// The `Set-Cookie` that ends a browser sign-in (the same attributes, or the browser keeps
/// a `__Host-` cookie).
pub fn session_clear_cookie(secure: bool) -> String {
    session_cookie_header("", 0, secure)
}

fn session_cookie_header(value: &str, max_age: i64, secure: bool) -> String {
    let name = session_cookie_name(secure);
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_the_services_own_host_and_origin_pass() {
        let o = Origins::for_service("http://127.0.0.1:8080", "127.0.0.1:8080".parse().unwrap());
        assert!(o.host_ok(&headers(&[("host", "127.0.0.1:8080")])));
        assert!(o.host_ok(&headers(&[("host", "localhost:8080")])));
        // A rebinding page's request carries its own name.
        assert!(!o.host_ok(&headers(&[("host", "evil.example:8080")])));
        assert!(!o.host_ok(&headers(&[])));
        assert!(o.origin_ok(&headers(&[])));
        assert!(o.origin_ok(&headers(&[("origin", "http://127.0.0.1:8080")])));
        assert!(!o.origin_ok(&headers(&[("origin", "http://evil.example")])));
        assert!(!o.origin_ok(&headers(&[("origin", "null")])));
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; mh_session=xyz; b=2")]);
        assert_eq!(session_cookie(&h, false).as_deref(), Some("xyz"));
        assert_eq!(
            session_cookie(&headers(&[("cookie", "mh_sessionx=1")]), false),
            None
        );
        // Secure: only the `__Host-` cookie counts; a plain one (planted by a sibling
        // subdomain, say) is not read.
        assert_eq!(session_cookie(&h, true), None);
        let h = headers(&[("cookie", "mh_session=planted; __Host-mh_session=real")]);
        assert_eq!(session_cookie(&h, true).as_deref(), Some("real"));
    }

    #[test]
    fn a_spent_budget_refuses_until_it_refills() {
        let limit = RateLimit::new(0.0, 2.0);
        assert!(limit.take("u"));
        assert!(limit.take("u"));
        assert!(!limit.take("u"));
        assert!(limit.take("v"), "each caller has its own bucket");
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
