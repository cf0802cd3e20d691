//! Elicitation dialogs: the form built from a server's restricted schema (flat object of
//! strings, numbers, integers, booleans and enums), its editing keys and validation, and the
//! URL prompt. The screen never opens anything: it answers, and the runtime acts.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Map, Number, Value};

use crate::approval::has_command_modifier;
use crate::guard::{Letter, TypingGuard};
use crate::text::{clean_line, clean_text, fmt_num};
use mcp_host_core::event::{ElicitationAnswer, ElicitationRequest};

/// A field's text is capped so a held-down key cannot grow it without bound.
const FIELD_MAX_CHARS: usize = 4000;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FieldKind {
    Text {
        format: Option<String>,
        min_len: Option<u64>,
        max_len: Option<u64>,
    },
    Number {
        min: Option<f64>,
        max: Option<f64>,
    },
    Integer {
        min: Option<f64>,
        max: Option<f64>,
    },
    Bool,
    Enum {
        values: Vec<Value>,
        labels: Vec<String>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub key: String,
    pub title: String,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
    /// The text of text, number and integer fields.
    pub text: String,
    pub checked: bool,
    pub choice: Option<usize>,
    pub error: Option<String>,
}

/// The buttons below the fields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Button {
    Submit,
    Decline,
    Cancel,
}

pub(crate) const BUTTONS: [Button; 3] = [Button::Submit, Button::Decline, Button::Cancel];

#[derive(Debug)]
pub(crate) struct Form {
    pub id: String,
    pub server: String,
    pub message: String,
    pub fields: Vec<Field>,
    /// `0..fields.len()` is a field; past that, a button.
    pub focus: usize,
    /// Set when a submit found errors.
    pub invalid: bool,
}

#[derive(Debug)]
pub(crate) struct UrlPrompt {
    pub id: String,
    pub server: String,
    pub message: String,
    pub url: String,
    pub host: Option<String>,
    pub guard: TypingGuard,
}

#[derive(Debug)]
pub(crate) enum Elicit {
    Form(Form),
    Url(UrlPrompt),
}

impl Elicit {
    pub(crate) fn new(req: &ElicitationRequest) -> Self {
        match req {
            ElicitationRequest::Form {
                id,
                server,
                message,
                schema,
            } => Elicit::Form(Form {
                id: id.clone(),
                server: clean_line(server),
                message: clean_text(message),
                fields: parse_fields(schema),
                focus: 0,
                invalid: false,
            }),
            ElicitationRequest::Url {
                id,
                server,
                message,
                url,
            } => {
                let url = clean_line(url).trim().to_string();
                Elicit::Url(UrlPrompt {
                    id: id.clone(),
                    server: clean_line(server),
                    message: clean_text(message),
                    host: host_of(&url),
                    url,
                    guard: TypingGuard::default(),
                })
            }
        }
    }

    pub(crate) fn id(&self) -> &str {
        match self {
            Elicit::Form(f) => &f.id,
            Elicit::Url(u) => &u.id,
        }
    }

    /// The asking server, as shown (cleaned).
    pub(crate) fn server(&self) -> &str {
        match self {
            Elicit::Form(f) => &f.server,
            Elicit::Url(u) => &u.server,
        }
    }

    /// The question, as shown (cleaned).
    pub(crate) fn message(&self) -> &str {
        match self {
            Elicit::Form(f) => &f.message,
            Elicit::Url(u) => &u.message,
        }
    }

    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Option<ElicitationAnswer> {
        match self {
            Elicit::Form(f) => f.on_key(key),
            Elicit::Url(u) => u.on_key(key),
        }
    }

    pub(crate) fn on_paste(&mut self, text: &str) {
        match self {
            Elicit::Form(f) => {
                if let Some(field) = f.fields.get_mut(f.focus)
                    && field.is_textual()
                {
                    field.push_text(&clean_line(text));
                }
            }
            Elicit::Url(u) => u.guard.lock(),
        }
    }
}

