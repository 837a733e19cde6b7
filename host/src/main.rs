//! The `wasmgate` command line.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use futures_util::{Stream, StreamExt};
use wasmgate::catalog::{Catalog, Kind, table};
use wasmgate::config::{Config, ConfigSource, Overrides};
use wasmgate::reload::{self, Reloader};

// glibc's malloc was a tenth of the gateway's CPU under load (BENCHMARKS.md, "The gateway as
// users run it"): many small, short-lived allocations per request across tokio's threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "wasmgate",
    version,
    about = "An OpenAI-compatible LLM gateway with WebAssembly plugins"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway.
    Serve(ServeArgs),
    /// List the built-in model catalog: kinds, context windows, capabilities, prices.
    Models(ModelsArgs),
    /// Store a provider's API key outside the config (hidden prompt, or standard input).
    Login(LoginArgs),
    /// Create, list and revoke the gateway's own API keys (kept hashed in the ledger database).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Create, list and revoke admin keys, the credentials of the /admin/keys API.
    #[command(subcommand)]
    AdminKey(AdminKeyCommand),
    /// The audit log of changes to keys, admin keys and the config: list it, verify its chain.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Alerts: send a test alert to every sink of the config.
    #[command(subcommand)]
    Alerts(AlertsCommand),
    /// Usage and cost over a range, in total or per model, from the ledger or a gateway.
    Usage(UsageArgs),
    /// Start, build and test a router, limiter or provider plugin in Rust, Python or JavaScript.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Check a config file without serving; print the config's JSON Schema or reference.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Read a config file as `serve` would (keys, values, plugins and their options) without
    /// serving; print `ok` or the error naming the key, and exit 1 on an error.
    Check {
        /// Config file. Default: $WASMGATE_CONFIG, else ./config.yaml if it exists, else the
        /// embedded default config.
        #[arg(env = "WASMGATE_CONFIG")]
        file: Option<PathBuf>,
    },
    /// Print the JSON Schema of config.yaml, for editors that validate and complete YAML.
    Schema,
    /// Print the configuration reference (Markdown), as docs/src/reference/config.md holds it.
    Reference,
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Write a new plugin project `<dir>/<name>` from a template, with a unit test.
    New {
        kind: wasmgate::cli::plugin::Kind,
        name: String,
        #[arg(long, value_enum, default_value = "python")]
        lang: wasmgate::cli::plugin::Lang,
        /// Where to create the project's directory.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The Rust SDK (`plugin-sdk/`) a Rust plugin depends on by path.
        #[arg(long)]
        rust_sdk: Option<PathBuf>,
    },
    /// Build the project into `<out>/<name>.wasm`; point `--out` at `plugins.dir` and a running
    /// gateway loads it within a few seconds.
    Build {
        /// The project directory.
        #[arg(default_value = ".")]
        project: PathBuf,
        #[arg(long, default_value = ".")]
        out: PathBuf,
        #[command(flatten)]
        tools: ToolchainArgs,
    },
    /// Run the project's unit tests natively, with stand-ins for the host.
    Test {
        #[arg(default_value = ".")]
        project: PathBuf,
        #[command(flatten)]
        tools: ToolchainArgs,
    },
}

#[derive(Args)]
struct ToolchainArgs {
    /// A Python virtual environment with componentize-py (default: componentize-py on PATH).
    #[arg(long, env = "WASMGATE_PYTHON_TOOLCHAIN")]
    python_toolchain: Option<PathBuf>,
    /// A directory whose node_modules has componentize-js and rolldown (default: the project).
    #[arg(long, env = "WASMGATE_JS_TOOLCHAIN")]
    js_toolchain: Option<PathBuf>,
}

impl ToolchainArgs {
    fn toolchain(self) -> wasmgate::cli::plugin::Toolchain {
        wasmgate::cli::plugin::Toolchain {
            python: self.python_toolchain,
            js: self.js_toolchain,
        }
    }
}

