//! `${VAR}` and `${VAR:-default}` expansion, with the variable source passed in (no globals).

/// A reference that could not be expanded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("environment variable `{0}` is not set and has no default (write ${{{0}:-default}})")]
    Missing(String),
    #[error("unterminated `${{` in `{0}`")]
    Unterminated(String),
}

/// Expands every `${NAME}` and `${NAME:-default}` in `input`. `$` not followed by `{` is kept.
pub fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| ExpandError::Unterminated(input.to_string()))?;
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (body, None),
        };
        match (lookup(name), default) {
            // As in the shell, `:-` also replaces a variable that is set but empty.
            (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(ExpandError::Missing(name.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(n: &str) -> Option<String> {
        match n {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_defaults_and_keeps_lone_dollars() {
        assert_eq!(expand("${HOME}/x", &vars).unwrap(), "/home/u/x");
        assert_eq!(expand("${NOPE:-fallback}", &vars).unwrap(), "fallback");
        assert_eq!(expand("${EMPTY:-d}", &vars).unwrap(), "d");
        assert_eq!(expand("${EMPTY}", &vars).unwrap(), "");
        assert_eq!(expand("$HOME and $", &vars).unwrap(), "$HOME and $");
        assert_eq!(expand("${HOME}${HOME}", &vars).unwrap(), "/home/u/home/u");
    }

    #[test]
    fn errors_name_the_variable() {
        assert_eq!(
            expand("a${NOPE}", &vars),
            Err(ExpandError::Missing("NOPE".into()))
        );
        assert!(matches!(
            expand("${HOME", &vars),
            Err(ExpandError::Unterminated(_))
        ));
    }
}
