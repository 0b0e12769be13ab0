//! The PostgreSQL side of the store comparison: a fresh database per agent
//! on the server `--database-url` names (created here, dropped when the
//! [`BenchDb`] goes, on every path), its schema made by the agent's own
//! `agent migrate`, and B's seeded with the same conversations as the JSON
//! files ([`crate::seed::conversation`]), one row each as the store writes
//! them.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use crate::seed::{self, Seeded};

/// The server used when neither `--database-url` nor the environment
/// names one (the one `scripts/test.sh` also uses).
pub const DEFAULT_SERVER: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// How long reaching the server may take before it counts as absent.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `agent migrate` may take.
const MIGRATE_TIMEOUT: Duration = Duration::from_secs(60);
/// Rows per `INSERT` when seeding.
const SEED_BATCH: usize = 500;

/// The server: `--database-url`, else `ASG_BENCH_DATABASE_URL`, else
/// `ASG_TEST_DATABASE_URL`, else [`DEFAULT_SERVER`].
pub fn server_url(flag: Option<&str>) -> String {
    flag.map(str::to_string)
        .or_else(|| std::env::var("ASG_BENCH_DATABASE_URL").ok())
        .or_else(|| std::env::var("ASG_TEST_DATABASE_URL").ok())
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_SERVER.to_string())
}

/// The URL without user, password or query, for messages.
pub fn describe(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}{}{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => "an unparsable URL".into(),
    }
}

/// A connection, or an error once [`CONNECT_TIMEOUT`] has passed.
async fn connect(url: &str) -> Result<PgConnection> {
    match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect(url)).await {
        Ok(connection) => Ok(connection?),
        Err(_) => Err(anyhow!("no answer within {CONNECT_TIMEOUT:?}")),
    }
}

/// Whether the server answers (the error says why not).
pub async fn reach(server: &str) -> Result<()> {
    connect(server).await?.close().await?;
    Ok(())
}

/// A database of the benchmark's own.
pub struct BenchDb {
    /// Its URL (the server's, with this database's name).
    pub url: String,
    server: String,
    name: String,
}

impl BenchDb {
    /// Creates `asg_bench_<random>_<role>` on `server`.
    pub async fn create(server: &str, role: &str) -> Result<BenchDb> {
        let name = format!("asg_bench_{}_{role}", Uuid::new_v4().simple());
        let mut connection = connect(server).await?;
        // The name is ours (hex and a fixed role), never input.
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut connection)
            .await
            .with_context(|| format!("cannot create database {name}"))?;
        let _ = connection.close().await;
        let mut url = reqwest::Url::parse(server).context("the database URL is not a URL")?;
        url.set_path(&name);
        Ok(BenchDb {
            url: url.to_string(),
            server: server.to_string(),
            name,
        })
    }
}

impl Drop for BenchDb {
    fn drop(&mut self) {
        let (server, name) = (self.server.clone(), self.name.clone());
        // A thread and runtime of its own: this may run on the way out of
        // the benchmark's runtime.
        let dropped = std::thread::spawn(move || -> Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let mut connection = connect(&server).await?;
                let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .execute(&mut connection)
                    .await?;
                Ok(())
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("loadgen: could not drop database {}", self.name);
        }
    }
}

/// `agent migrate` on `url`: the schema exactly as the agent makes it.
pub async fn migrate(agent: &Path, config: &Path, url: &str) -> Result<()> {
    let run = tokio::process::Command::new(agent)
        .arg("--config")
        .arg(config)
        .arg("migrate")
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(MIGRATE_TIMEOUT, run)
        .await
        .map_err(|_| anyhow!("agent migrate took more than {MIGRATE_TIMEOUT:?}"))?
        .with_context(|| format!("cannot run {} migrate", agent.display()))?;
    ensure!(
        output.status.success(),
        "agent migrate failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

/// Inserts `count` conversations into the migrated database at `url`.
pub async fn seed(url: &str, count: usize) -> Result<Seeded> {
    let started = Instant::now();
    let mut connection = connect(url).await?;
    let now = Utc::now();
    let ids: Vec<Uuid> = (0..count).map(|_| Uuid::new_v4()).collect();
    let mut bytes = 0;
    for (part, chunk) in ids.chunks(SEED_BATCH).enumerate() {
        bytes += insert_batch(&mut connection, chunk, part * SEED_BATCH, now).await?;
    }
    let _ = connection.close().await;
    Ok(Seeded {
        pending: (0..count).filter(|i| seed::is_pending(*i)).count(),
        ids,
        bytes,
        elapsed: started.elapsed(),
    })
}

/// One `INSERT` of the conversations `ids` (numbered from `first`); the
/// bytes of JSON written.
async fn insert_batch(
    connection: &mut PgConnection,
    ids: &[Uuid],
    first: usize,
    now: DateTime<Utc>,
) -> Result<u64> {
    let (mut statuses, mut created, mut updated, mut docs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (offset, id) in ids.iter().enumerate() {
        let conversation = seed::conversation(*id, first + offset, now);
        statuses.push(conversation.status.as_str().to_string());
        created.push(conversation.created_at);
        updated.push(conversation.updated_at);
        docs.push(serde_json::to_string(&conversation).context("cannot encode a conversation")?);
    }
    let bytes = docs.iter().map(|d| d.len() as u64).sum();
    sqlx::query(
        "INSERT INTO conversations (id, status, created_at, updated_at, doc) \
         SELECT id, status, created_at, updated_at, doc::jsonb FROM UNNEST \
         ($1::uuid[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[]) \
         AS t (id, status, created_at, updated_at, doc)",
    )
    .bind(ids)
    .bind(statuses)
    .bind(created)
    .bind(updated)
    .bind(docs)
    .execute(connection)
    .await
    .context("cannot insert the seeded conversations")?;
    Ok(bytes)
}