#[derive(Args)]
struct LoginArgs {
    /// The provider entry the key is for (its name under `providers:`), e.g. `openai`.
    #[arg(required_unless_present = "list")]
    provider: Option<String>,
    /// Forget the provider's key instead.
    #[arg(long)]
    remove: bool,
    /// List the providers that have a stored key (never the keys).
    #[arg(long, conflicts_with_all = ["provider", "remove"])]
    list: bool,
    /// The credentials file. Default: $WASMGATE_CREDENTIALS, else
    /// $XDG_CONFIG_HOME/wasmgate/credentials.yaml, else ~/.config/wasmgate/credentials.yaml.
    #[arg(long)]
    credentials: Option<PathBuf>,
}

/// Where `keys` and `usage` find the ledger database.
#[derive(Args)]
struct LedgerArgs {
    /// Config file whose `ledger.url` to use (default as for `serve`).
    #[arg(long, env = "WASMGATE_CONFIG")]
    config: Option<PathBuf>,
    /// The ledger database itself, e.g. `sqlite://./wasmgate.db` (overrides the config).
    #[arg(long)]
    ledger: Option<String>,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Make a key for a project; it is printed once, alone on standard output.
    Create {
        #[arg(long)]
        project: String,
        #[command(flatten)]
        limits: KeyLimitArgs,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
    /// Change a key's name or limits (gateways apply them within seconds); `none` clears one.
    Update {
        id: String,
        #[command(flatten)]
        limits: KeyLimitArgs,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
    /// List keys: id, project, name, first characters, limits, spend so far, state.
    List {
        #[arg(long)]
        project: Option<String>,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
    /// Revoke a key by its id; gateways refuse it within seconds.
    Revoke {
        id: String,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
}

/// A key's own limits, for `keys create|update`.
#[derive(Args)]
struct KeyLimitArgs {
    /// A note to tell keys apart in `keys list`.
    #[arg(long)]
    name: Option<String>,
    /// The only models it may use, comma-separated ids or patterns: `openai/*,gpt-4o`.
    /// Empty: every model.
    #[arg(long)]
    models: Option<String>,
    /// When it stops working: 2026-12-31, "2026-12-31 18:00" (UTC), 90m, 24h, 30d from now,
    /// or never.
    #[arg(long)]
    expires: Option<String>,
    /// Its own requests per minute (or none).
    #[arg(long)]
    rpm: Option<String>,
    /// Its own tokens per minute (or none).
    #[arg(long)]
    tpm: Option<String>,
    /// Its budget in USD per --budget-period (or none).
    #[arg(long, value_name = "USD")]
    budget: Option<String>,
    /// day (the default), month or total.
    #[arg(long, value_name = "PERIOD")]
    budget_period: Option<String>,
    /// Guards (the config's `guards:` entries, by name) applied to its requests besides those
    /// whose scope takes them, comma-separated. Empty: none of its own.
    #[arg(long)]
    guards: Option<String>,
    /// The only MCP tools it may list and call, comma-separated `<server>/<tool>` patterns:
    /// `search/*,files/read_*`. Empty: every tool its project may use.
    #[arg(long)]
    tools: Option<String>,
    /// The pass-through routes it may reach, comma-separated `<entry>/<path>` patterns:
    /// `openai/files*,openai/vector_stores*`. Empty: those of the config's `passthrough.allow`.
    #[arg(long, value_name = "PATTERNS")]
    passthrough: Option<String>,
}

impl KeyLimitArgs {
    fn into_args(self) -> wasmgate::cli::keys::LimitArgs {
        wasmgate::cli::keys::LimitArgs {
            name: self.name,
            models: self.models,
            expires: self.expires,
            rpm: self.rpm,
            tpm: self.tpm,
            budget: self.budget,
            budget_period: self.budget_period,
            guards: self.guards,
            tools: self.tools,
            passthrough: self.passthrough,
        }
    }
}

#[derive(Subcommand)]
enum AdminKeyCommand {
    /// Make an admin key for /admin/keys; it is printed once, alone on standard output.
    Create {
        /// A note to tell admin keys apart.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
    /// List admin keys: id, name, first characters, state.
    List {
        #[command(flatten)]
        ledger: LedgerArgs,
    },
    /// Revoke an admin key by its id (at once).
    Revoke {
        id: String,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
}

#[derive(Subcommand)]
enum AlertsCommand {
    /// Send a test alert to every sink of `alerts.sinks`; exit 1 if one does not take it.
    Test {
        /// Config file. Default: $WASMGATE_CONFIG, else ./config.yaml if it exists, else the
        /// embedded default config.
        #[arg(long, env = "WASMGATE_CONFIG")]
        config: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// The latest entries, oldest first: seq, time, actor, origin, action, target.
    List {
        /// Only this action (key.create, key.update, key.revoke, admin_key.create,
        /// admin_key.revoke, config.reload).
        #[arg(long)]
        action: Option<String>,
        /// How many of the latest entries.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
    /// Check every entry's hash and link; exit 1 naming the first entry changed, missing or out
    /// of the chain.
    Verify {
        #[command(flatten)]
        ledger: LedgerArgs,
    },
}

#[derive(Args)]
struct UsageArgs {
    /// The project to report on.
    #[arg(long, default_value = "default")]
    project: String,
    /// Start of the range: 2025-01-31, "2025-01-31 12:00" (UTC), or 90m, 24h, 7d ago.
    /// Default: 30 days before --until.
    #[arg(long)]
    since: Option<String>,
    /// End of the range (excluded), in the same forms. Default: now.
    #[arg(long)]
    until: Option<String>,
    /// Per model, in buckets of: minute, hour, day, week or month. Without it: the totals.
    #[arg(long, value_name = "UNIT")]
    by: Option<String>,
    /// Only this user's usage (the `extra.user` id); implies per model, by day unless --by.
    #[arg(long)]
    user: Option<String>,
    /// Only users with this tag (repeatable: any of them); implies per model, by day unless --by.
    #[arg(long)]
    tag: Vec<String>,
    /// Ask a running gateway (e.g. http://127.0.0.1:8080) instead of reading the ledger.
    #[arg(long, requires = "key")]
    gateway: Option<String>,
    /// The project's API key, for --gateway.
    #[arg(long, env = "WASMGATE_API_KEY", hide_env_values = true)]
    key: Option<String>,
    #[command(flatten)]
    ledger: LedgerArgs,
}

#[derive(Args)]
struct ModelsArgs {
    /// Config file whose `catalog:` overrides are listed too. Default: $WASMGATE_CONFIG, else
    /// ./config.yaml if it exists, else the built-in catalog alone.
    #[arg(long, env = "WASMGATE_CONFIG")]
    config: Option<PathBuf>,
    /// Only this provider's models (e.g. `openai`, `bedrock`).
    #[arg(long)]
    provider: Option<String>,
    /// Only models of this kind: chat, embeddings or images.
    #[arg(long)]
    kind: Option<Kind>,
}

#[derive(Args)]
struct ServeArgs {
    /// Config file. Default: $WASMGATE_CONFIG, else ./config.yaml if it exists, else the
    /// embedded default config (the `echo` provider, no key needed).
    #[arg(long, env = "WASMGATE_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on (overrides `server.host`).
    #[arg(long)]
    host: Option<IpAddr>,
    /// Port to listen on (overrides `server.port`; 8080 by default).
    #[arg(long)]
    port: Option<u16>,
    /// Directory of plugin components (overrides `plugins.dir`).
    #[arg(long)]
    plugins_dir: Option<PathBuf>,
    /// Log filter, e.g. `info` or `wasmgate=debug` (overrides the config and RUST_LOG).
    #[arg(long)]
    log_level: Option<String>,
    /// Adds a global limit of this many requests per minute (the `rate-limit` policy).
    #[arg(long, value_name = "N")]
    rpm: Option<u64>,
    /// Adds a global daily budget in USD (the `budget` policy).
    #[arg(long, value_name = "USD")]
    daily_budget_usd: Option<f64>,
}

/// Transparent huge pages off for this process. The heap and the plugins' linear memories are
/// touched sparsely, and a huge page makes each touched 2 MiB resident whole: with mimalloc's
/// arena advised `MADV_HUGEPAGE` the idle gateway was 66 MiB instead of 40 (BENCHMARKS.md,
/// "Where the idle RSS goes"). The `no_thp` build of mimalloc no longer advises it; this also
/// covers hosts whose THP setting is `always`. It runs as an `.init_array` entry, before the
/// runtime's first allocation: called from `main`, the arena's first 4 MiB were huge pages
/// already.
#[cfg(target_os = "linux")]
#[used]
#[expect(
    unsafe_code,
    reason = "an ELF constructor: a function pointer placed in .init_array, called once by the loader"
)]
#[unsafe(link_section = ".init_array")]
static NO_TRANSPARENT_HUGE_PAGES: extern "C" fn() = no_transparent_huge_pages;

#[cfg(target_os = "linux")]
extern "C" fn no_transparent_huge_pages() {
    // Failing (a kernel without THP) leaves nothing to turn off.
    #[expect(
        unsafe_code,
        reason = "PR_SET_THP_DISABLE takes integers and touches no memory of this process"
    )]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Start-up's memory handed back before serving (issue 38): the heap it freed, and the
/// binary's pages only it touched (`resident.rs`).
fn release_start_up_memory() {
    #[expect(
        unsafe_code,
        reason = "mi_collect takes a flag and frees only memory the allocator holds unused"
    )]
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    let released = wasmgate::resident::release_start_up_pages();
    tracing::debug!(
        kib = released.kib,
        mappings = released.mappings,
        "start-up's pages of the binary released"
    );
}

/// mimalloc's `purge_delay` (its option 15 in the v3 the crate builds): how long memory freed
/// whole stays committed before it is handed back. At v3's default of a second the heap under a
/// steady load kept the pages of the last second's churn: on the plain path at 64 at once
/// (BENCHMARKS.md, "Pages handed back sooner") the peak RSS was 59.8 to 108.2 MiB over seven
/// runs, and 57.0 to 57.4 MiB over four with 100 ms, at the same CPU per request (0 ms cost 18 %
/// more: a purge per free). `MIMALLOC_PURGE_DELAY`, when set, still wins. Set before any thread
/// starts: the option is a plain global.
fn purge_sooner() {
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    #[expect(
        unsafe_code,
        reason = "mi_option_set stores an integer option; called before the server's threads start"
    )]
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 100);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    purge_sooner();
    // One worker per core the process may run on: tokio's default count is
    // `available_parallelism`, which follows the CPU affinity (and a cgroup's CPU quota), so a
    // gateway pinned to one core runs one worker. Two workers on one core cost 10-20 % more
    // CPU per request (BENCHMARKS.md, "The last measurements"); do not replace the default
    // with the machine's CPU count.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
        Command::Models(args) => models(&args),
        Command::Login(args) => login(&args),
        Command::Keys(command) => keys(command),
        Command::AdminKey(command) => admin_key(command),
        Command::Audit(command) => audit(command),
        Command::Alerts(AlertsCommand::Test { config }) => runtime.block_on(alerts_test(config)),
        Command::Usage(args) => runtime.block_on(usage(args)),
        Command::Plugin(command) => plugin(command),
        Command::Config(command) => runtime.block_on(config(command)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Installed first, so a SIGTERM (or a SIGHUP, whose default is to exit) during start-up is
    // not the default abrupt exit.
    let stop = std::sync::Arc::new(tokio::sync::Mutex::new(stop_signals()?));
    let hangup = hangup_signal()?;
    // The first signal starts the drain; a second one (an impatient Ctrl-C) cuts it short.
    // They are awaited one after the other, so the lock is never contended.
    let shutdown = {
        let stop = std::sync::Arc::clone(&stop);
        async move {
            stop.lock().await.next().await;
            tracing::info!(
                "shutting down: finishing requests in flight (signal again to cut them)"
            );
        }
    };
    let cut_now = async move {
        stop.lock().await.next().await;
        tracing::warn!("second signal: cutting the requests still in flight");
    };
    let source = ConfigSource::discover(args.config.as_deref());
    let overrides = Overrides {
        host: args.host,
        port: args.port,
        plugins_dir: args.plugins_dir,
        log_level: args.log_level,
        requests_per_minute: args.rpm,
        daily_budget_usd: args.daily_budget_usd,
    };
    // Every config read, the first and each reload, gets the command-line overrides and the
    // provider keys from the environment or `wasmgate login` (read again: a login between two
    // reloads counts).
    let from_login = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let filled = std::sync::Arc::clone(&from_login);
    let prepare: reload::Prepare = Box::new(move |config| {
        config.apply(&overrides);
        let names = fill_provider_keys(config);
        if let Ok(mut last) = filled.lock() {
            *last = names;
        }
    });
    let (reloader, config) = Reloader::start(source, prepare)?;
    wasmgate::telemetry::init(&config.observability);
    // Said only now: the first config was read before logging was set up.
    if let Ok(names) = from_login.lock()
        && !names.is_empty()
    {
        tracing::info!(providers = ?*names, "provider keys taken from `wasmgate login`");
    }
    let addr = (config.server.host, config.server.port);
    let state = wasmgate::build_state(config).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}:{}: {e}", addr.0, addr.1))?;
    let local = listener.local_addr()?;
    release_start_up_memory();
    tracing::info!(
        "wasmgate listening on http://{local} (config: {})",
        reloader.source()
    );
    let stop_watching = tokio_util::sync::CancellationToken::new();
    let watcher = tokio::spawn(reloader.watch(
        std::sync::Arc::clone(&state),
        hangup,
        stop_watching.clone(),
        reload::POLL_INTERVAL,
    ));
    let served = wasmgate::server::run_until(listener, state, shutdown, cut_now).await;
    stop_watching.cancel();
    if let Err(e) = watcher.await {
        tracing::error!("the config watcher failed: {e}");
    }
    served?;
    tracing::info!("wasmgate stopped");
    Ok(())
}

