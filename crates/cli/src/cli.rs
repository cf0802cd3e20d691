//! Command-line grammar (clap derive). Parsing only; the work is in `commands`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "mcp-host",
    version,
    about = "Connect a language model to many MCP servers",
    after_help = "Without a command, `mcp-host` is `mcp-host chat`, and chat's options work on their own \
        (`mcp-host -m PROVIDER:MODEL`); with `-p PROMPT` it is `mcp-host run -p PROMPT` (headless)."
)]
pub struct Cli {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// More logging on stderr (-v info, -vv debug); MCP_HOST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Without a command: the interactive host (`chat`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Also load MCP servers from this file (repeatable). Needs no approval.
    #[arg(long = "mcp-config", value_name = "FILE", global = true)]
    pub mcp_config: Vec<PathBuf>,
    /// Use only the servers from --mcp-config files.
    #[arg(long = "strict-mcp-config", global = true)]
    pub strict_mcp_config: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start every configured server and show its state (or approve/deny project servers).
    Servers(ServersArgs),
    /// List the tools of every ready server (or of one).
    Tools(ToolsArgs),
    /// Call one tool directly, without a model.
    Call(CallArgs),
    /// Run one prompt headless: the model calls tools, policy decides, the answer is printed.
    Run(RunArgs),
    /// The interactive host (the default): chat, see every call, approve or deny.
    Chat(ChatArgs),
    /// See and test the decisions the host makes on tool calls.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Sign in to remote servers (OAuth), sign out, see who is signed in.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// The hosted mode: a multi-user HTTP service with a web page (SQLite, or PostgreSQL
    /// for more than one replica). Only in a build with `--features hosted`.
    Serve(Box<ServeArgs>),
    /// Add, list and remove servers in a scope's file, or import them from another host.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Check every server (or one): its config, command, start, handshake, sign-in, tools
    /// and confinement, each failure with a one-line fix. Exit 1 when something is wrong.
    Doctor(DoctorArgs),
    /// Print a shell completion script (`mcp-host completions bash > ~/.local/share/bash-completion/completions/mcp-host`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), generated from this command line's definitions.
    Man,
    /// Show what a server wrote to stderr (kept per server in the data folder's `logs/`).
    Logs {
        server: String,
        /// How many of the last lines.
        #[arg(short = 'n', long, default_value_t = 50)]
        lines: usize,
        /// Print the log file's path instead.
        #[arg(long)]
        path: bool,
    },
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Only this server.
    pub server: Option<String>,
    /// Print the findings as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which file a server is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// Yours, for this project only (in the data folder; never shared).
    Local,
    /// The project's `.mcp.json`, shared with everyone who clones it (no secrets).
    Project,
    /// Yours, in every project (the user config file).
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    Stdio,
    Http,
    Sse,
}

