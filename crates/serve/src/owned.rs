//! The caller's own conversation, as a handler's argument: the `{id}` of the path looked up
//! with its owner, so a handler that takes an [`Owned`] cannot reach another user's
//! conversation. Anyone else's id (or one that does not exist) is answered 404 and the
//! refusal logged, before the handler runs.

use crate::AppState;
use crate::access::{Caller, refuse};
use crate::api::ApiError;
use crate::journal::ConversationRow;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

pub struct Owned {
    pub caller: Caller,
    pub row: ConversationRow,
    method: Method,
    path: String,
}

impl Owned {
    /// Refuses the request as not the caller's (404, logged): for what the conversation
    /// holds (an approval nobody of this user waits for).
    pub async fn refuse(&self, state: &AppState, why: &str) -> Response {
        refuse(
            state,
            Some(&self.caller.user),
            &self.method,
            &self.path,
            StatusCode::NOT_FOUND,
            why,
        )
        .await
    }
}

impl FromRequestParts<AppState> for Owned {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        // The guard put it there for every `/api` request; without it nothing is anyone's.
        let Some(caller) = parts.extensions.get::<Caller>().cloned() else {
            return Err(StatusCode::UNAUTHORIZED.into_response());
        };
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let (method, path) = (parts.method.clone(), parts.uri.path().to_string());
        match state.hub.db.conversation(&caller.user, &id).await {
            Ok(Some(row)) => Ok(Self {
                caller,
                row,
                method,
                path,
            }),
            Ok(None) => Err(refuse(
                state,
                Some(&caller.user),
                &method,
                &path,
                StatusCode::NOT_FOUND,
                "no such conversation of this user",
            )
            .await),
            Err(e) => Err(ApiError::from(e).into_response()),
        }
    }
}
