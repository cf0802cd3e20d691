//! The routes. Handlers are thin: they check that what a request names belongs to its
//! caller (answering 404 otherwise, logged, so ids cannot be probed), then call the hub or
//! the database. The guard in `access` has already checked Host, Origin, credential, CSRF
//! and budget.

use crate::access::{self, Caller, refuse};
use crate::hub::{Answer, HubError};
use crate::metrics::Gauges;
use crate::owned::Owned;
use crate::users::{NarrowList, User};
use crate::{AppState, page, remote, signin, sse};
use axum::extract::{DefaultBodyLimit, Extension, OriginalUri, Path, Query, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router, middleware};
use mcp_host_registry::search::{DocText, Index};
use serde::Deserialize;
use serde_json::{Value, json};

pub fn router(state: AppState, max_body: usize) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/assets/{file}", get(page::asset))
        .route("/openapi.json", get(page::openapi))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/signin", get(signin::single_user))
        .route("/auth/methods", get(signin::methods))
        .route("/auth/login", get(signin::login))
        .route("/auth/callback", get(signin::callback))
        .route("/api/me", get(me))
        .route("/api/signout", post(signin::signout))
        .route("/api/tokens", get(tokens).post(create_token))
        .route("/api/tokens/{id}", delete(revoke_token))
        .route(
            "/api/conversations",
            get(conversations).post(create_conversation),
        )
        .route("/api/conversations/{id}", get(conversation))
        .route("/api/conversations/{id}/turns", post(turn))
        .route("/api/conversations/{id}/answers", post(answer))
        .route("/api/conversations/{id}/interrupt", post(interrupt))
        .route("/api/conversations/{id}/events", get(sse::events))
        .route("/api/servers", get(servers))
        .route("/api/servers/{name}", put(set_server))
        .route("/api/servers/{name}/signin", post(remote::start))
        .route("/oauth/callback", get(remote::callback))
        .route("/api/tools", get(tools))
        .route("/api/rules", get(rules).post(add_rule))
        .route("/api/results/{handle}", get(result))
        .route("/api/admin/users", get(admin_users).post(admin_add_user))
        .route("/api/admin/servers/{name}/access", put(admin_access))
        .route("/api/admin/refusals", get(admin_refusals))
        .layer(middleware::from_fn_with_state(state.clone(), access::guard))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// A handler's failure as the client sees it: a status and one sentence.
pub struct ApiError(pub StatusCode, pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<crate::db::DbError> for ApiError {
    fn from(e: crate::db::DbError) -> Self {
        if let crate::db::DbError::Conflict(why) = e {
            return Self(StatusCode::CONFLICT, why);
        }
        tracing::error!("database: {e}");
        Self(
            StatusCode::SERVICE_UNAVAILABLE,
            "the service database is unavailable".into(),
        )
    }
}

impl From<HubError> for ApiError {
    fn from(e: HubError) -> Self {
        let status = match &e {
            HubError::Draining | HubError::Stopped => StatusCode::SERVICE_UNAVAILABLE,
            HubError::Busy(_) => StatusCode::CONFLICT,
            HubError::NotWaiting => StatusCode::NOT_FOUND,
            HubError::Start(_) => StatusCode::INTERNAL_SERVER_ERROR,
            HubError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        Self(status, e.to_string())
    }
}

type ApiResult = Result<Response, ApiError>;

fn bad(why: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, why.into())
}

/// What a request names is not the caller's (or does not exist): 404, logged.
async fn not_yours(
    state: &AppState,
    caller: &Caller,
    method: &Method,
    uri: &OriginalUri,
    what: &str,
) -> Response {
    refuse(
        state,
        Some(&caller.user),
        method,
        uri.path(),
        StatusCode::NOT_FOUND,
        what,
    )
    .await
}

fn require_admin(caller: &Caller) -> Result<(), ApiError> {
    if caller.user.admin {
        Ok(())
    } else {
        Err(ApiError(
            StatusCode::FORBIDDEN,
            "this needs the admin role".into(),
        ))
    }
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.hub.draining.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining").into_response();
    }
    match state.hub.db.last_seq("").await {
        Ok(_) => "ready".into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response(),
    }
}

