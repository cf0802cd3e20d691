//! `mcp-host policy explain NAME [--args JSON] [--mode M] [--after SERVER]...` and
//! `mcp-host policy test FILE`: the same decision function every call goes through, run
//! against the live catalogue without calling anything.

use super::with_manager;
use crate::catalogue::snapshot;
use crate::cli::{AnswerArg, ModeArg, PolicyCommand};
use crate::host::Host;
use anyhow::{Context as _, bail};
use mcp_host_core::ServerId;
use mcp_host_engine::gate::{CallFacts, Gate};
use mcp_host_engine::rules::compile;
use mcp_host_policy::{Decision, MemoryKey, Remembered, Verdict};
use mcp_host_registry::catalogue::Catalogue;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::process::ExitCode;

#[derive(Debug, Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
struct Case {
    #[serde(default)]
    name: Option<String>,
    tool: String,
    #[serde(default)]
    args: Value,
    #[serde(default = "default_mode")]
    mode: ModeArg,
    #[serde(default)]
    after: Vec<String>,
    expect: Verdict,
}

fn default_mode() -> ModeArg {
    ModeArg::Ask
}

pub async fn run(host: &Host, command: PolicyCommand) -> anyhow::Result<ExitCode> {
    if let PolicyCommand::Forget { server, tool } = &command {
        let n = host
            .store()
            .await?
            .forget(server.as_deref(), tool.as_deref())
            .await?;
        crate::output::outln!("forgot {n} remembered answer(s)");
        return Ok(ExitCode::SUCCESS);
    }
    let store = host.store().await?;
    let remembered = store.remembered().await?;
    let fixture = match &command {
        PolicyCommand::Test { file } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let f: Fixture = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a policy fixture", file.display()))?;
            Some(f)
        }
        _ => None,
    };
    // Explaining one tool needs only the servers that could own its name.
    let only = match &command {
        PolicyCommand::Explain {
            name,
            all_servers: false,
            ..
        }
        | PolicyCommand::Remember { name, .. } => {
            let owners = host.servers_owning(name);
            host.startable(&owners, name)?;
            if owners.len() < host.config.entries.len() {
                crate::output::errln!(
                    "note: started only {}; --all-servers also finds look-alikes among the other servers' tools",
                    owners.join(", ")
                );
            }
            Some(owners)
        }
        _ => None,
    };
    let policy = compile(&host.config)?;
    let connected = host.connect(only.as_deref(), policy, None)?;
    let limit = host.settle_limit();
    with_manager(host, connected, async move |c, _cancel| {
        let m = &c.servers;
        super::settle(host, m, limit).await;
        let (catalogue, _) = snapshot(host, m).await?;
        let judge = Judge {
            catalogue: &catalogue,
            gate: &c.gate,
            remembered: &remembered,
        };
        match command {
            PolicyCommand::Explain {
                name,
                args,
                mode,
                after,
                json,
                ..
            } => {
                let args = match args {
                    Some(a) => serde_json::from_str(&a).context("--args is not valid JSON")?,
                    None => json!({}),
                };
                let d = judge.decide(&name, &args, mode, &after)?;
                if json {
                    crate::output::print_json(&d)?;
                } else {
                    crate::output::outln!("{}: {}", verdict_word(d.verdict), d.reason);
                    crate::output::outln!("decided by: {}", serde_json::to_string(&d.decided_by)?);
                }
                Ok(ExitCode::SUCCESS)
            }
            PolicyCommand::Remember { name, answer } => {
                let Some(entry) = catalogue.get(&name) else {
                    bail!("no tool has the model-visible name `{name}`")
                };
                let key = MemoryKey {
                    server: entry.key.server.to_string(),
                    tool: entry.key.tool.clone(),
                    definition_hash: entry.hash.clone(),
                };
                let verdict = match answer {
                    AnswerArg::Allow => Verdict::Allow,
                    AnswerArg::Deny => Verdict::Deny,
                };
                store.remember(&key, verdict).await?;
                crate::output::outln!(
                    "remembered {} for `{name}` (this definition; a change asks again)",
                    verdict_word(verdict)
                );
                Ok(ExitCode::SUCCESS)
            }
            PolicyCommand::Forget { .. } => Ok(ExitCode::SUCCESS),
            PolicyCommand::Test { .. } => {
                let Some(fixture) = fixture else {
                    bail!("no fixture")
                };
                let (mut pass, mut fail) = (0, 0);
                for (i, c) in fixture.cases.iter().enumerate() {
                    let label = c.name.clone().unwrap_or_else(|| format!("case {}", i + 1));
                    match judge.decide(&c.tool, &c.args, c.mode, &c.after) {
                        Ok(d) if d.verdict == c.expect => {
                            pass += 1;
                            crate::output::outln!("PASS {label}: {}", verdict_word(d.verdict));
                        }
                        Ok(d) => {
                            fail += 1;
                            crate::output::outln!(
                                "FAIL {label}: expected {}, got {} ({})",
                                verdict_word(c.expect),
                                verdict_word(d.verdict),
                                d.reason
                            );
                        }
                        Err(e) => {
                            fail += 1;
                            crate::output::outln!("FAIL {label}: {e}");
                        }
                    }
                }
                crate::output::outln!("policy: {pass} passed, {fail} failed");
                Ok(if fail == 0 {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                })
            }
        }
    })
    .await
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Ask => "ask",
        Verdict::Deny => "deny",
    }
}

struct Judge<'a> {
    catalogue: &'a Catalogue,
    gate: &'a Gate,
    remembered: &'a Remembered,
}

impl Judge<'_> {
    fn decide(
        &self,
        name: &str,
        args: &Value,
        mode: ModeArg,
        after: &[String],
    ) -> anyhow::Result<Decision> {
        let Some(entry) = self.catalogue.get(name) else {
            bail!("no tool has the model-visible name `{name}`");
        };
        let provenance: BTreeSet<ServerId> = after.iter().map(|s| ServerId::new(s)).collect();
        let facts = CallFacts {
            mode: mode.into(),
            provenance: &provenance,
            remembered: self.remembered,
        };
        // The gate's decision half, the rules alone: explaining a decision must not run
        // the user's hook commands.
        Ok(self.gate.rules(entry, args, facts))
    }
}