async fn config(command: ConfigCommand) -> anyhow::Result<()> {
    use wasmgate::cli::config;
    let text = match command {
        ConfigCommand::Check { file } => {
            let source = ConfigSource::discover(file.as_deref());
            // `serve`'s own preparation: the same provider keys (no overrides are given).
            let prepare = |config: &mut Config| {
                fill_provider_keys(config);
            };
            let checked = config::check(&source, &prepare).await?;
            format!("ok: {source}: {checked}\n")
        }
        ConfigCommand::Schema => config::schema(),
        ConfigCommand::Reference => config::reference(),
    };
    write_stdout(&text)
}

/// Writes `text` to standard output; a reader that went away (`| head`) is no error.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn models(args: &ModelsArgs) -> anyhow::Result<()> {
    // The catalog the gateway would use: the built-in one with the config's overrides.
    let config = ConfigSource::discover(args.config.as_deref()).load()?;
    let catalog: &Catalog = &config.models;
    if let Some(p) = &args.provider
        && !catalog.has_provider(p)
    {
        let known: Vec<&str> = catalog.providers().map(|(name, _)| name).collect();
        anyhow::bail!("unknown provider `{p}` (known: {})", known.join(", "));
    }
    let filter = table::Filter {
        provider: args.provider.as_deref(),
        kind: args.kind,
    };
    write_stdout(&table::render(catalog, &filter))
}

