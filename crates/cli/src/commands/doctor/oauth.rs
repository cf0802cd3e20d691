//! `doctor`'s walk of a remote server's OAuth discovery, as a client does it before a
//! sign-in: the server's 401 challenge and its `resource_metadata` (RFC 9728), the
//! protected-resource metadata and its authorization servers, and the first one's metadata
//! (RFC 8414, or OpenID's) with its issuer, scopes and whether clients can register. Every
//! answer is hostile: bodies are read up to a bound and only the fields used are looked at.

use super::{Level, Report};
use serde_json::Value;

/// The most of a metadata answer that is read.
const MAX_BODY: usize = 256 * 1024;

/// One GET: status, the JSON body (or `Null`), and the `WWW-Authenticate` header.
async fn get(http: &reqwest::Client, url: &str) -> Result<(u16, Value, Option<String>), String> {
    let mut resp = http
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = resp.status().as_u16();
    let challenge = (resp.headers().get("www-authenticate"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            return Err(format!("{url}: the answer is larger than {MAX_BODY} bytes"));
        }
    }
    Ok((
        status,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
        challenge,
    ))
}

/// `resource_metadata="URL"` in a Bearer challenge.
fn resource_metadata(challenge: &str) -> Option<String> {
    let start = challenge.find("resource_metadata=")? + "resource_metadata=".len();
    let rest = challenge[start..].trim_start_matches('"');
    let end = rest.find(['"', ',', ' ']).unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// The well-known URL for `url`'s origin with `suffix` and the URL's path after it.
fn well_known(url: &str, suffix: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let path = parsed.path().trim_end_matches('/');
    Some(format!(
        "{}/.well-known/{suffix}{path}",
        parsed.origin().ascii_serialization()
    ))
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    (v.get(key).and_then(Value::as_array))
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Walks the discovery of the server at `url` and reports each step.
pub(super) async fn walk(http: &reqwest::Client, name: &str, url: &str, report: &mut Report) {
    let fix = "the server's OAuth metadata is missing or wrong: tell its operator, or give a pre-registered client in its `oauth` entry";
    let challenge = match get(http, url).await {
        Ok((_, _, challenge)) => challenge,
        Err(e) => return report.fix(name, "auth", Level::Fail, e, fix),
    };
    let from_challenge = challenge.as_deref().and_then(resource_metadata);
    let Some(meta_url) = from_challenge
        .clone()
        .or_else(|| well_known(url, "oauth-protected-resource"))
    else {
        return report.fix(
            name,
            "auth",
            Level::Fail,
            format!("`{url}` is not a URL"),
            "correct `url`",
        );
    };
    let resource = match get(http, &meta_url).await {
        Ok((200, v, _)) if v.is_object() => v,
        Ok((status, _, _)) => {
            return report.fix(name, "auth", Level::Fail,
                format!("protected-resource metadata at {meta_url}: answered {status}, not a JSON object"), fix);
        }
        Err(e) => return report.fix(name, "auth", Level::Fail, e, fix),
    };
    let how = if from_challenge.is_some() {
        "named by its 401"
    } else {
        "at the well-known address"
    };
    let servers = strings(&resource, "authorization_servers");
    let Some(issuer) = servers.first() else {
        return report.fix(
            name,
            "auth",
            Level::Fail,
            format!("protected-resource metadata at {meta_url} names no authorization server"),
            fix,
        );
    };
    report.add(
        name,
        "auth",
        Level::Ok,
        format!("resource metadata {how}: {meta_url}; authorization server {issuer}"),
    );
    let mut metadata = None;
    for suffix in ["oauth-authorization-server", "openid-configuration"] {
        let Some(at) = well_known(issuer, suffix) else {
            break;
        };
        if let Ok((200, v, _)) = get(http, &at).await
            && v.is_object()
        {
            metadata = Some((at, v));
            break;
        }
    }
    let Some((at, meta)) = metadata else {
        return report.fix(
            name,
            "auth",
            Level::Fail,
            format!("no authorization-server metadata for {issuer} (RFC 8414 or OpenID)"),
            fix,
        );
    };
    let claimed = meta
        .get("issuer")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if claimed.trim_end_matches('/') != issuer.trim_end_matches('/') {
        return report.fix(
            name,
            "auth",
            Level::Fail,
            format!("the metadata at {at} says its issuer is `{claimed}`, not {issuer}"),
            "a sign-in there would be refused (mix-up defence): tell the server's operator",
        );
    }
    let mut scopes = strings(&resource, "scopes_supported");
    if scopes.is_empty() {
        scopes = strings(&meta, "scopes_supported");
    }
    let scopes = if scopes.is_empty() {
        "none listed".to_string()
    } else {
        scopes.join(" ")
    };
    let registration = if meta.get("registration_endpoint").is_some() {
        "clients register themselves (dynamic registration)"
    } else {
        "no dynamic registration: configure `oauth.clientId`"
    };
    report.add(
        name,
        "auth",
        Level::Ok,
        format!("issuer {claimed}; scopes {scopes}; {registration}"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_names_the_metadata_and_well_known_addresses_keep_the_path() {
        assert_eq!(
            resource_metadata(r#"Bearer error="invalid_token", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#).as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(resource_metadata("Bearer realm=x"), None);
        assert_eq!(
            well_known("https://a.example/mcp/", "oauth-protected-resource").as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
    }
}