/// The host of a URL, shown on its own line: the part a phishing URL hides best.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map(|(_, r)| r)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    (!host.is_empty()).then(|| host.to_string())
}

fn str_of(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(clean_text)
}

/// Reads the restricted schema. Anything it does not understand becomes a text field, so a
/// form never silently loses a property.
pub(crate) fn parse_fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(key, p)| {
            let kind = field_kind(p);
            let default = p.get("default");
            let mut f = Field {
                key: key.clone(),
                title: str_of(p, "title")
                    .map(|t| clean_line(&t))
                    .unwrap_or_else(|| clean_line(key)),
                description: str_of(p, "description"),
                required: required.contains(&key.as_str()),
                kind,
                text: String::new(),
                checked: false,
                choice: None,
                error: None,
            };
            match (&f.kind, default) {
                (FieldKind::Bool, Some(Value::Bool(b))) => f.checked = *b,
                (FieldKind::Enum { values, .. }, Some(d)) => {
                    f.choice = values.iter().position(|v| v == d);
                }
                (_, Some(Value::String(s))) => f.text = clean_line(s),
                (_, Some(Value::Number(n))) => f.text = n.to_string(),
                _ => {}
            }
            f
        })
        .collect()
}

fn label_of(v: &Value) -> String {
    match v {
        Value::String(s) => clean_line(s),
        other => clean_line(&other.to_string()),
    }
}

fn field_kind(p: &Value) -> FieldKind {
    let num = |k: &str| p.get(k).and_then(Value::as_f64);
    let uint = |k: &str| p.get(k).and_then(Value::as_u64);
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        let names: Option<Vec<String>> = p.get("enumNames").and_then(Value::as_array).map(|a| {
            a.iter()
                .map(|n| n.as_str().map(clean_line).unwrap_or_else(|| label_of(n)))
                .collect()
        });
        let labels = match names {
            Some(n) if n.len() == values.len() => n,
            _ => values.iter().map(label_of).collect(),
        };
        return FieldKind::Enum {
            values: values.clone(),
            labels,
        };
    }
    // The newer titled-enum shape: `oneOf: [{const, title}]`.
    if let Some(options) = p.get("oneOf").and_then(Value::as_array)
        && !options.is_empty()
        && options.iter().all(|o| o.get("const").is_some())
    {
        let values: Vec<Value> = options
            .iter()
            .filter_map(|o| o.get("const").cloned())
            .collect();
        let labels = options
            .iter()
            .map(|o| {
                str_of(o, "title")
                    .map(|t| clean_line(&t))
                    .unwrap_or_else(|| o.get("const").map(label_of).unwrap_or_default())
            })
            .collect();
        return FieldKind::Enum { values, labels };
    }
    match p.get("type").and_then(Value::as_str) {
        Some("number") => FieldKind::Number {
            min: num("minimum"),
            max: num("maximum"),
        },
        Some("integer") => FieldKind::Integer {
            min: num("minimum"),
            max: num("maximum"),
        },
        Some("boolean") => FieldKind::Bool,
        _ => FieldKind::Text {
            format: str_of(p, "format").map(|f| clean_line(&f)),
            min_len: uint("minLength"),
            max_len: uint("maxLength"),
        },
    }
}

impl Field {
    pub(crate) fn is_textual(&self) -> bool {
        matches!(
            self.kind,
            FieldKind::Text { .. } | FieldKind::Number { .. } | FieldKind::Integer { .. }
        )
    }

    fn push_text(&mut self, s: &str) {
        let room = FIELD_MAX_CHARS.saturating_sub(self.text.chars().count());
        self.text
            .extend(s.chars().filter(|c| !c.is_control()).take(room));
        self.error = None;
    }

    fn cycle(&mut self, forward: bool) {
        if let FieldKind::Enum { values, .. } = &self.kind {
            let n = values.len();
            if n == 0 {
                return;
            }
            self.choice = Some(match (self.choice, forward) {
                (None, true) => 0,
                (None, false) => n - 1,
                (Some(i), true) => (i + 1) % n,
                (Some(i), false) => (i + n - 1) % n,
            });
            self.error = None;
        }
    }

