//! `agent`: the agent server. Reads `agent.yaml`, serves the REST API.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_server::app::App;
use agent_server::config::AgentConfig;
use agent_server::store::postgres;
use agent_server::telemetry;
use asg_http::process::{
    OpenFilesLimit, exit_code, init_logging, raise_open_files_limit, shutdown_signal,
};
use clap::Parser;

/// Agent Stop and Go: an agent server that stops before destructive actions
/// until a human approves them.
#[derive(Debug, Parser)]
#[command(name = "agent", version, about)]
struct Args {
    /// The agent configuration file.
    #[arg(
        long,
        short,
        default_value = "config/agent.yaml",
        env = "AGENT_CONFIG",
        global = true
    )]
    config: PathBuf,
    #[command(subcommand)]
    command: Option<Command>,
    /// Overrides `host` from the configuration.
    #[arg(long)]
    host: Option<String>,
    /// Overrides `port` from the configuration (0 picks a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Overrides `data_dir` from the configuration.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Overrides `web_chat_url` (the web chat the index page links to).
    #[arg(long)]
    web_chat_url: Option<String>,
}

/// What to do instead of serving.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Creates or migrates the PostgreSQL store's schema (`store.url` or
    /// `DATABASE_URL`), then exits. The agent also does it at startup.
    Migrate,
    /// Reads and validates the configuration (every field, `${VAR}`
    /// expansion in model names), prints what it configures, then exits:
    /// 0 when it would start, 2 with the problem otherwise. Nothing is
    /// started or connected.
    Check,
}

/// jemalloc gives memory freed after a burst back to the system (its
/// dirty pages decay in seconds), where glibc's malloc kept most of it.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts: freed pages go back to the
/// system about a second after a burst, from one thread of jemalloc's
/// own, even while the agent is idle (by default they are returned only
/// when the agent allocates again: after 1,000 clients left, an idle
/// agent kept 87 MiB; with these options 39 MiB, 36 at start).
/// `_RJEM_MALLOC_CONF` in the environment still overrides them.
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8] =
    b"background_thread:true,max_background_threads:1,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

/// Gives the calling thread's jemalloc cache back to its arena, whose
/// free pages then go back to the system as freed ones do
/// (`asg_http::thread_cache`: idle threads call it).
fn flush_thread_cache() {
    // SAFETY: `thread.tcache.flush` reads and writes no value (all
    // pointers null, length 0) and acts on the calling thread only; the
    // name is a NUL-terminated C string. Its result is not needed: with
    // the cache off it fails and there is nothing to give back.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"thread.tcache.flush".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// Most threads tokio's blocking pool may start (default 512). Storage
/// runs on its own fixed threads (`limits.storage_threads`); this bounds
/// the rest (audit lines, push configs) under a flood.
const MAX_BLOCKING_THREADS: usize = 64;

fn main() -> ExitCode {
    let args = Args::parse();
    let open_files = raise_open_files_limit();
    asg_http::thread_cache::set_flush(flush_thread_cache);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .on_thread_park(asg_http::thread_cache::flush_on_park)
        .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(error) => return exit_code(Err(format!("cannot start the runtime: {error}"))),
    };
    exit_code(runtime.block_on(async {
        match args.command {
            Some(Command::Migrate) => {
                init_logging();
                migrate(&args.config).await
            }
            Some(Command::Check) => {
                init_logging();
                check(&args.config)
            }
            None => run(args, open_files).await,
        }
    }))
}

/// `agent migrate`: the database schema alone.
async fn migrate(config: &std::path::Path) -> Result<(), String> {
    let config = AgentConfig::load(config).map_err(|e| e.to_string())?;
    let env = |name: &str| std::env::var(name).ok();
    let Some(url) = config.store.database_url(&env)? else {
        return Err(
            "no database: set store.url or DATABASE_URL (the JSON files need no migration)"
                .to_string(),
        );
    };
    let pool = postgres::connect(&url, 1)
        .await
        .map_err(|e| e.to_string())?;
    postgres::migrate(&pool).await.map_err(|e| e.to_string())?;
    println!("database {} is migrated", postgres::describe(&url));
    Ok(())
}

/// `agent check`: the configuration alone.
fn check(path: &std::path::Path) -> Result<(), String> {
    let config = AgentConfig::load(path).map_err(|e| e.to_string())?;
    let store = match config.store.url.as_deref() {
        Some(_) => "PostgreSQL (store.url)",
        None => "JSON files in data_dir",
    };
    println!(
        "{}: valid. Agent {:?} on {}:{}, model {}, {} MCP server(s), {} sub-agent(s), store: {store}",
        path.display(),
        config.name,
        config.host,
        config.port,
        config.llm.model,
        config.mcp_servers.len(),
        config.a2a.len(),
    );
    Ok(())
}

async fn run(args: Args, open_files: OpenFilesLimit) -> Result<(), String> {
    let mut config = AgentConfig::load(&args.config).map_err(|e| e.to_string())?;
    if let Some(host) = args.host {
        config.host = host;
    }
    if let Some(port) = args.port {
        config.port = port;
    }
    if let Some(data_dir) = args.data_dir {
        config.data_dir = data_dir;
    }
    if let Some(url) = args.web_chat_url {
        config.set_web_chat_url(url).map_err(|e| e.to_string())?;
    }
    let config_dir = args
        .config
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    // Logging and traces, named after the agent (the configuration is
    // read first: its errors are printed, not logged).
    let telemetry = telemetry::init(&config.name, config.telemetry.record_arguments)?;
    open_files.log();
    let address = format!("{}:{}", config.host, config.port);
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let metrics_listener = match &config.metrics_listen {
        Some(address) => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .map_err(|e| format!("cannot listen on metrics_listen {address}: {e}"))?,
        ),
        None => None,
    };
    let app = App::build(config, &config_dir, &|name| std::env::var(name).ok())
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "agent {:?} listening on http://{bound} (public URL {})",
        app.config.name,
        app.config.public_base_url(bound.port())
    );
    if let Some(listener) = metrics_listener {
        asg_http::metrics::serve_alone(listener, app.metrics_router())
            .map_err(|e| format!("metrics_listen: {e}"))?;
    }
    let served = app
        .serve(listener, shutdown_signal())
        .await
        .map_err(|e| format!("server error: {e}"));
    telemetry.shutdown();
    served
}
