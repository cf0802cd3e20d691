//! `PreToolUse` and `PostToolUse` hooks in Claude Code's shapes: each matching command gets
//! the event as JSON on stdin and may answer with `hookSpecificOutput.permissionDecision`
//! (`allow`, `ask`, `deny`) or the older `{"decision": "approve"|"block"}`; exit status 2
//! blocks with stderr as the reason. A hook that fails to run, exits otherwise non-zero or
//! times out denies: a broken guard must not open the door. The engine's gate runs them for
//! every call, whoever made it.

use mcp_host_config::{HookCommand, LoadedConfig};
use mcp_host_core::CallOutcome;
use mcp_host_policy::{DecidedBy, Decision, Verdict};
use regex::Regex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_OUTPUT: u64 = 64 * 1024;

struct Hook {
    matcher: Option<Regex>,
    command: HookCommand,
}

#[derive(Default)]
pub struct Hooks {
    pre: Vec<Hook>,
    post: Vec<Hook>,
    /// The environment hooks run with; `None`: the host process's own.
    env: Option<Arc<BTreeMap<String, String>>>,
}

/// A hook that cannot be used. Hooks guard calls, so one that does not compile stops every
/// command that could make a call instead of being left out.
#[derive(Debug, thiserror::Error)]
#[error("{file}: key `hooks.{event}[{index}].matcher`: {matcher:?}: {reason}")]
pub struct HookError {
    pub file: String,
    pub event: &'static str,
    pub index: usize,
    pub matcher: String,
    pub reason: String,
}

impl Hooks {
    pub fn compile(config: &LoadedConfig) -> Result<Self, HookError> {
        let mut hooks = Self::default();
        for (_, file, raw) in &config.hooks {
            let lists = [
                ("PreToolUse", &raw.pre_tool_use, &mut hooks.pre),
                ("PostToolUse", &raw.post_tool_use, &mut hooks.post),
            ];
            for (event, matchers, out) in lists {
                for (index, m) in matchers.iter().enumerate() {
                    let matcher =
                        mcp_host_config::hook_matcher(&m.matcher).map_err(|reason| HookError {
                            file: file.display().to_string(),
                            event,
                            index,
                            matcher: m.matcher.clone(),
                            reason,
                        })?;
                    out.extend(
                        m.hooks
                            .iter()
                            .filter(|h| h.kind == "command")
                            .map(|h| Hook {
                                matcher: matcher.clone(),
                                command: h.clone(),
                            }),
                    );
                }
            }
        }
        Ok(hooks)
    }

    /// Hooks run with exactly `env` instead of the host process's environment: a service
    /// keeps its own secrets (its database URL, its credential key) out of their reach.
    pub fn with_env(mut self, env: Arc<BTreeMap<String, String>>) -> Self {
        self.env = Some(env);
        self
    }

    /// Whether any hook is configured (a front end can say so).
    pub fn is_empty(&self) -> bool {
        self.pre.is_empty() && self.post.is_empty()
    }

    /// The strictest answer of the matching `PreToolUse` hooks, if any answered.
    /// The input is built only when a hook matches: most calls have none, and it copies the
    /// arguments and reads the working directory.
    pub async fn pre_tool_use(&self, name: &str, args: &Value) -> Option<Decision> {
        let matching = matching(&self.pre, name);
        if matching.is_empty() {
            return None;
        }
        let input = json!({"hook_event_name": "PreToolUse", "tool_name": name, "tool_input": args, "cwd": cwd()});
        let mut strictest: Option<Decision> = None;
        for hook in matching {
            let Some(d) = run(&hook.command, &input, self.env.as_deref()).await else {
                continue;
            };
            if d.verdict == Verdict::Deny {
                return Some(d);
            }
            let stricter = strictest
                .as_ref()
                .is_none_or(|s| s.verdict == Verdict::Allow && d.verdict == Verdict::Ask);
            if stricter {
                strictest = Some(d);
            }
        }
        strictest
    }