    /// Checks the field and returns its JSON value (`None` when it is empty and optional).
    pub(crate) fn validate(&self) -> Result<Option<Value>, String> {
        let text = self.text.trim();
        match &self.kind {
            FieldKind::Bool => Ok(Some(Value::Bool(self.checked))),
            FieldKind::Enum { values, .. } => match self.choice.and_then(|i| values.get(i)) {
                Some(v) => Ok(Some(v.clone())),
                None if self.required => Err("required: choose one".into()),
                None => Ok(None),
            },
            _ if text.is_empty() => {
                if self.required {
                    Err("required".into())
                } else {
                    Ok(None)
                }
            }
            FieldKind::Text {
                format,
                min_len,
                max_len,
            } => {
                let n = self.text.chars().count() as u64;
                if let Some(min) = min_len
                    && n < *min
                {
                    return Err(format!("must be at least {min} characters"));
                }
                if let Some(max) = max_len
                    && n > *max
                {
                    return Err(format!("must be at most {max} characters"));
                }
                check_format(format.as_deref(), text)?;
                Ok(Some(Value::String(self.text.clone())))
            }
            FieldKind::Number { min, max } => {
                let x: f64 = text
                    .parse()
                    .ok()
                    .filter(|x: &f64| x.is_finite())
                    .ok_or("must be a number")?;
                check_range(x, *min, *max)?;
                Number::from_f64(x)
                    .map(|n| Some(Value::Number(n)))
                    .ok_or_else(|| "must be a number".to_string())
            }
            FieldKind::Integer { min, max } => {
                let x: f64 = text
                    .parse()
                    .ok()
                    .filter(|x: &f64| x.is_finite())
                    .ok_or("must be a whole number")?;
                if x.fract() != 0.0 || x.abs() > 9.0e15 {
                    return Err("must be a whole number".into());
                }
                check_range(x, *min, *max)?;
                Ok(Some(Value::from(x as i64)))
            }
        }
    }
}

fn check_range(x: f64, min: Option<f64>, max: Option<f64>) -> Result<(), String> {
    if let Some(m) = min
        && x < m
    {
        return Err(format!("must be at least {}", fmt_num(m)));
    }
    if let Some(m) = max
        && x > m
    {
        return Err(format!("must be at most {}", fmt_num(m)));
    }
    Ok(())
}

/// Light checks of the formats the restricted schema allows; the server validates for real.
fn check_format(format: Option<&str>, s: &str) -> Result<(), String> {
    let ok = match format {
        Some("email") => s
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty() && !s.contains(' ')),
        Some("uri") => s.contains(':') && !s.contains(' '),
        Some("date") => is_date(s),
        Some("date-time") => s.len() > 11 && is_date(&s[..10]) && s.as_bytes()[10] == b'T',
        _ => true,
    };
    match (ok, format) {
        (true, _) | (false, None) => Ok(()),
        (false, Some("email")) => Err("must be an email address".into()),
        (false, Some("uri")) => Err("must be a URI".into()),
        (false, Some("date")) => Err("must be a date (YYYY-MM-DD)".into()),
        (false, Some(_)) => Err("must be a date and time (YYYY-MM-DDThh:mm:ssZ)".into()),
    }
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

impl Form {
    fn stops(&self) -> usize {
        self.fields.len() + BUTTONS.len()
    }

    /// The focused button, when focus is on the buttons row.
    pub(crate) fn button(&self) -> Option<Button> {
        self.focus
            .checked_sub(self.fields.len())
            .and_then(|i| BUTTONS.get(i).copied())
    }

