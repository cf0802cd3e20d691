//! URLs as they may be shown in messages, logs and records: a model endpoint a person
//! configured, the service's database. What a URL can carry in secret goes: the password of
//! its authority (a user name alone, which may itself be a token, too) and its query (which
//! may carry a key or `?password=`).

use std::borrow::Cow;

/// `url` without its secrets: `user:password@` becomes `user:***@`, `token@` becomes
/// `***@`, and everything from `?` on is cut. Text that is no URL is cut the same way.
pub fn url(url: &str) -> Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let query = url[end..].find('?').map(|i| end + i);
    let shown_to = query.unwrap_or(url.len());
    match url[start..end].rfind('@') {
        Some(at) => {
            let user = match url[start..start + at].split_once(':') {
                Some((user, _)) => format!("{user}:"),
                None => String::new(),
            };
            format!("{}{user}***{}", &url[..start], &url[start + at..shown_to]).into()
        }
        None if query.is_some() => url[..shown_to].to_string().into(),
        None => url.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::url;

    #[test]
    fn passwords_lone_user_names_and_queries_are_never_shown() {
        let cases = [
            (
                "postgres://mcp:s3cret@127.0.0.1:5432/db",
                "postgres://mcp:***@127.0.0.1:5432/db",
            ),
            ("http://me:s3cret@h:8080/v1", "http://me:***@h:8080/v1"),
            ("https://sk-tok3n@h/v1", "https://***@h/v1"),
            // Only the authority's last `@` ends it; a path's `@` is the path's.
            ("https://a@b@h/p@q?x=@", "https://***@h/p@q"),
            (
                "postgres://mcp@127.0.0.1/db?password=s3cret&sslmode=require",
                "postgres://***@127.0.0.1/db",
            ),
            ("https://h/v1?key=s3cret", "https://h/v1"),
            ("http://h:1/v1", "http://h:1/v1"),
            ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
            ("h@x", "***@x"),
        ];
        for (given, shown) in cases {
            assert_eq!(url(given), shown, "{given}");
        }
    }
}
