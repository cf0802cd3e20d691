//! The web page, built into the binary: `cargo build` alone yields a working page, and
//! nothing is fetched at run time. The page is plain HTML, CSS and a JavaScript module with
//! no build step (so there is nothing to reproduce), served with a content security policy
//! that allows only this origin's own scripts, styles and connections.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const MARKDOWN_JS: &str = include_str!("../assets/markdown.js");
const APP_CSS: &str = include_str!("../assets/app.css");
const OPENAPI: &str = include_str!("../assets/openapi.json");

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

fn page(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

pub async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

pub async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "app.js" => page("text/javascript; charset=utf-8", APP_JS),
        "markdown.js" => page("text/javascript; charset=utf-8", MARKDOWN_JS),
        "app.css" => page("text/css; charset=utf-8", APP_CSS),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

pub async fn openapi() -> Response {
    page("application/json", OPENAPI)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_openapi_description_is_json_and_names_every_api_route() {
        let doc: serde_json::Value = serde_json::from_str(super::OPENAPI).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        let router = include_str!("api.rs");
        for line in router.lines().filter(|l| l.contains(".route(\"/api/")) {
            let path = line.split('"').nth(1).unwrap();
            assert!(paths.contains_key(path), "openapi.json lacks {path}");
        }
    }
}