    /// Runs the matching `PostToolUse` hooks; returns the reasons of those that objected.
    /// The result is serialised for the hooks only when one matches: most calls have none.
    pub async fn post_tool_use(
        &self,
        name: &str,
        args: &Value,
        outcome: &CallOutcome,
    ) -> Vec<String> {
        let matching = matching(&self.post, name);
        if matching.is_empty() {
            return Vec::new();
        }
        let response = serde_json::to_value(outcome).unwrap_or_default();
        let input = json!({"hook_event_name": "PostToolUse", "tool_name": name, "tool_input": args, "tool_response": response, "cwd": cwd()});
        let mut objections = Vec::new();
        for hook in matching {
            if let Some(d) = run(&hook.command, &input, self.env.as_deref()).await
                && d.verdict != Verdict::Allow
            {
                objections.push(d.reason);
            }
        }
        objections
    }
}

/// The hooks of `hooks` whose matcher takes the tool `name` (no matcher: every tool).
fn matching<'a>(hooks: &'a [Hook], name: &str) -> Vec<&'a Hook> {
    (hooks.iter())
        .filter(|h| h.matcher.as_ref().is_none_or(|m| m.is_match(name)))
        .collect()
}

fn cwd() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

fn hook_decision(verdict: Verdict, command: &str, reason: String) -> Decision {
    Decision {
        verdict,
        decided_by: DecidedBy::Hook {
            command: command.to_string(),
        },
        reason,
    }
}

/// Runs one hook; `None` when it ran fine and expressed no decision.
async fn run(
    hook: &HookCommand,
    input: &Value,
    env: Option<&BTreeMap<String, String>>,
) -> Option<Decision> {
    let limit = hook.timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let deny = |why: String| Some(hook_decision(Verdict::Deny, &hook.command, why));
    let mut command = tokio::process::Command::new("sh");
    if let Some(env) = env {
        command.env_clear().envs(env);
    }
    let child = command
        .arg("-c")
        .arg(&hook.command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return deny(format!("hook `{}` could not start: {e}", hook.command)),
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return deny(format!("hook `{}` has no pipes", hook.command));
    };
    let body = input.to_string();
    let work = async {
        // A hook that does not read its input must not block us.
        let _ = stdin.write_all(body.as_bytes()).await;
        drop(stdin);
        let (mut out, mut err) = (String::new(), String::new());
        let _ = stdout.take(MAX_OUTPUT).read_to_string(&mut out).await;
        let _ = stderr.take(MAX_OUTPUT).read_to_string(&mut err).await;
        (child.wait().await, out, err)
    };
    let (status, out, err) = match tokio::time::timeout(limit, work).await {
        Ok(r) => r,
        Err(_) => return deny(format!("hook `{}` timed out after {limit:?}", hook.command)),
    };
    let code = status.ok().and_then(|s| s.code());
    match code {
        Some(0) => parse_answer(&out).map(|(v, reason)| hook_decision(v, &hook.command, reason)),
        Some(2) => deny(format!("hook blocked the call: {}", err.trim())),
        other => deny(format!(
            "hook `{}` failed (exit {other:?}): {}",
            hook.command,
            err.trim()
        )),
    }
}

fn parse_answer(stdout: &str) -> Option<(Verdict, String)> {
    let v: Value = serde_json::from_str(stdout.trim()).ok()?;
    let specific = v.get("hookSpecificOutput");
    let reason = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| {
                specific
                    .and_then(|s| s.get(*k))
                    .or_else(|| v.get(*k))
                    .and_then(Value::as_str)
            })
            .unwrap_or("the hook said so")
            .to_string()
    };
    if let Some(d) = specific
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str)
    {
        let verdict = match d {
            "allow" => Verdict::Allow,
            "ask" => Verdict::Ask,
            _ => Verdict::Deny,
        };
        return Some((verdict, reason(&["permissionDecisionReason"])));
    }
    match v.get("decision").and_then(Value::as_str) {
        Some("approve") => Some((Verdict::Allow, reason(&["reason"]))),
        Some("block") => Some((Verdict::Deny, reason(&["reason"]))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_both_shapes_are_read() {
        let new = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "check"}}"#;
        assert_eq!(parse_answer(new), Some((Verdict::Ask, "check".into())));
        assert_eq!(
            parse_answer(r#"{"decision": "block", "reason": "no"}"#),
            Some((Verdict::Deny, "no".into()))
        );
        assert_eq!(parse_answer(""), None);
        assert_eq!(parse_answer("not json"), None);
    }
}