/// `--from`: the config crate's names of the hosts it reads.
fn import_source() -> impl clap::builder::TypedValueParser<Value = mcp_host_config::HostKind> {
    use clap::builder::TypedValueParser;
    let names = mcp_host_config::HostKind::ALL.map(mcp_host_config::HostKind::label);
    clap::builder::PossibleValuesParser::new(names).map(|name| {
        // The possible values are exactly these labels, so one always matches.
        (mcp_host_config::HostKind::ALL.into_iter())
            .find(|k| k.label() == name)
            .unwrap_or(mcp_host_config::HostKind::ClaudeDesktop)
    })
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add a server: `mcp add NAME -- CMD ARGS…` (stdio) or `mcp add --transport http NAME URL`.
    Add {
        /// Which file to write (default: local, yours for this project).
        #[arg(short, long, value_enum, default_value_t = ScopeArg::Local)]
        scope: ScopeArg,
        /// How to reach the server (default: stdio, or http when the target is a URL).
        #[arg(short, long, value_enum)]
        transport: Option<TransportArg>,
        /// An environment variable for a stdio server (repeatable).
        #[arg(short, long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A header for an http server (repeatable).
        #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// Replace a server of that name in the scope.
        #[arg(long)]
        force: bool,
        /// The server's name.
        name: String,
        /// The command to run (stdio), or the server's URL (http, sse).
        target: String,
        /// The command's arguments (after `--` when they start with `-`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Add a server from its JSON definition (`{"command": …}` or `{"type": "http", "url": …}`).
    AddJson {
        #[arg(short, long, value_enum, default_value_t = ScopeArg::Local)]
        scope: ScopeArg,
        #[arg(long)]
        force: bool,
        name: String,
        json: String,
    },
    /// Every configured server: its scope, file and what it runs or reaches.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One server's definition, where it comes from and what it shadows.
    Get {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove a server from a scope's file (the only scope that has it, if none is given).
    Remove {
        name: String,
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Copy the servers of another host's config into a scope (what cannot be translated is
    /// listed; secrets never go into the project file).
    Import {
        /// Which host to read (default: every one whose file exists).
        #[arg(long, value_parser = import_source())]
        from: Option<mcp_host_config::HostKind>,
        /// Read this file instead of the host's usual one (needs --from).
        #[arg(long, value_name = "FILE", requires = "from")]
        file: Option<PathBuf>,
        #[arg(short, long, value_enum, default_value_t = ScopeArg::User)]
        scope: ScopeArg,
        /// Only servers with these names (repeatable; default: all).
        #[arg(long = "only", value_name = "NAME")]
        only: Vec<String>,
        /// Show what would be written, write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Replace servers of the same name in the scope.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub admin: Option<ServeAdmin>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// `postgres://…` for more than one replica (or MCP_HOST_DATABASE_URL); a SQLite file
    /// in the data folder by default.
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// Where users' stores, audit logs and run records go (default: the data dir's `serve/`).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// The admin's server catalogue: a config file (`mcpServers`, `permissions`, `hooks`)
    /// (default: the user config file).
    #[arg(long, value_name = "FILE")]
    pub catalogue: Option<PathBuf>,
    /// One admin user signed in through a one-time link printed at start; loopback only.
    #[arg(long)]
    pub single_user: bool,
    /// The address people reach the service at (for Host/Origin checks and cookies).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// `provider:model` every user's turns use (or MCP_HOST_MODEL).
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// Base URL of the model API (or OPENAI_BASE_URL).
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long, value_enum, default_value_t = ModeArg::Ask)]
    pub mode: ModeArg,
    #[arg(long, default_value_t = 20)]
    pub max_steps: usize,
    /// Stop a user's session (and servers) after this many seconds without a turn.
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    pub idle_stop: u64,
    /// A running turn's lease in milliseconds: a replica that dies leaves its turns
    /// interrupted once this passes.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub lease_ms: u64,
    /// After SIGTERM, how many seconds running turns may take to finish.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub drain: u64,
    /// This replica's name (default: host name and process id).
    #[arg(long)]
    pub replica: Option<String>,
    #[arg(long, default_value_t = 8)]
    pub max_servers_per_user: usize,
    /// Threads that run users' sessions (default: one per core).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body: usize,
    /// Requests per second per user (bursts of five times as many).
    #[arg(long, default_value_t = 20.0)]
    pub rate: f64,
    /// Sign people in with this OpenID Connect issuer (authorization code with PKCE).
    #[arg(long, value_name = "URL", requires = "oidc_client_id")]
    pub oidc_issuer: Option<String>,
    /// This service's client id at the issuer.
    #[arg(long, value_name = "ID")]
    pub oidc_client_id: Option<String>,
    /// A file holding the client secret, for a confidential client.
    #[arg(long, value_name = "FILE")]
    pub oidc_client_secret_file: Option<PathBuf>,
    /// Members of this group (the ID token's `groups` claim) are admins.
    #[arg(long, value_name = "GROUP")]
    pub oidc_admin_group: Option<String>,
    /// Only members of this group may sign in (default: anyone the issuer vouches for).
    #[arg(long, value_name = "GROUP")]
    pub oidc_allowed_group: Option<String>,
    /// The key users' OAuth credentials are sealed with: a file holding 32 bytes as base64
    /// (or MCP_HOST_CREDENTIAL_KEY). Every replica needs the same one. Without either, a
    /// key is made once in the data folder (`credential.key`, 0600).
    #[arg(long, value_name = "FILE")]
    pub credential_key_file: Option<PathBuf>,
    /// How often a stream looks for events another replica wrote, in milliseconds.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    pub poll_ms: u64,
    /// At most this many client connections open at once (more wait to be accepted).
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub max_connections: usize,
    /// A client must send a request's whole header within this many milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub header_timeout_ms: u64,
    /// `/metrics` answers only `Authorization: Bearer <the token in FILE>` (default: anyone
    /// who reaches the service).
    #[arg(long, value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ServeAdmin {
    /// Add a user (or update their role and groups) and print a new API token for them.
    AddUser {
        name: String,
        #[arg(long)]
        admin: bool,
        #[arg(long = "group")]
        groups: Vec<String>,
        /// The token stops working after this many days (default: when revoked).
        #[arg(long, value_name = "DAYS")]
        token_days: Option<u32>,
    },
    /// Let a principal (`*`, `user:NAME`, `group:NAME`) enable a catalogue server.
    Grant { server: String, principal: String },
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Sign in to an http server through the browser (or a pasted redirect address).
    Login {
        server: String,
        /// The scopes to ask for, space-separated, instead of what the config or the
        /// server names (a step-up says which).
        #[arg(long, value_name = "SCOPES")]
        scope: Option<String>,
    },
    /// Forget a server's stored credential.
    Logout { server: String },
    /// Which http servers have a stored credential.
    Status { server: Option<String> },
    /// Keep the client secret of a server's pre-registered client (`oauth.clientId`) in the
    /// credential store (the OS keyring when there is one), read from standard input, so the
    /// config needs no `clientSecret`.
    SetSecret { server: String },
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print the decision on a call and the rule that made it.
    ///
    /// In order: deny rules; a changed or look-alike tool, or one whose text addresses the
    /// model, asks; output of another server in the context asks (taint), unless the tool
    /// is read-only; ask rules; remembered answers; allow rules; then, in ask mode, a
    /// read-only tool is allowed. A tool is read-only when a server you trust marks it so,
    /// or when its server is sealed: sandboxed (strict, on a kernel that enforces files and
    /// TCP) with no folder to write, no host to reach and no launcher cache, so its calls
    /// cannot change anything outside it whatever its annotations say (`decided by: sealed`).
    Explain {
        /// Model-visible tool name (`server__tool`).
        name: String,
        /// The call's arguments as a JSON object (rules with conditions read them).
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        #[arg(long, value_enum, default_value_t = ModeArg::Ask)]
        mode: ModeArg,
        /// A server whose output is already in this turn's context (repeatable).
        #[arg(long, value_name = "SERVER")]
        after: Vec<String>,
        /// Print the decision as JSON.
        #[arg(long)]
        json: bool,
        /// Start every configured server, not only the tool's: a look-alike of another
        /// server's tool is then found too, as in a session.
        #[arg(long)]
        all_servers: bool,
    },
    /// Run a table of calls with expected decisions; exit 1 on any mismatch.
    Test { file: PathBuf },
    /// Remember an answer ("always") for a tool's current definition.
    Remember {
        name: String,
        #[arg(value_enum)]
        answer: AnswerArg,
    },
    /// Forget remembered answers: all of them, one server's, or one tool's.
    Forget {
        #[arg(long)]
        server: Option<String>,
        /// The server's own tool name (with --server).
        #[arg(long, requires = "server")]
        tool: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt.
    #[arg(short = 'p', long = "prompt", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub prompt: String,
    /// `provider:model`, e.g. `openai-compatible:llama3` (or MCP_HOST_MODEL, or `defaults.model`
    /// in the user config). Providers: anthropic, openai, openai-chat, openai-compatible,
    /// gemini, ollama.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// Base URL of the model API (`openai-compatible` needs one; or OPENAI_BASE_URL).
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Model steps allowed in the turn.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_steps: u16,
    /// Tool patterns (globs over model-visible names) allowed in this run, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub allowed_tools: Vec<String>,
    /// Headless default: deny what no rule allows.
    #[arg(long, value_enum, default_value_t = ModeArg::Deny)]
    pub mode: ModeArg,
    /// Go on with the latest conversation started in this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,
    /// Go on with the conversation with this id.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Move a call still running after this many seconds to the background (its result
    /// comes at the next turn). Default: wait for it, within its own deadline.
    #[arg(long, value_name = "SECS")]
    pub background_after: Option<u64>,
    /// The model's context window in tokens (default: a per-provider assumption).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<usize>,
    /// Before the first model request, wait at most this long for servers still starting;
    /// the turn then begins with the ready ones and late ones join at a later step.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub server_wait: u64,
}

#[derive(Debug, Clone, Default, Args)]
pub struct ChatArgs {
    /// `provider:model` (or MCP_HOST_MODEL, or `defaults.model` in the user config); without
    /// one the host still starts. Providers: anthropic, openai, openai-chat,
    /// openai-compatible, gemini, ollama.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// Base URL of the model API.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Interactive default (else the user config's `defaults.mode`, else ask): ask for what
    /// no rule allows.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Go on with the conversation with this id.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// The model's context window in tokens (default: a per-provider assumption).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    /// One JSON object per line as things happen (text, decisions, calls), then the result.
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswerArg {
    Allow,
    Deny,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModeArg {
    #[default]
    Ask,
    Auto,
    Deny,
}

impl From<mcp_host_config::DefaultMode> for ModeArg {
    fn from(m: mcp_host_config::DefaultMode) -> Self {
        match m {
            mcp_host_config::DefaultMode::Ask => Self::Ask,
            mcp_host_config::DefaultMode::Auto => Self::Auto,
            mcp_host_config::DefaultMode::Deny => Self::Deny,
        }
    }
}

impl From<ModeArg> for mcp_host_policy::Mode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Ask => Self::Ask,
            ModeArg::Auto => Self::Auto,
            ModeArg::Deny => Self::Deny,
        }
    }
}

#[derive(Debug, Args)]
pub struct ServersArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub action: Option<ServersAction>,
}

#[derive(Debug, Subcommand)]
pub enum ServersAction {
    /// Allow a server from this project's .mcp.json to start (this exact definition): shows
    /// what it will run and send, and asks on the terminal.
    Approve {
        /// The server's name in .mcp.json.
        name: String,
        /// Approve without asking (needed when standard input is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Keep a server from this project's .mcp.json from starting.
    Deny {
        /// The server's name in .mcp.json.
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Only this server (the others are not started).
    #[arg(long)]
    pub server: Option<String>,
    /// Print JSON: every definition as sent, flags and pin state.
    #[arg(long)]
    pub json: bool,
    /// Rank the tools for a plain-words query instead of listing them all.
    #[arg(long, value_name = "QUERY")]
    pub search: Option<String>,
    /// How many search results.
    #[arg(long, default_value_t = 10, requires = "search")]
    pub limit: usize,
    /// Pin the current definition of every tool that changed since it was first seen.
    #[arg(long)]
    pub accept_changes: bool,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// A server name (then TOOL is the server's own tool name), or a model-visible tool
    /// name such as `time__get_current_time` on its own.
    pub target: String,
    /// The server's own name for the tool (when TARGET is a server).
    pub tool: Option<String>,
    /// Arguments as a JSON object, or `-` to read them from stdin.
    #[arg(long, value_name = "JSON|-")]
    pub args: Option<String>,
    /// Print the whole result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Make the call N times in sequence (each through policy, hooks and the audit log) and
    /// print on stderr how long a round trip took (p50, p90, p99) and the host's CPU per
    /// call: a call's cost measured without a model. The last result is printed.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub repeat: u32,
}
