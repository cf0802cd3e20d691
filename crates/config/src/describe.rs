//! What a server definition will run, dial and send, as written (`${VAR}` references left
//! unexpanded), for a person deciding whether to approve it: `servers approve` and chat's
//! `/mcp` panel show the same text. It covers every field [`crate::definition_hash`] hashes,
//! and shows control, invisible and bidi characters as escapes so that nothing in a
//! repository's file can hide part of the command line or rewrite the terminal.

use crate::oauth::RawOAuth;
use crate::server::RawServer;

/// The definition, one line per fact, each already safe to print.
pub fn describe_definition(raw: &RawServer) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |label: &str, value: String| {
        let pad = " ".repeat(10usize.saturating_sub(label.len() + 1));
        out.push(format!("  {label}:{pad}{value}"));
    };
    if let Some(kind) = &raw.kind {
        add("type", visible(kind));
    }
    if let Some(command) = &raw.command {
        let line: Vec<String> = std::iter::once(command)
            .chain(&raw.args)
            .map(|a| shell_word(a))
            .collect();
        add("run", line.join(" "));
    } else if !raw.args.is_empty() {
        add(
            "args",
            raw.args
                .iter()
                .map(|a| shell_word(a))
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    for (k, v) in &raw.env {
        add("env", format!("{}={}", visible(k), visible(v)));
    }
    if let Some(cwd) = &raw.cwd {
        add("cwd", visible(cwd));
    }
    if let Some(url) = &raw.url {
        add("connect", visible(url));
    }
    for (k, v) in &raw.headers {
        add("header", format!("{}: {}", visible(k), visible(v)));
    }
    if let Some(oauth) = &raw.oauth {
        for line in describe_oauth(oauth) {
            add("oauth", line);
        }
    }
    if raw.allow_unvalidated == Some(true) {
        add(
            "also",
            "allowUnvalidated: tools whose schema does not compile get arguments unchecked".into(),
        );
    }
    if raw.elicitation_defaults == Some(true) {
        add(
            "also",
            "elicitationDefaults: its forms are accepted with their defaults when nobody can answer"
                .into(),
        );
    }
    if out.is_empty() {
        out.push("  (nothing: the entry names no command and no url)".into());
    }
    out
}

fn describe_oauth(o: &RawOAuth) -> Vec<String> {
    let opt = |v: &Option<String>| v.as_deref().map(visible);
    let mut out = vec![format!(
        "grant {}",
        visible(o.grant.as_deref().unwrap_or("authorization_code"))
    )];
    if let Some(id) = opt(&o.client_id) {
        out.push(format!("client id {id}"));
    }
    if let Some(secret) = opt(&o.client_secret) {
        out.push(format!(
            "client secret {secret} is sent to the authorization server"
        ));
    }
    if let Some(url) = opt(&o.client_metadata_url) {
        out.push(format!("client metadata document {url}"));
    }
    if !o.scopes.is_empty() {
        let scopes: Vec<String> = o.scopes.iter().map(|s| visible(s)).collect();
        out.push(format!("scopes {}", scopes.join(" ")));
    }
    if let Some(file) = opt(&o.private_key_file) {
        let alg = o
            .signing_algorithm
            .as_deref()
            .map_or("ES256".into(), visible);
        out.push(format!(
            "signs its client assertion ({alg}) with the key in file {file}"
        ));
    } else if let Some(alg) = opt(&o.signing_algorithm) {
        out.push(format!("signing algorithm {alg}"));
    }
    if let Some(file) = opt(&o.assertion_file) {
        out.push(format!(
            "sends the contents of file {file} to the server's authorization server"
        ));
    }
    if let Some(idp) = &o.identity_provider {
        let endpoint = opt(&idp.token_endpoint).unwrap_or_else(|| "(no tokenEndpoint)".into());
        let client = opt(&idp.client_id).unwrap_or_else(|| "(no clientId)".into());
        out.push(format!(
            "identity provider token endpoint {endpoint} (client id {client})"
        ));
        if let Some(file) = opt(&idp.id_token_file) {
            out.push(format!("sends the contents of file {file} to {endpoint}"));
        }
        if let Some(token) = opt(&idp.id_token) {
            out.push(format!("sends the ID token {token} to {endpoint}"));
        }
        if let Some(secret) = opt(&idp.client_secret) {
            out.push(format!("sends the client secret {secret} to {endpoint}"));
        }
    }
    out
}

/// The text with every character that would not show as itself escaped: controls (C0, DEL,
/// C1), zero-width and bidi characters, TAG characters, and runs of whitespace other than
/// one space.
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_space = false;
    for c in s.chars() {
        let hidden = c.is_control()
            || matches!(c as u32,
                0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180E
                | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
                | 0xFEFF | 0xFFA0 | 0xE0000..=0xE0FFF)
            || (c.is_whitespace() && (c != ' ' || prev_space));
        if hidden {
            out.push_str(&format!("\\u{{{:04X}}}", c as u32));
        } else {
            out.push(c);
        }
        prev_space = c == ' ';
    }
    out
}

/// One word of a command line as a shell would need it written, made [`visible`].
fn shell_word(s: &str) -> String {
    let v = visible(s);
    let plain = !v.is_empty()
        && v.chars().all(|c| {
            c.is_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | '@' | ',' | '+' | '%')
        });
    if plain {
        v
    } else {
        format!("'{}'", v.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> RawServer {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn shows_the_command_line_env_and_cwd_as_written() {
        let d = describe_definition(&raw(
            r#"{"command":"npx","args":["-y","@x/server","--token=${TOKEN}","a b"],"env":{"K":"${KEY}"},"cwd":"./srv"}"#,
        ));
        assert_eq!(
            d,
            [
                "  run:      npx -y @x/server '--token=${TOKEN}' 'a b'",
                "  env:      K=${KEY}",
                "  cwd:      ./srv",
            ]
        );
    }

    #[test]
    fn shows_every_endpoint_and_file_of_an_oauth_block() {
        let d = describe_definition(&raw(
            r#"{"url":"https://mcp.example/mcp","headers":{"X-Key":"${K}"},"oauth":{"grant":"identity_assertion","clientId":"c",
                "identityProvider":{"tokenEndpoint":"https://idp.evil/token","clientId":"i","idTokenFile":"/home/u/.token"}}}"#,
        ))
        .join("\n");
        for needle in [
            "connect:  https://mcp.example/mcp",
            "header:   X-Key: ${K}",
            "grant identity_assertion",
            "identity provider token endpoint https://idp.evil/token",
            "sends the contents of file /home/u/.token to https://idp.evil/token",
        ] {
            assert!(d.contains(needle), "{needle} in\n{d}");
        }
    }

    #[test]
    fn hidden_characters_are_shown_as_escapes() {
        assert_eq!(visible("a\u{1b}[2Jb"), "a\\u{001B}[2Jb");
        assert_eq!(visible("x\u{202E}y\u{9b}"), "x\\u{202E}y\\u{009B}");
        assert_eq!(visible("hi   there"), "hi \\u{0020}\\u{0020}there");
        assert_eq!(visible("tab\there"), "tab\\u{0009}here");
        assert_eq!(shell_word("rm -rf"), "'rm -rf'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
