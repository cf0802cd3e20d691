//! `mcp-host auth login|logout|status [SERVER]`: OAuth for remote servers. `login` signs in
//! through the browser (or a pasted redirect) and stores the credential; later connections
//! use it and refresh it without asking. Credentials go to the OS keyring (Secret Service)
//! when it works, else to 0600 files under `$XDG_DATA_HOME/mcp-host/credentials`; `status`
//! says which.

use crate::cli::AuthCommand;
use crate::host::Host;
use crate::login::{LOGIN_TIMEOUT, LoopbackAuthorizer};
use anyhow::{Context, bail};
use mcp_host_auth::{
    AuthSettings, CredentialStore, FreshSignIn, Grant, OAuth, VaultCredentialStore,
};
use mcp_host_config::{ServerReadiness, ServerSpec, Transport};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub async fn run(host: &Host, command: AuthCommand) -> anyhow::Result<ExitCode> {
    match command {
        AuthCommand::Login { server, scope } => login(host, &server, scope.as_deref()).await,
        AuthCommand::Logout { server } => logout(host, &server).await,
        AuthCommand::Status { server } => status(host, server.as_deref()).await,
        AuthCommand::SetSecret { server } => set_secret(host, &server).await,
    }
}

/// The configured http servers (by name) with their URL and spec.
fn http_servers<'h>(host: &'h Host, only: Option<&str>) -> Vec<(&'h str, &'h ServerSpec, &'h str)> {
    host.config
        .entries
        .iter()
        .filter(|e| only.is_none_or(|n| n == e.name))
        .filter_map(|e| match &e.readiness {
            ServerReadiness::Start(spec) => match &spec.transport {
                Transport::Http { url, .. } => Some((e.name.as_str(), spec, url.as_str())),
                Transport::Stdio { .. } => None,
            },
            _ => None,
        })
        .collect()
}

fn one<'h>(host: &'h Host, name: &str) -> anyhow::Result<(&'h ServerSpec, &'h str)> {
    match http_servers(host, Some(name)).first() {
        Some((_, spec, url)) => Ok((spec, url)),
        None => {
            if host.config.entries.iter().any(|e| e.name == name) {
                bail!("`{name}` is not an enabled http server; OAuth is for remote servers")
            }
            bail!("no server named `{name}` is configured")
        }
    }
}

fn store_for(host: &Host, url: &str) -> anyhow::Result<VaultCredentialStore> {
    Ok(VaultCredentialStore::new(host.credentials.clone(), url)?)
}