async fn metrics(
    State(state): State<AppState>,
    method: Method,
    uri: OriginalUri,
    headers: axum::http::HeaderMap,
) -> Response {
    if let Some(wanted) = &state.metrics_token {
        let presented = crate::access::bearer(&headers);
        if !presented.is_some_and(|p| crate::access::same_secret(wanted, p)) {
            return crate::access::refuse(
                &state,
                None,
                &method,
                uri.path(),
                StatusCode::UNAUTHORIZED,
                "no metrics token",
            )
            .await;
        }
    }
    let hub = &state.hub;
    let connections = hub
        .all_servers()
        .await
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect();
    let gauges = Gauges {
        active_users: hub.active_users().await,
        running_turns: hub.running_turns().await,
        connections,
        draining: hub.draining.is_cancelled(),
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        hub.metrics.render(&gauges),
    )
        .into_response()
}

async fn me(Extension(caller): Extension<Caller>) -> Json<Value> {
    Json(json!({
        "name": caller.user.name,
        "admin": caller.user.admin,
        "groups": caller.user.groups,
        "csrf": caller.csrf,
    }))
}

async fn tokens(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> ApiResult {
    Ok(Json(state.hub.db.tokens(&caller.user).await?).into_response())
}

#[derive(Deserialize)]
struct TokenBody {
    #[serde(default)]
    label: String,
    /// Absent: [`TOKEN_DAYS`]; `null`: until revoked.
    #[serde(default = "default_token_days")]
    expires_in_days: Option<u32>,
}

/// How long a token made without saying lasts: a leaked script token stops working by
/// itself.
pub const TOKEN_DAYS: u32 = 90;

fn default_token_days() -> Option<u32> {
    Some(TOKEN_DAYS)
}

async fn create_token(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<TokenBody>,
) -> ApiResult {
    let lifetime = body.expires_in_days.map(crate::users::days);
    let (id, token) = (state.hub.db)
        .create_token(&caller.user, &body.label, lifetime)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "token": token })),
    )
        .into_response())
}

async fn revoke_token(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    method: Method,
    uri: OriginalUri,
    Path(id): Path<String>,
) -> ApiResult {
    if state.hub.db.revoke_token(&caller.user, &id).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Ok(not_yours(&state, &caller, &method, &uri, "no such token of this user").await)
    }
}

async fn conversations(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    Ok(Json(state.hub.db.conversations(&caller.user).await?).into_response())
}

#[derive(Deserialize)]
struct NewConversation {
    #[serde(default)]
    title: String,
}

async fn create_conversation(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<NewConversation>,
) -> ApiResult {
    let title = if body.title.trim().is_empty() {
        "New conversation"
    } else {
        body.title.trim()
    };
    let title: String = title.chars().take(200).collect();
    let row = state
        .hub
        .db
        .create_conversation(&caller.user, &title)
        .await?;
    Ok((StatusCode::CREATED, Json(row)).into_response())
}

async fn conversation(State(state): State<AppState>, Owned { row, .. }: Owned) -> ApiResult {
    let turns: Vec<Value> = (state.hub.db.turns(&row.id).await?)
        .into_iter()
        .map(|(id, state)| json!({ "id": id, "state": state }))
        .collect();
    let last_event = state.hub.db.last_seq(&row.id).await?;
    Ok(Json(json!({ "id": row.id, "title": row.title, "created_ms": row.created_ms, "turns": turns, "last_event": last_event })).into_response())
}

#[derive(Deserialize)]
struct TurnBody {
    text: String,
}

/// Characters of one message a user may send.
const MAX_MESSAGE: usize = 100_000;

async fn turn(
    State(state): State<AppState>,
    Owned { caller, row, .. }: Owned,
    Json(body): Json<TurnBody>,
) -> ApiResult {
    if body.text.trim().is_empty() || body.text.chars().count() > MAX_MESSAGE {
        return Err(bad(format!("a message is 1 to {MAX_MESSAGE} characters")));
    }
    if row.title == "New conversation" {
        let title: String = body.text.trim().chars().take(60).collect();
        state.hub.db.set_title(&row.id, &title).await?;
    }
    let turn = state.hub.start_turn(&caller.user, &row, body.text).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "turn_id": turn }))).into_response())
}

