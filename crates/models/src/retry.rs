//! Retrying a model request: 429, 5xx and Anthropic's 529 (overloaded), and failures to
//! connect, are retried with jittered exponential backoff, honouring `retry-after` (seconds)
//! when the server sends it; other 4xx are not retried (they will not get better).

use crate::http::{HttpError, Response};
use crate::types::ProviderError;
use std::time::Duration;

/// How much of an error answer is read: its first 2,000 characters are shown.
const ERROR_BODY_MAX: usize = 8 * 1024;

#[derive(Clone, Copy, Debug)]
pub struct Retry {
    /// Total attempts, the first included.
    pub attempts: u32,
    pub base: Duration,
    pub max_wait: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            attempts: 4,
            base: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

fn retryable(status: u16) -> bool {
    status == 429 || status == 529 || (500..600).contains(&status)
}

/// Sends the request `build` makes (a fresh one per attempt) until it succeeds, fails for
/// good, or the attempts run out.
pub(crate) async fn send<F>(
    retry: Retry,
    url: &str,
    attempt_once: impl Fn() -> F,
) -> Result<Response, ProviderError>
where
    F: Future<Output = Result<Response, HttpError>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let last = attempt >= retry.attempts;
        let wait = match attempt_once().await {
            Ok(r) if r.status.is_success() => return Ok(r),
            Ok(r) if retryable(r.status.as_u16()) && !last => {
                let after = r
                    .headers
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                after.map(Duration::from_secs)
            }
            Ok(r) => {
                let status = r.status.as_u16();
                let body = r.body.text(ERROR_BODY_MAX).await;
                return Err(ProviderError::Status {
                    status,
                    body: body.chars().take(2000).collect(),
                });
            }
            // Refused means nothing listens there (a local model not started, a wrong
            // port): waiting seconds will not change that, and the person should know now.
            Err(e) if (e.is_connect() || e.is_timeout()) && !last && !e.is_refused() => None,
            Err(e) => {
                return Err(ProviderError::Unreachable {
                    url: url.to_string(),
                    detail: e.to_string(),
                });
            }
        };
        let backoff = retry.base.saturating_mul(1 << (attempt - 1).min(10));
        // Jitter from the clock's sub-second part: enough to spread clients, no RNG needed.
        let jitter = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() % 1000);
        let jittered = backoff.mul_f64(0.8 + f64::from(jitter) / 2500.0);
        tokio::time::sleep(wait.unwrap_or(jittered).min(retry.max_wait)).await;
    }
}