async fn login(host: &Host, name: &str, scope: Option<&str>) -> anyhow::Result<ExitCode> {
    let (spec, url) = one(host, name)?;
    let Transport::Http { headers, .. } = &spec.transport else {
        bail!("`{name}` is not an http server")
    };
    let authorizer = Arc::new(LoopbackAuthorizer::bind((*host.env).clone()).await?);
    let mut settings = AuthSettings::new(
        authorizer.redirect_uri(),
        Grant::AuthorizationCode(authorizer.clone()),
    )
    .configured(spec.oauth.as_deref())?;
    if let Some(scope) = scope {
        let scopes: Vec<String> = scope.split_whitespace().map(str::to_string).collect();
        if scopes.is_empty() {
            bail!("--scope is empty; name the scopes to ask for, space-separated");
        }
        settings.scopes = Some(scopes);
    }
    let store = store_for(host, url)?;
    let settings = settings.with_stored_secret(&store).await?;
    let store = store.with_client_secret(settings.client_secret.clone());
    let oauth =
        OAuth::with_store(url, settings, Arc::new(FreshSignIn::new(Arc::new(store)))).await?;
    mcp_host_engine::host::sign_in(
        url,
        headers,
        &oauth,
        LOGIN_TIMEOUT + Duration::from_secs(60),
    )
    .await
    .with_context(|| format!("cannot sign in to `{name}`"))?;
    if oauth.rounds() == 0 {
        crate::output::outln!("`{name}` did not ask for authorization; nothing was stored");
    } else {
        let scopes = oauth.granted_scopes().await;
        crate::output::outln!(
            "signed in to `{name}`{}; the credential is stored and refreshed as needed",
            if scopes.is_empty() {
                String::new()
            } else {
                format!(" (scopes: {})", scopes.join(" "))
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn set_secret(host: &Host, name: &str) -> anyhow::Result<ExitCode> {
    let (spec, url) = one(host, name)?;
    let Some(client_id) = spec.oauth.as_ref().and_then(|o| o.client_id.as_deref()) else {
        bail!("`{name}` has no pre-registered client: set `oauth.clientId` in its config first")
    };
    let prompt = format!("client secret of `{client_id}` for `{name}`: ");
    let secret = read_secret(&prompt, &host.interrupted).await?;
    store_for(host, url)?
        .store_client_secret(client_id, &secret)
        .await?;
    let place = host
        .credentials
        .protection()
        .map(|p| p.to_string())
        .unwrap_or_else(|e| e.to_string());
    crate::output::outln!("kept the client secret for `{name}` in {place}");
    Ok(ExitCode::SUCCESS)
}

/// Terminal echo off until dropped: the terminal is given back on every way out.
struct EchoOff(nix::sys::termios::Termios);

impl EchoOff {
    fn new(terminal: &std::io::Stdin) -> anyhow::Result<Self> {
        use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
        let saved = tcgetattr(terminal)?;
        let mut quiet = saved.clone();
        quiet.local_flags.remove(LocalFlags::ECHO);
        tcsetattr(terminal, SetArg::TCSANOW, &quiet)?;
        Ok(Self(saved))
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        use nix::sys::termios::{SetArg, tcsetattr};
        // Nothing better to do if the terminal went away meanwhile.
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, &self.0);
    }
}

/// One secret from standard input: typed without echo at a terminal, else the first line.
/// Ctrl-C gives up (the read runs on its own thread, so the interrupt is not lost in it).
async fn read_secret(prompt: &str, interrupted: &CancellationToken) -> anyhow::Result<String> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    let echo_off = if stdin.is_terminal() {
        crate::output::write_err_inline(prompt);
        Some(EchoOff::new(&stdin)?)
    } else {
        None
    };
    let (line_tx, line_rx) = tokio::sync::oneshot::channel();
    // A plain thread, not spawn_blocking: an abandoned read must not hold up the exit.
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line).map(|_| line);
        let _ = line_tx.send(read);
    });
    let line = tokio::select! {
        read = line_rx => read.context("the reading thread stopped")??,
        () = interrupted.cancelled() => bail!("interrupted"),
    };
    if echo_off.is_some() {
        crate::output::errln!("");
    }
    let secret = line.trim_end_matches(['\r', '\n']).to_string();
    if secret.is_empty() {
        bail!("no secret was given on standard input");
    }
    Ok(secret)
}

async fn logout(host: &Host, name: &str) -> anyhow::Result<ExitCode> {
    let (_, url) = one(host, name)?;
    store_for(host, url)?.clear().await?;
    crate::output::outln!("signed out of `{name}`: its stored credential is gone");
    Ok(ExitCode::SUCCESS)
}

async fn status(host: &Host, only: Option<&str>) -> anyhow::Result<ExitCode> {
    if let Some(name) = only {
        one(host, name)?;
    }
    let servers = http_servers(host, only);
    if servers.is_empty() {
        crate::output::outln!("no http servers are configured");
        return Ok(ExitCode::SUCCESS);
    }
    match host.credentials.protection() {
        Ok(p) => crate::output::outln!("credentials: {p}"),
        Err(e) => crate::output::outln!("credentials: {e}"),
    }
    for (name, _, url) in servers {
        let line = match store_for(host, url)?.peek().await {
            Ok(Some(c)) if c.token_response.is_none() => {
                format!("not signed in, client secret kept (mcp-host auth login {name})")
            }
            Ok(Some(c)) => {
                let scopes = if c.granted_scopes.is_empty() {
                    String::new()
                } else {
                    format!(", scopes: {}", c.granted_scopes.join(" "))
                };
                let issuer = c
                    .issuer
                    .map(|i| format!(", issuer {i}"))
                    .unwrap_or_default();
                format!("signed in{issuer}{scopes}")
            }
            Ok(None) => format!("not signed in (mcp-host auth login {name})"),
            Err(e) => format!("credential unreadable: {e}"),
        };
        crate::output::outln!("{name}: {line}");
    }
    Ok(ExitCode::SUCCESS)
}
