//! `mcp-host serve`: reads the admin's catalogue (refusing to start while any of it cannot
//! be read as written), picks the model, and runs the hosted service until SIGTERM or
//! SIGINT, then lets it drain and exits 0. `serve add-user` and `serve grant` change the
//! service database directly, for the first admin and for scripts.

use crate::cli::{ConfigArgs, ServeAdmin, ServeArgs};
use anyhow::Context as _;
use mcp_host_auth::SealingKey;
use mcp_host_config::{ConfigPaths, LoadOptions, TrustLedger};
use mcp_host_engine::session::ModelChoice;
use mcp_host_serve::{Listen, Service, db::Db};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Environment variables that hold the service's own secrets.
const SERVICE_SECRETS: &[&str] = &["MCP_HOST_CREDENTIAL_KEY", "MCP_HOST_DATABASE_URL"];

pub async fn run(config: &ConfigArgs, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Before any HTTPS client is made (model providers, identity providers, remote servers).
    mcp_host_auth::install_crypto_provider();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let paths = ConfigPaths::from_env(&|k: &str| env.get(k).cloned(), cwd);
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| paths.data_dir.join("serve"));
    let database_url = (args.database_url.clone())
        .or_else(|| env.get("MCP_HOST_DATABASE_URL").cloned())
        .filter(|u| !u.is_empty());
    if let Some(admin) = args.admin {
        return administer(&database_url, &data_dir, admin).await;
    }
    let sealing = Arc::new(sealing_key(&args, &env, &data_dir)?);
    // The service's own secrets, read above, go no further: not into `${VAR}` expansion
    // in the catalogue, nor the environment of a hook or a server.
    let mut env = env;
    for secret in SERVICE_SECRETS {
        env.remove(*secret);
    }
    let lookup = |k: &str| env.get(k).cloned();
    let catalogue_file = args.catalogue.clone().unwrap_or(paths.user_file.clone());
    // The catalogue is the user-scope file of a world of its own: no project or local file.
    let catalogue_paths = ConfigPaths {
        user_file: catalogue_file.clone(),
        data_dir: data_dir.clone(),
        cwd: data_dir.clone(),
    };
    let ledger = TrustLedger::open(&data_dir.join("trust.json"))?;
    let opts = LoadOptions {
        extra_files: config.mcp_config.clone(),
        strict: false,
    };
    let catalogue = mcp_host_config::load(&catalogue_paths, &opts, &ledger, &lookup);
    // A server that cannot be used is said here, at start, not found missing by a user.
    crate::host::report_problems(&catalogue);
    let fatal = catalogue.fatal_problems().count();
    if fatal > 0 {
        anyhow::bail!(
            "the catalogue {} has {fatal} fatal problem(s) (above); the service did not start",
            catalogue_file.display()
        );
    }
    let policy = mcp_host_engine::rules::compile(&catalogue)?;
    let model = match (&args.model, env.get("MCP_HOST_MODEL")) {
        (None, None) => None,
        _ => {
            let chosen = mcp_host_models::choose(
                args.model.as_deref(),
                args.base_url.as_deref(),
                &env,
                mcp_host_engine::host::model_client(),
            )?;
            Some(ModelChoice::from(chosen))
        }
    };
    if model.is_none() {
        crate::output::errln!(
            "warning: no model (--model or MCP_HOST_MODEL): turns will be refused"
        );
    }
    let replica = args
        .replica
        .clone()
        .unwrap_or_else(|| format!("{}-{}", host_name(), std::process::id()));
    let service = Service {
        catalogue,
        policy,
        data_dir,
        env: Arc::new(env),
        supervisor: crate::host::supervisor_program()?,
        zygote: mcp_host_engine::host::Zygote::default(),
        model,
        mode: args.mode.into(),
        max_steps: args.max_steps.max(1),
        idle_stop: Duration::from_secs(args.idle_stop.max(1)),
        lease_ms: i64::try_from(args.lease_ms.max(300)).unwrap_or(10_000),
        replica,
        max_servers_per_user: args.max_servers_per_user,
        poll: Duration::from_millis(args.poll_ms.max(10)),
        sealing,
    };
    let oidc = match (&args.oidc_issuer, &args.oidc_client_id) {
        (Some(issuer), Some(client_id)) => Some(mcp_host_serve::oidc::OidcSettings {
            issuer: issuer.clone(),
            client_id: client_id.clone(),
            client_secret: match &args.oidc_client_secret_file {
                Some(f) => Some(secret_file(f, "OpenID Connect client secret")?),
                None => None,
            },
            admin_group: args.oidc_admin_group.clone(),
            allowed_group: args.oidc_allowed_group.clone(),
        }),
        _ => None,
    };
    let listen = Listen {
        addr: args.listen,
        public_url: args.public_url.clone().unwrap_or_default(),
        single_user: args.single_user,
        database_url,
        max_body: args.max_body,
        requests_per_second: args.rate,
        burst: args.rate * 5.0,
        drain: Duration::from_secs(args.drain),
        workers: args.workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
        }),
        oidc,
        metrics_token: match &args.metrics_token_file {
            Some(f) => Some(secret_file(f, "metrics token")?),
            None => None,
        },
        connections: mcp_host_serve::listener::ConnectionLimits {
            max_connections: args.max_connections,
            header_read: Duration::from_millis(args.header_timeout_ms.max(1)),
        },
    };
    let stop = stop_on_signal()?;
    mcp_host_serve::serve(service, listen, stop, |line| {
        crate::output::errln!("{line}")
    })
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// The secret (`what`) in `file`, trimmed; an empty file is refused, not taken as "no
/// secret" (which would leave `/metrics` open, or send an empty client secret, by mistake).
fn secret_file(file: &std::path::Path, what: &str) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the {what} {}", file.display()))?;
    let secret = text.trim();
    if secret.is_empty() {
        anyhow::bail!("the {what} file {} is empty", file.display());
    }
    Ok(secret.to_string())
}

