//! The ways into a browser session: the single-user mode's link (its secret traded for a
//! cookie), OpenID Connect (`/auth/login` → the provider → `/auth/callback`), and signing
//! out. Every sign-in ends the same way: a new session row, an `HttpOnly; SameSite=Strict`
//! cookie (`Secure` unless the service is plain HTTP off loopback), and a redirect to `/`.

use crate::AppState;
use crate::access::{self, refuse};
use crate::api::ApiError;
use crate::users::User;
use axum::extract::{OriginalUri, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

/// The cookie that binds an OpenID Connect sign-in to the browser that started it. `Lax`:
/// it must come back on the provider's top-level redirect to the callback.
const LOGIN_COOKIE: &str = "mh_login";

type Answer = Result<Response, ApiError>;

/// A new browser session for `user`, and the way home.
async fn signed_in(state: &AppState, user: &User, extra_cookie: Option<String>) -> Answer {
    let (cookie, _) = state.hub.db.create_web_session(user).await?;
    let mut response = Redirect::to("/").into_response();
    let headers = response.headers_mut();
    for c in [
        Some(access::session_set_cookie(&cookie, state.secure_cookies)),
        extra_cookie,
    ]
    .into_iter()
    .flatten()
    {
        if let Ok(v) = c.parse() {
            headers.append(header::SET_COOKIE, v);
        }
    }
    Ok(response)
}

#[derive(Deserialize)]
pub struct LinkQuery {
    token: String,
}

/// The single-user mode's sign-in link.
pub async fn single_user(
    State(state): State<AppState>,
    method: Method,
    uri: OriginalUri,
    Query(q): Query<LinkQuery>,
) -> Answer {
    let valid = (state.signin.as_deref()).is_some_and(|s| access::same_secret(s, &q.token));
    if !valid {
        return Ok(refuse(
            &state,
            None,
            &method,
            uri.path(),
            StatusCode::FORBIDDEN,
            "wrong sign-in link",
        )
        .await);
    }
    let Some(user) = state.hub.db.user_by_name(crate::LOCAL_USER).await? else {
        return Err(ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the local user is missing".into(),
        ));
    };
    signed_in(&state, &user, None).await
}

fn callback_url(state: &AppState) -> String {
    format!("{}/auth/callback", state.public_url.trim_end_matches('/'))
}

fn login_cookie(value: &str, max_age: u32, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{LOGIN_COOKIE}={value}; HttpOnly; SameSite=Lax; Path=/auth; Max-Age={max_age}{secure}")
}

/// How people sign in here, for the signed-out page.
pub async fn methods(State(state): State<AppState>) -> Response {
    axum::Json(serde_json::json!({
        "single_user": state.signin.is_some(),
        "oidc": state.oidc.is_some(),
    }))
    .into_response()
}

/// Starts an OpenID Connect sign-in.
pub async fn login(State(state): State<AppState>) -> Answer {
    let Some(oidc) = &state.oidc else {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            "this service has no identity provider; see --oidc-issuer".into(),
        ));
    };
    let start = oidc
        .start(&state.hub.db, &callback_url(&state))
        .await
        .map_err(|e| ApiError(StatusCode::BAD_GATEWAY, e.to_string()))?;
    let mut response = Redirect::to(&start.location).into_response();
    if let Ok(v) = login_cookie(&start.binding, 600, state.secure_cookies).parse() {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(response)
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// The value of cookie `name`, if the request carries it.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// The provider sends the browser back here with a code (or an error).
pub async fn callback(
    State(state): State<AppState>,
    method: Method,
    uri: OriginalUri,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Answer {
    let Some(oidc) = state.oidc.clone() else {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            "this service has no identity provider".into(),
        ));
    };
    let refused = async |why: String| -> Answer {
        Ok(refuse(
            &state,
            None,
            &method,
            uri.path(),
            StatusCode::FORBIDDEN,
            &why,
        )
        .await)
    };
    let (Some(code), Some(login_state)) = (q.code.as_deref(), q.state.as_deref()) else {
        // The provider's error code is shown; its description is the provider's text, not ours.
        let why = q.error.map_or("the callback has no code".to_string(), |e| {
            format!(
                "the identity provider refused: {}",
                e.chars().take(64).collect::<String>()
            )
        });
        return refused(why).await;
    };
    let binding = cookie(&headers, LOGIN_COOKIE);
    let person = match oidc
        .finish(
            &state.hub.db,
            &callback_url(&state),
            code,
            login_state,
            binding.as_deref(),
        )
        .await
    {
        Ok(p) => p,
        Err(e) => return refused(e.to_string()).await,
    };
    if !oidc.admits(&person) {
        return refused("the identity provider's person is not in the group allowed here".into())
            .await;
    }
    let db = &state.hub.db;
    let user = db
        .user_for_subject(
            &person.issuer,
            &person.subject,
            &person.name,
            &person.groups,
        )
        .await?;
    // With an admin group, the role follows the provider's membership now (taken away when
    // the provider takes it away); without one, the role is the service's own.
    let admin = match oidc.admin_group() {
        Some(g) => person.groups.iter().any(|x| x == g),
        None => user.admin,
    };
    let user = db.set_role(&user, admin, &person.groups).await?;
    signed_in(
        &state,
        &user,
        Some(login_cookie("", 0, state.secure_cookies)),
    )
    .await
}

pub async fn signout(State(state): State<AppState>, headers: HeaderMap) -> Answer {
    if let Some(cookie) = access::session_cookie(&headers, state.secure_cookies) {
        state.hub.db.end_web_session(&cookie).await?;
    }
    let clear = access::session_clear_cookie(state.secure_cookies);
    Ok(([(header::SET_COOKIE, clear)], StatusCode::NO_CONTENT).into_response())
}