/// Gives provider entries without `api_key` theirs from `<NAME>_API_KEY`, else from the
/// credentials file. A file that cannot be read is logged and skipped: the entries it would
/// have filled fail as they would without it. Returns the entries the file filled.
fn fill_provider_keys(config: &mut Config) -> Vec<String> {
    use wasmgate::credentials::{self, Credentials};
    let file = match credentials::default_path().map(|path| Credentials::load(&path)) {
        Some(Ok(file)) => file,
        Some(Err(e)) => {
            tracing::warn!("provider keys from `wasmgate login` not used: {e:#}");
            Credentials::default()
        }
        None => Credentials::default(),
    };
    credentials::fill_mcp_tokens(&mut config.mcp, |var| std::env::var(var).ok(), &file);
    credentials::fill_keys(config, |var| std::env::var(var).ok(), &file)
}

fn login(args: &LoginArgs) -> anyhow::Result<()> {
    use wasmgate::cli::login;
    let path = match &args.credentials {
        Some(path) => path.clone(),
        None => wasmgate::credentials::default_path()
            .ok_or_else(|| anyhow::anyhow!("no home directory: pass --credentials FILE"))?,
    };
    let mut stderr = std::io::stderr();
    match (&args.provider, args.list) {
        (_, true) => login::list(&path, &mut std::io::stdout().lock()),
        (Some(provider), false) if args.remove => login::logout(provider, &path, &mut stderr),
        (Some(provider), false) => {
            login::login(provider, &path, &mut std::io::stdin().lock(), &mut stderr)
        }
        (None, false) => anyhow::bail!("name the provider: `wasmgate login openai`"),
    }
}

