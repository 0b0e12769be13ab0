//! `agent`: the agent server. Reads `agent.yaml`, serves the REST API.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_server::app::{App, exit_code, init_logging, shutdown_signal};
use agent_server::config::AgentConfig;
use clap::Parser;

/// Agent Stop and Go: an agent server that stops before destructive actions
/// until a human approves them.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The agent configuration file.
    #[arg(long, short, default_value = "config/agent.yaml", env = "AGENT_CONFIG")]
    config: PathBuf,
    /// Overrides `host` from the configuration.
    #[arg(long)]
    host: Option<String>,
    /// Overrides `port` from the configuration (0 picks a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Overrides `data_dir` from the configuration.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    init_logging();
    exit_code(run(Args::parse()).await)
}

async fn run(args: Args) -> Result<(), String> {
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
    let config_dir = args
        .config
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let address = format!("{}:{}", config.host, config.port);
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let app = App::build(config, &config_dir, &|name| std::env::var(name).ok())
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "agent {:?} listening on http://{bound} (public URL {})",
        app.config.name,
        app.config.public_base_url(bound.port())
    );
    app.serve(listener, shutdown_signal())
        .await
        .map_err(|e| format!("server error: {e}"))
}
