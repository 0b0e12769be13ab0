//! The cost of telemetry on full turns (issue 23): the turn phase on a
//! fresh agent three times, one after the other —
//!
//! - `off`: no `OTEL_*` variables; the metrics are counted (they always
//!   are) but nobody scrapes them;
//! - `metrics scraped`: the same while a scraper reads `GET /metrics`
//!   every second (Prometheus' default is every 15 s);
//! - `traces on`: spans of every request, turn, model and tool call
//!   exported over OTLP/HTTP to a local sink that accepts them.
//!
//! Each row has the machine's load average beside it; the ratio column
//! compares its turns/s with `off`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::Settings;
use crate::agent::{AgentProcess, AgentSpec};
use crate::phase::{Phase, aligned_table, ms, phase_json};

/// One measured variant.
pub struct Variant {
    /// `off`, `metrics scraped`, `traces on`.
    pub name: &'static str,
    /// The turn phase.
    pub phase: Phase,
}

/// The three variants and what the sink received.
pub struct Overhead {
    /// In the order measured.
    pub variants: Vec<Variant>,
    /// OTLP export requests the sink accepted (traces on).
    pub exports: u64,
    /// Their bytes.
    pub export_bytes: u64,
}

/// A local OTLP/HTTP endpoint that accepts every export and counts it.
struct Sink {
    url: String,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl Sink {
    async fn start() -> Result<Sink> {
        let requests = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let (r, b) = (requests.clone(), bytes.clone());
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let (r, b) = (r.clone(), b.clone());
                async move {
                    r.fetch_add(1, Ordering::Relaxed);
                    b.fetch_add(body.len() as u64, Ordering::Relaxed);
                    (
                        [("content-type", "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen for the OTLP sink")?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Sink {
            url,
            requests,
            bytes,
        })
    }
}

/// Reads `GET /metrics` every second until aborted.
async fn scrape(http: reqwest::Client, url: String) {
    loop {
        if let Ok(response) = http.get(&url).send().await {
            let _ = response.bytes().await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Runs the three variants on fresh agents (data in `dir`).
pub async fn run(s: &Settings, http: &reqwest::Client, dir: &std::path::Path) -> Result<Overhead> {
    let sink = Sink::start().await?;
    let mut variants = Vec::new();
    for name in ["off", "metrics scraped", "traces on"] {
        eprintln!("loadgen: telemetry overhead, turns with telemetry {name}");
        let slug = name.replace(' ', "-");
        let mut env = Vec::new();
        if name == "traces on" {
            env.push(("OTEL_EXPORTER_OTLP_ENDPOINT".into(), sink.url.clone()));
        }
        let spec = AgentSpec {
            binary: s.agent.clone(),
            config: s.config.clone(),
            data_dir: dir.join(format!("data-{slug}")),
            log_file: dir.join(format!("agent-{slug}.log")),
            rust_log: s.rust_log.clone(),
            env,
        };
        let agent = AgentProcess::start(&spec, http).await?;
        let scraper = (name == "metrics scraped")
            .then(|| tokio::spawn(scrape(http.clone(), format!("{}/metrics", agent.url))));
        let phase = crate::turn_phase(s, http, &[&agent]).await;
        if let Some(scraper) = scraper {
            scraper.abort();
        }
        agent.stop().await?;
        variants.push(Variant {
            name,
            phase: phase?,
        });
    }
    Ok(Overhead {
        variants,
        exports: sink.requests.load(Ordering::Relaxed),
        export_bytes: sink.bytes.load(Ordering::Relaxed),
    })
}

impl Overhead {
    fn off_rate(&self) -> f64 {
        self.variants.first().map_or(0.0, |v| v.phase.result.rate())
    }

    /// The table: turns/s, latency, ratio to `off`, load average.
    pub fn table(&self) -> String {
        let mut out = String::from("\nTelemetry overhead (full turns, fresh agent each):\n\n");
        let mut rows = vec![
            [
                "telemetry",
                "turns/s",
                "p50 ms",
                "p99 ms",
                "vs off",
                "errors",
                "load average",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for v in &self.variants {
            let r = &v.phase.result;
            rows.push(vec![
                v.name.to_string(),
                format!("{:.0}", r.rate()),
                format!("{:.1}", ms(r.percentile(50.0))),
                format!("{:.1}", ms(r.percentile(99.0))),
                format!("{:.2}×", r.rate() / self.off_rate().max(f64::MIN_POSITIVE)),
                r.errors.to_string(),
                v.phase.load_text(),
            ]);
        }
        aligned_table(&mut out, &rows, &|c| c == 0 || c == 6);
        out.push_str(&format!(
            "\nThe OTLP sink accepted {} export requests ({} KiB).\n",
            self.exports,
            self.export_bytes / 1024
        ));
        out
    }

    /// As JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "variants": self.variants.iter().map(|v| json!({
                "telemetry": v.name,
                "phase": phase_json(&v.phase),
                "ratio_to_off": v.phase.result.rate() / self.off_rate().max(f64::MIN_POSITIVE),
            })).collect::<Vec<_>>(),
            "otlp_exports": self.exports,
            "otlp_export_bytes": self.export_bytes,
        })
    }

    /// Failed turns in all variants.
    pub fn errors(&self) -> usize {
        self.variants.iter().map(|v| v.phase.result.errors).sum()
    }
}