    /// Validates every field, marking errors; the answer when all are fine.
    pub(crate) fn submit(&mut self) -> Option<Value> {
        let mut obj = Map::new();
        let mut first_bad = None;
        for (i, f) in self.fields.iter_mut().enumerate() {
            match f.validate() {
                Ok(Some(v)) => {
                    f.error = None;
                    obj.insert(f.key.clone(), v);
                }
                Ok(None) => f.error = None,
                Err(e) => {
                    f.error = Some(e);
                    first_bad.get_or_insert(i);
                }
            }
        }
        if let Some(i) = first_bad {
            self.invalid = true;
            self.focus = i;
            return None;
        }
        self.invalid = false;
        Some(Value::Object(obj))
    }

    fn on_key(&mut self, key: KeyEvent) -> Option<ElicitationAnswer> {
        let n = self.fields.len();
        match key.code {
            KeyCode::Esc => return Some(ElicitationAnswer::Cancel),
            KeyCode::Tab => self.focus = (self.focus + 1) % self.stops(),
            KeyCode::BackTab => self.focus = (self.focus + self.stops() - 1) % self.stops(),
            KeyCode::Down => self.focus = (self.focus + 1).min(n),
            KeyCode::Up => {
                self.focus = if self.focus >= n {
                    n.saturating_sub(1)
                } else {
                    self.focus.saturating_sub(1)
                };
            }
            _ => {}
        }
        if matches!(
            key.code,
            KeyCode::Tab | KeyCode::BackTab | KeyCode::Up | KeyCode::Down
        ) {
            return None;
        }
        if let Some(button) = self.button() {
            return self.button_key(button, key);
        }
        let field = self.fields.get_mut(self.focus)?;
        match key.code {
            // Enter moves on; only Enter on Submit sends, so a stray Enter sends nothing.
            KeyCode::Enter => self.focus += 1,
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                field.text.clear();
            }
            KeyCode::Char(' ') if field.kind == FieldKind::Bool => {
                field.checked = !field.checked;
            }
            KeyCode::Char(' ') if matches!(field.kind, FieldKind::Enum { .. }) => {
                field.cycle(true);
            }
            KeyCode::Left | KeyCode::Right if field.kind == FieldKind::Bool => {
                field.checked = !field.checked;
            }
            KeyCode::Left => field.cycle(false),
            KeyCode::Right => field.cycle(true),
            KeyCode::Backspace if field.is_textual() => {
                field.text.pop();
                field.error = None;
            }
            KeyCode::Char(c) if field.is_textual() && !has_command_modifier(key) => {
                field.push_text(&c.to_string());
            }
            _ => {}
        }
        None
    }

    fn button_key(&mut self, button: Button, key: KeyEvent) -> Option<ElicitationAnswer> {
        let n = self.fields.len();
        match key.code {
            KeyCode::Left => self.focus = self.focus.saturating_sub(1).max(n),
            KeyCode::Right => self.focus = (self.focus + 1).min(self.stops() - 1),
            KeyCode::Char('d' | 'D') if !has_command_modifier(key) => {
                return Some(ElicitationAnswer::Decline);
            }
            KeyCode::Enter => match button {
                Button::Submit => return self.submit().map(ElicitationAnswer::Accept),
                Button::Decline => return Some(ElicitationAnswer::Decline),
                Button::Cancel => return Some(ElicitationAnswer::Cancel),
            },
            _ => {}
        }
        None
    }
}

impl UrlPrompt {
    fn on_key(&mut self, key: KeyEvent) -> Option<ElicitationAnswer> {
        match key.code {
            KeyCode::Esc => return Some(ElicitationAnswer::Decline),
            KeyCode::Char(c) if !has_command_modifier(key) => match self.guard.printable(c) {
                Letter::Key('y' | 'Y') => return Some(ElicitationAnswer::OpenUrl),
                Letter::Key('n' | 'N') => return Some(ElicitationAnswer::Decline),
                Letter::Key(_) => self.guard.lock(),
                Letter::Stray => {}
            },
            KeyCode::Tab | KeyCode::BackTab | KeyCode::Left | KeyCode::Right => {
                self.guard.navigate();
            }
            _ => self.guard.other(),
        }
        None
    }
}

