//! The screen's commands as session operations, slash commands included (the screen handles
//! `/mcp`, `/tools`, `/help` and `/quit` itself): `/model provider:model`, `/clear`,
//! `/resume [ID]`, `/compact`, `/call SERVER TOOL {json}` (the person typing it is the approval, as with
//! `mcp-host call`; deny rules and hooks still apply) and `/server:prompt [args]`.

use mcp_host_engine::Approval;
use mcp_host_engine::session::{Op, SessionHandle};
use mcp_host_policy::AnswerScope;
use mcp_host_tui::{App, Command, Update};
use serde_json::Value;

/// Sends the session what a command asks; a slash command that cannot be read is answered
/// on screen.
pub(super) fn submit(session: &SessionHandle, command: Command, app: &mut App) {
    let op = match command {
        Command::Submit(text) => Op::UserTurn(text),
        Command::Slash { name, args } => match slash(&name, &args) {
            Ok(op) => op,
            Err(why) => return app.apply(Update::Notice(why)),
        },
        Command::Approve { call_id, scope } => Op::Answer {
            call_id,
            approval: Approval::Allow { scope },
        },
        Command::Deny { call_id, reason } => Op::Answer {
            call_id,
            approval: Approval::Deny {
                scope: AnswerScope::Once,
                reason,
            },
        },
        Command::CancelTurn => Op::Interrupt,
        Command::Quit => Op::Shutdown,
        Command::Reconnect(server) => Op::Reconnect(server),
        Command::SetEnabled { server, enabled } => Op::SetEnabled { server, enabled },
        Command::ApproveProjectServer(server) => Op::ApproveProjectServer(server),
        Command::ElicitationAnswer { id, answer } => Op::AnswerElicitation { id, answer },
    };
    session.submit(op);
}

fn slash(name: &str, args: &str) -> Result<Op, String> {
    match name {
        "model" => Ok(Op::SetModel(args.trim().to_string())),
        "clear" => Ok(Op::NewConversation),
        "compact" => Ok(Op::Compact),
        "resume" => Ok(Op::Resume(
            Some(args.trim())
                .filter(|a| !a.is_empty())
                .map(str::to_string),
        )),
        "call" => direct_call(args),
        other => match other.split_once(':') {
            Some((server, prompt)) => Ok(Op::Prompt {
                server: server.to_string(),
                prompt: prompt.to_string(),
                args: args.to_string(),
            }),
            None => Err(format!("unknown command /{other}; /help lists them")),
        },
    }
}

/// `/call SERVER TOOL [JSON]`.
fn direct_call(args: &str) -> Result<Op, String> {
    let mut parts = args.trim().splitn(3, char::is_whitespace);
    let (Some(server), Some(tool)) = (parts.next(), parts.next()) else {
        return Err("usage: /call SERVER TOOL {json arguments}".into());
    };
    let arguments: Value = match parts.next().map(str::trim).filter(|s| !s.is_empty()) {
        None => Value::Object(Default::default()),
        Some(text) => match serde_json::from_str(text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Err("the arguments must be a JSON object".into()),
            Err(e) => return Err(format!("the arguments are not valid JSON: {e}")),
        },
    };
    Ok(Op::DirectCall {
        server: server.to_string(),
        tool: tool.to_string(),
        args: arguments,
    })
}
