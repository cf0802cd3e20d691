//! The headless stand-in for a person approving an authorization request: the suite's mock
//! authorization endpoint approves at once and redirects to the redirect URI with the code,
//! so fetching the authorization URL without following the redirect yields the response.

use futures::future::BoxFuture;
use mcp_host_auth::{AuthorizationResponse, OAuthError};
use std::time::Duration;

pub struct Authorizer {
    http: reqwest::Client,
}

impl Authorizer {
    pub fn new() -> anyhow::Result<Self> {
        mcp_host_auth::install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self { http })
    }
}

impl mcp_host_auth::Authorizer for Authorizer {
    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            let failed = |m: String| OAuthError::Authorization(m);
            let response = self
                .http
                .get(url)
                .send()
                .await
                .map_err(|e| failed(format!("fetching the authorization URL: {e}")))?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    failed(format!(
                        "the authorization endpoint did not redirect (HTTP {})",
                        response.status()
                    ))
                })?;
            let target = response
                .url()
                .join(location)
                .map_err(|e| failed(format!("bad redirect {location:?}: {e}")))?;
            AuthorizationResponse::from_redirect(target.as_str())
        })
    }
}