fn open_store(args: &LedgerArgs) -> anyhow::Result<std::sync::Arc<dyn wasmgate::ledger::Store>> {
    let mut config = match &args.ledger {
        Some(_) => wasmgate::ledger::LedgerConfig::default(),
        None => {
            ConfigSource::discover(args.config.as_deref())
                .load()?
                .ledger
        }
    };
    if let Some(url) = &args.ledger {
        config.url.clone_from(url);
    }
    wasmgate::ledger::open_store(&config)
}

fn keys(command: KeysCommand) -> anyhow::Result<()> {
    use wasmgate::cli::keys;
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr());
    match command {
        KeysCommand::Create {
            project,
            limits,
            ledger,
        } => keys::create(
            open_store(&ledger)?.as_ref(),
            &project,
            &limits.into_args(),
            &mut out,
            &mut err,
        ),
        KeysCommand::Update { id, limits, ledger } => keys::update(
            open_store(&ledger)?.as_ref(),
            &id,
            &limits.into_args(),
            &mut out,
        ),
        KeysCommand::List { project, ledger } => {
            keys::list(open_store(&ledger)?.as_ref(), project.as_deref(), &mut out)
        }
        KeysCommand::Revoke { id, ledger } => {
            keys::revoke(open_store(&ledger)?.as_ref(), &id, &mut out)
        }
    }
}

