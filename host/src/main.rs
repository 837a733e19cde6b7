//! The `wasmgate` command line.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use futures_util::{Stream, StreamExt};
use wasmgate::catalog::{Catalog, Kind, table};
use wasmgate::config::{ConfigSource, Overrides};
use wasmgate::reload::{self, Reloader};

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
    // Every config read, the first and each reload, gets the command-line overrides.
    let prepare: reload::Prepare = Box::new(move |config| config.apply(&overrides));
    let (reloader, config) = Reloader::start(source, prepare)?;
    wasmgate::telemetry::init(&config.observability);
    let addr = (config.server.host, config.server.port);
    let state = wasmgate::build_state(config).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}:{}: {e}", addr.0, addr.1))?;
    let local = listener.local_addr()?;
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