/// Elicitations wait their turn like approvals.
#[derive(Debug, Default)]
pub(crate) struct Elicitations {
    queue: VecDeque<Elicit>,
}

impl Elicitations {
    pub(crate) fn push(&mut self, req: &ElicitationRequest) {
        self.queue.push_back(Elicit::new(req));
    }

    pub(crate) fn active(&self) -> Option<&Elicit> {
        self.queue.front()
    }

    pub(crate) fn active_mut(&mut self) -> Option<&mut Elicit> {
        self.queue.front_mut()
    }

    pub(crate) fn pop(&mut self) -> Option<Elicit> {
        self.queue.pop_front()
    }

    pub(crate) fn waiting(&self) -> usize {
        self.queue.len().saturating_sub(1)
    }

    /// Takes the question `id` away (its server stopped waiting), wherever it is in line.
    pub(crate) fn withdraw(&mut self, id: &str) -> Option<Elicit> {
        let at = self.queue.iter().position(|e| e.id() == id)?;
        self.queue.remove(at)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> Form {
        Form {
            id: "e1".into(),
            server: "s".into(),
            message: "m".into(),
            fields: parse_fields(&schema),
            focus: 0,
            invalid: false,
        }
    }

    #[test]
    fn parses_every_kind_with_defaults() {
        let f = form(json!({
            "type": "object",
            "properties": {
                "age": {"type": "integer", "minimum": 0},
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"], "default": "g"},
                "name": {"type": "string", "title": "Your name", "default": "ann"},
                "ok": {"type": "boolean", "default": true},
                "size": {"oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]}
            },
            "required": ["name"]
        }));
        let kinds: Vec<&FieldKind> = f.fields.iter().map(|x| &x.kind).collect();
        assert!(matches!(kinds[0], FieldKind::Integer { min: Some(_), .. }));
        assert!(matches!(kinds[1], FieldKind::Enum { labels, .. } if labels == &["Red", "Green"]));
        assert_eq!(f.fields[1].choice, Some(1));
        assert_eq!(f.fields[2].title, "Your name");
        assert_eq!(f.fields[2].text, "ann");
        assert!(f.fields[2].required);
        assert!(f.fields[3].checked);
        assert!(
            matches!(kinds[4], FieldKind::Enum { labels, .. } if labels == &["Small", "Large"])
        );
    }

    #[test]
    fn validation_reports_each_rule() {
        let mut f = form(json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "minLength": 3},
                "b": {"type": "integer"},
                "c": {"type": "number", "maximum": 10},
                "d": {"type": "string", "format": "email"},
                "e": {"type": "string"}
            },
            "required": ["e"]
        }));
        f.fields[0].text = "ab".into();
        f.fields[1].text = "2.5".into();
        f.fields[2].text = "11".into();
        f.fields[3].text = "nope".into();
        assert_eq!(f.submit(), None);
        let errs: Vec<Option<&str>> = f.fields.iter().map(|x| x.error.as_deref()).collect();
        assert_eq!(
            errs,
            vec![
                Some("must be at least 3 characters"),
                Some("must be a whole number"),
                Some("must be at most 10"),
                Some("must be an email address"),
                Some("required"),
            ]
        );
        assert_eq!(f.focus, 0);
        f.fields[0].text = "abc".into();
        f.fields[1].text = "3".into();
        f.fields[2].text = "1.5".into();
        f.fields[3].text = "a@b.c".into();
        f.fields[4].text = "x".into();
        assert_eq!(
            f.submit(),
            Some(json!({"a": "abc", "b": 3, "c": 1.5, "d": "a@b.c", "e": "x"}))
        );
    }

    #[test]
    fn optional_empty_fields_are_left_out() {
        let mut f =
            form(json!({"properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}}));
        assert_eq!(f.submit(), Some(json!({"b": false})));
    }

    #[test]
    fn url_host_is_extracted() {
        assert_eq!(
            host_of("https://u:p@evil.example/x?y").as_deref(),
            Some("evil.example")
        );
        assert_eq!(host_of("nonsense"), None);
    }
}