fn admin_key(command: AdminKeyCommand) -> anyhow::Result<()> {
    use wasmgate::cli::keys;
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr());
    match command {
        AdminKeyCommand::Create { name, ledger } => keys::create_admin(
            open_store(&ledger)?.as_ref(),
            name.as_deref(),
            &mut out,
            &mut err,
        ),
        AdminKeyCommand::List { ledger } => {
            keys::list_admin(open_store(&ledger)?.as_ref(), &mut out)
        }
        AdminKeyCommand::Revoke { id, ledger } => {
            keys::revoke_admin(open_store(&ledger)?.as_ref(), &id, &mut out)
        }
    }
}

async fn alerts_test(config: Option<PathBuf>) -> anyhow::Result<()> {
    let config = ConfigSource::discover(config.as_deref()).load()?;
    let mut out = std::io::stdout().lock();
    if !wasmgate::cli::alerts::test(&config, &mut out).await? {
        anyhow::bail!("a sink did not take the test alert");
    }
    Ok(())
}

fn audit(command: AuditCommand) -> anyhow::Result<()> {
    use wasmgate::cli::audit;
    let mut out = std::io::stdout().lock();
    match command {
        AuditCommand::List {
            action,
            limit,
            ledger,
        } => audit::list(
            open_store(&ledger)?.as_ref(),
            action.as_deref(),
            limit,
            &mut out,
        ),
        AuditCommand::Verify { ledger } => {
            if !audit::verify(open_store(&ledger)?.as_ref(), &mut out)? {
                anyhow::bail!("the audit log's chain is broken");
            }
            Ok(())
        }
    }
}

