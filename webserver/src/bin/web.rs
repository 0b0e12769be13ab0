//! `web`: serves the browser chat and proxies `/api/*` to the agent.

use std::path::PathBuf;
use std::process::ExitCode;

use asg_http::process::{exit_code, init_logging, raise_open_files_limit, shutdown_signal};
use asg_web_server::{WebConfig, router};
use clap::Parser;

/// Agent Stop and Go web chat: serves the chat bundle and proxies the
/// agent's REST API under /api.
#[derive(Debug, Parser)]
#[command(name = "web", version, about)]
struct Args {
    /// The web configuration file.
    #[arg(long, short, default_value = "config/web.yaml", env = "WEB_CONFIG")]
    config: PathBuf,
    /// Overrides `agent_url`.
    #[arg(long)]
    agent_url: Option<String>,
    /// Overrides `port` (0 picks a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Overrides `host`.
    #[arg(long)]
    host: Option<String>,
    /// Overrides `dist_dir`.
    #[arg(long)]
    dist_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let open_files = raise_open_files_limit();
    init_logging();
    open_files.log();
    exit_code(run(Args::parse()).await)
}

async fn run(args: Args) -> Result<(), String> {
    let mut config = WebConfig::load(&args.config)?;
    if let Some(url) = args.agent_url {
        config.agent_url = url;
    }
    if let Some(port) = args.port {
        config.port = port;
    }
    if let Some(host) = args.host {
        config.host = host;
    }
    if let Some(dist) = args.dist_dir {
        config.dist_dir = dist;
    }
    let address = format!("{}:{}", config.host, config.port);
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    // Bound before the listening line, so a caller that waits for it
    // finds both.
    let metrics_listener = bind_metrics(&config).await?;
    println!(
        "web chat listening on http://{} (agent {}) — open http://{}:{}/",
        asg_http::process::shown(bound),
        config.agent_url,
        if config.host == "0.0.0.0" {
            "localhost"
        } else {
            &config.host
        },
        bound.port()
    );
    if let Some(metrics) = metrics_listener {
        asg_http::metrics::serve_alone(metrics, asg_web_server::metrics::open_router())
            .map_err(|e| format!("metrics_listen: {e}"))?;
    }
    asg_http::serve::serve(listener, router(&config, bound.port()), shutdown_signal())
        .await
        .map_err(|e| format!("server error: {e}"))
}

/// The `metrics_listen` address, bound, when configured.
async fn bind_metrics(config: &WebConfig) -> Result<Option<tokio::net::TcpListener>, String> {
    let Some(address) = &config.metrics_listen else {
        return Ok(None);
    };
    tokio::net::TcpListener::bind(address)
        .await
        .map(Some)
        .map_err(|e| format!("cannot listen on metrics_listen {address}: {e}"))
}