/// The sealing key: from `--credential-key-file`, else `MCP_HOST_CREDENTIAL_KEY`, else the
/// data folder's own (made once, readable by this user alone).
fn sealing_key(
    args: &ServeArgs,
    env: &BTreeMap<String, String>,
    data_dir: &std::path::Path,
) -> anyhow::Result<SealingKey> {
    if let Some(file) = &args.credential_key_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the credential key {}", file.display()))?;
        return SealingKey::from_base64(&text).with_context(|| format!("{}", file.display()));
    }
    if let Some(text) = env.get("MCP_HOST_CREDENTIAL_KEY").filter(|k| !k.is_empty()) {
        return SealingKey::from_base64(text).context("MCP_HOST_CREDENTIAL_KEY");
    }
    let file = data_dir.join("credential.key");
    if !file.exists() {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::create_dir_all(data_dir)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file)
            .with_context(|| format!("cannot make {}", file.display()))?;
        f.write_all(SealingKey::generate()?.as_bytes())?;
        crate::output::errln!(
            "made the credential key {} (give every replica the same one)",
            file.display()
        );
    }
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read the credential key {}", file.display()))?;
    SealingKey::from_base64(&text).with_context(|| format!("{}", file.display()))
}

async fn administer(
    database_url: &Option<String>,
    data_dir: &std::path::Path,
    admin: ServeAdmin,
) -> anyhow::Result<ExitCode> {
    let db = Db::open(database_url.as_deref(), &data_dir.join("service.sqlite")).await?;
    match admin {
        ServeAdmin::AddUser {
            name,
            admin,
            groups,
            token_days,
        } => {
            let user = db.upsert_user(&name, admin, &groups).await?;
            let lifetime = token_days.map(mcp_host_serve::users::days);
            let (_, token) = (db.create_token(&user, "made by serve add-user", lifetime)).await?;
            crate::output::outln!("{token}");
        }
        ServeAdmin::Grant { server, principal } => db.grant(&server, &principal).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Cancelled on the first SIGTERM or SIGINT (the service drains); a second one exits at once.
fn stop_on_signal() -> anyhow::Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let stop = CancellationToken::new();
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let token = stop.clone();
    tokio::spawn(async move {
        for n in 0.. {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            if n == 0 {
                crate::output::errln!("mcp-host serve: draining (a second signal exits now)");
                token.cancel();
            } else {
                std::process::exit(130);
            }
        }
    });
    Ok(stop)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "replica".into())
}