fn plugin(command: PluginCommand) -> anyhow::Result<()> {
    use wasmgate::cli::plugin;
    let mut out = std::io::stdout().lock();
    match command {
        PluginCommand::New {
            kind,
            name,
            lang,
            dir,
            rust_sdk,
        } => {
            let sdk = rust_sdk.unwrap_or_else(plugin::default_rust_sdk);
            plugin::new(kind, &name, lang, &dir, &sdk, &mut out).map(drop)
        }
        PluginCommand::Build {
            project,
            out: dir,
            tools,
        } => plugin::build(&project, &dir, &tools.toolchain(), &mut out).map(drop),
        PluginCommand::Test { project, tools } => plugin::test(&project, &tools.toolchain()),
    }
}

async fn usage(args: UsageArgs) -> anyhow::Result<()> {
    use wasmgate::cli::usage::{self, Query, Source};
    let now = wasmgate::ledger::time::now_us();
    let end_us = match &args.until {
        Some(t) => usage::parse_time(t, now)?,
        None => now,
    };
    let start_us = match &args.since {
        Some(t) => usage::parse_time(t, now)?,
        None => end_us - 30 * wasmgate::ledger::time::DAY_US,
    };
    if start_us > end_us {
        anyhow::bail!("--since must not be after --until");
    }
    let users = wasmgate::ledger::UserFilter {
        user_id: args.user,
        user_name: None,
        user_tags: args.tag,
    };
    let per_model = match &args.by {
        None if !users.is_empty() => Some(wasmgate::ledger::Unit::Day),
        None => None,
        Some(unit) => Some(wasmgate::ledger::Unit::parse(unit).ok_or_else(|| {
            anyhow::anyhow!("--by: one of minute, hour, day, week, month; got `{unit}`")
        })?),
    };
    let source = match (args.gateway, args.key) {
        (Some(url), Some(key)) => Source::Remote {
            url,
            key: wasmgate::secret::Secret::new(key),
        },
        _ => Source::Local(open_store(&args.ledger)?),
    };
    let query = Query {
        project: args.project,
        start_us,
        end_us,
        per_model,
        users,
    };
    let mut out = Vec::new();
    usage::report(&source, &query, &mut out).await?;
    use std::io::Write as _;
    std::io::stdout().lock().write_all(&out)?;
    Ok(())
}

/// Yields on each SIGTERM and each Ctrl-C (SIGINT). The handlers are registered when this is
/// called.
fn stop_signals() -> anyhow::Result<impl Stream<Item = ()> + Unpin + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal_stream(signal(SignalKind::terminate())?);
        let interrupt = signal_stream(signal(SignalKind::interrupt())?);
        Ok(futures_util::stream::select(term, interrupt))
    }
    #[cfg(not(unix))]
    Ok(Box::pin(futures_util::stream::unfold((), |()| async {
        tokio::signal::ctrl_c().await.ok().map(|()| ((), ()))
    })))
}

/// Yields once per SIGHUP (a reload request); never yields where there are no such signals.
fn hangup_signal() -> anyhow::Result<impl Stream<Item = ()> + Unpin + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(signal_stream(signal(SignalKind::hangup())?))
    }
    #[cfg(not(unix))]
    Ok(futures_util::stream::pending())
}

#[cfg(unix)]
fn signal_stream(
    signal: tokio::signal::unix::Signal,
) -> std::pin::Pin<Box<dyn Stream<Item = ()> + Send>> {
    Box::pin(futures_util::stream::unfold(
        signal,
        |mut signal| async move { signal.recv().await.map(|()| ((), signal)) },
    ))
}