async fn answer(
    State(state): State<AppState>,
    owned: Owned,
    Json(body): Json<Answer>,
) -> ApiResult {
    deliver(&state, &owned, body).await
}

async fn interrupt(State(state): State<AppState>, owned: Owned) -> ApiResult {
    deliver(&state, &owned, Answer::Interrupt).await
}

async fn deliver(state: &AppState, owned: &Owned, answer: Answer) -> ApiResult {
    match state
        .hub
        .answer(&owned.caller.user, &owned.row.id, answer)
        .await
    {
        Ok(()) => Ok(StatusCode::ACCEPTED.into_response()),
        Err(HubError::NotWaiting) => Ok(owned
            .refuse(state, "nothing of this user waits for that answer")
            .await),
        Err(e) => Err(e.into()),
    }
}

/// The catalogue as this user sees it: only the servers they may enable.
async fn visible_servers(state: &AppState, user: &User) -> Result<Vec<String>, ApiError> {
    let granted = state.hub.db.enableable(user).await?;
    Ok((state.hub.service.catalogue.entries.iter())
        .filter(|e| granted.contains(&e.name))
        .map(|e| e.name.clone())
        .collect())
}

/// How a catalogue server is reached, known before any session starts.
fn transport_of(state: &AppState, name: &str) -> &'static str {
    let entry = state
        .hub
        .service
        .catalogue
        .entries
        .iter()
        .find(|e| e.name == name);
    match entry.map(|e| &e.readiness) {
        Some(mcp_host_config::ServerReadiness::Start(spec)) => match spec.transport {
            mcp_host_config::Transport::Stdio { .. } => "stdio",
            mcp_host_config::Transport::Http {
                legacy_sse: true, ..
            } => "sse",
            mcp_host_config::Transport::Http { .. } => "http",
        },
        _ => "unusable (see the service log)",
    }
}

