//! The `wasmgate` command line.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use wasmgate::catalog::{Catalog, Kind, table};
use wasmgate::config::{Config, DEFAULT_CONFIG, Overrides};

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
}

#[derive(Args)]
struct ModelsArgs {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    // Installed first, so a SIGTERM during start-up is not the default (abrupt) exit.
    let shutdown = shutdown_signal()?;
    let (mut config, source) = load_config(args.config.as_deref())?;
    config.apply(&Overrides {
        host: args.host,
        port: args.port,
        plugins_dir: args.plugins_dir,
        log_level: args.log_level,
        requests_per_minute: args.rpm,
        daily_budget_usd: args.daily_budget_usd,
    });
    wasmgate::telemetry::init(&config.observability);
    let addr = (config.server.host, config.server.port);
    let state = wasmgate::build_state(config).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}:{}: {e}", addr.0, addr.1))?;
    let local = listener.local_addr()?;
    tracing::info!("wasmgate listening on http://{local} (config: {source})");
    wasmgate::server::run(listener, state, shutdown).await?;
    tracing::info!("wasmgate stopped");
    Ok(())
}

fn models(args: &ModelsArgs) -> anyhow::Result<()> {
    use std::io::Write as _;
    let catalog = Catalog::builtin();
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
    match std::io::stdout()
        .lock()
        .write_all(table::render(catalog, &filter).as_bytes())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn load_config(path: Option<&Path>) -> anyhow::Result<(Config, String)> {
    if let Some(path) = path {
        return Ok((Config::from_file(path)?, path.display().to_string()));
    }
    let local = Path::new("config.yaml");
    if local.exists() {
        return Ok((Config::from_file(local)?, "./config.yaml".to_owned()));
    }
    Ok((
        Config::from_yaml(DEFAULT_CONFIG)?,
        "embedded default".to_owned(),
    ))
}

/// Resolves on Ctrl-C or SIGTERM. The handlers are registered when this is called.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let ctrl_c = tokio::signal::ctrl_c();
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
        #[cfg(not(unix))]
        drop(ctrl_c.await);
        tracing::info!("shutting down: finishing requests in flight");
    })
}