async fn servers(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> ApiResult {
    let state_ref = state.clone();
    let visible = visible_servers(&state, &caller.user).await?;
    let enabled = state.hub.db.enabled_servers(&caller.user).await?;
    let live = state.hub.live_servers(&caller.user).await;
    let rows: Vec<Value> = visible
        .iter()
        .map(|name| {
            let view = live
                .as_ref()
                .and_then(|(s, _)| s.iter().find(|v| &v.name == name));
            let on = enabled.contains(name);
            let state = match (on, view) {
                (false, _) => "disabled".to_string(),
                (true, Some(v)) => v.state.clone(),
                (true, None) => "stopped (starts at your next turn)".to_string(),
            };
            json!({ "name": name, "enabled": on, "state": state, "transport": transport_of(&state_ref, name), "view": view })
        })
        .collect();
    Ok(Json(json!({ "servers": rows, "session": live.is_some() })).into_response())
}

#[derive(Deserialize)]
struct ServerSwitch {
    enabled: bool,
}

async fn set_server(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    method: Method,
    uri: OriginalUri,
    Path(name): Path<String>,
    Json(body): Json<ServerSwitch>,
) -> ApiResult {
    if !visible_servers(&state, &caller.user).await?.contains(&name) {
        return Ok(not_yours(
            &state,
            &caller,
            &method,
            &uri,
            "no such server for this user",
        )
        .await);
    }
    let cap = state.hub.service.max_servers_per_user;
    if body.enabled {
        if !state.hub.db.enable_capped(&caller.user, &name, cap).await? {
            return Err(ApiError(
                StatusCode::CONFLICT,
                format!("at most {cap} servers may be enabled at once; disable one first"),
            ));
        }
    } else {
        state.hub.db.set_enabled(&caller.user, &name, false).await?;
    }
    // The session is made from the enabled set: the next turn starts one with the new set.
    state.hub.restart_user(&caller.user).await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct ToolQuery {
    #[serde(default)]
    q: String,
}

/// Tools a search returns at most.
const TOOL_HITS: usize = 20;

/// The caller's tools (of their live session), all of them or ranked for `q` by the
/// catalogue's own BM25 search (names weigh more than descriptions, identifiers split).
async fn tools(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<ToolQuery>,
) -> ApiResult {
    let tools = (state.hub.live_servers(&caller.user).await)
        .map(|(_, t)| t)
        .unwrap_or_default();
    if q.q.trim().is_empty() {
        return Ok(Json(tools).into_response());
    }
    let docs: Vec<DocText> = tools
        .iter()
        .map(|t| DocText {
            server: t.server.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            ..DocText::default()
        })
        .collect();
    let index = Index::build(&docs);
    let found: Vec<Value> = (index.search(&q.q, TOOL_HITS).into_iter())
        .filter_map(|(i, score)| Some(json!({ "tool": tools.get(i)?, "score": score })))
        .collect();
    Ok(Json(found).into_response())
}

async fn rules(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> ApiResult {
    let rows: Vec<Value> = (state.hub.db.user_rules(&caller.user).await?)
        .into_iter()
        .map(|(list, pattern)| json!({ "list": list, "pattern": pattern }))
        .collect();
    Ok(Json(rows).into_response())
}

#[derive(Deserialize)]
struct RuleBody {
    list: NarrowList,
    pattern: String,
}

/// A user's own rule: `deny` or `ask` (an `allow` does not parse), so it can only narrow.
async fn add_rule(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<RuleBody>,
) -> ApiResult {
    let pattern = body.pattern.trim();
    if pattern.is_empty() || pattern.len() > 500 {
        return Err(bad("a rule's pattern is 1 to 500 characters"));
    }
    state
        .hub
        .db
        .add_user_rule(&caller.user, body.list, pattern)
        .await?;
    state.hub.restart_user(&caller.user).await;
    Ok(StatusCode::CREATED.into_response())
}

/// A stored large result, from the caller's own store only.
async fn result(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    method: Method,
    uri: OriginalUri,
    Path(handle): Path<String>,
) -> ApiResult {
    let found = match state
        .hub
        .db
        .user_data(&caller.user.id)
        .store
        .get_result(&handle)
        .await
    {
        Ok(found) => found,
        // A malformed handle is simply not one of this user's.
        Err(mcp_host_store::StoreError::BadHandle(_)) => None,
        Err(e) => return Err(ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
    };
    match found {
        Some(text) => {
            Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
        }
        None => Ok(not_yours(
            &state,
            &caller,
            &method,
            &uri,
            "no such result of this user",
        )
        .await),
    }
}

async fn admin_users(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    require_admin(&caller)?;
    let users: Vec<Value> = (state.hub.db.users().await?)
        .into_iter()
        .map(|u| json!({ "name": u.name, "admin": u.admin, "groups": u.groups }))
        .collect();
    Ok(Json(users).into_response())
}

#[derive(Deserialize)]
struct NewUser {
    name: String,
    #[serde(default)]
    admin: bool,
    #[serde(default)]
    groups: Vec<String>,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
}

async fn admin_add_user(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<NewUser>,
) -> ApiResult {
    require_admin(&caller)?;
    if !valid_name(&body.name) || !body.groups.iter().all(|g| valid_name(g)) {
        return Err(bad("names and groups are 1 to 64 of A-Z a-z 0-9 - _ . @"));
    }
    let user = state
        .hub
        .db
        .upsert_user(&body.name, body.admin, &body.groups)
        .await?;
    let (id, token) = (state.hub.db)
        .create_token(
            &user,
            "made by an admin",
            Some(crate::users::days(TOKEN_DAYS)),
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "name": user.name, "token_id": id, "token": token })),
    )
        .into_response())
}

#[derive(Deserialize)]
struct AccessBody {
    principals: Vec<String>,
}

async fn admin_access(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Json(body): Json<AccessBody>,
) -> ApiResult {
    require_admin(&caller)?;
    if !state
        .hub
        .service
        .catalogue
        .entries
        .iter()
        .any(|e| e.name == name)
    {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("the catalogue has no server `{name}`"),
        ));
    }
    let well_formed = |p: &String| {
        p == "*"
            || p.strip_prefix("user:")
                .or_else(|| p.strip_prefix("group:"))
                .is_some_and(valid_name)
    };
    if !body.principals.iter().all(well_formed) {
        return Err(bad("a principal is `*`, `user:<name>` or `group:<name>`"));
    }
    state.hub.db.set_access(&name, &body.principals).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn admin_refusals(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult {
    require_admin(&caller)?;
    Ok(Json(state.hub.db.refusals(200).await?).into_response())
}
