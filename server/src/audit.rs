//! The audit log: append-only, one JSON line per approval decision
//! (durable before the approved call runs), one per outcome, and one per
//! call an `approval.rules` entry allowed or denied (`policy` lines, naming
//! the rule). It names who decided, never a credential: a line holds the
//! principal's subject, name, role and channel, the tool and a SHA-256 of
//! its exact arguments, not the arguments themselves.
//!
//! Where the lines go follows the store: `data_dir/audit.jsonl` (synced
//! after each line) with the JSON files; the `audit_log` table of the
//! database (`postgres.rs`, each line its own committed insert) with
//! PostgreSQL, so every replica writes to the same trail.

mod postgres;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use asg_shared::{Actor, PendingApproval};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// File name under `data_dir`.
pub const FILE_NAME: &str = "audit.jsonl";

/// One line.
#[derive(Debug, Serialize)]
pub struct AuditLine<'a> {
    /// `decision`, `outcome` or `policy`.
    pub event: &'a str,
    /// When.
    pub time: DateTime<Utc>,
    /// The conversation.
    pub conversation: Uuid,
    /// The approval (none on `policy` lines: no human was asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Uuid>,
    /// The rule that decided (`policy` lines, and approvals a rule asked
    /// for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'a str>,
    /// The tool (or sub-agent).
    pub tool: &'a str,
    /// `sha256:` of the arguments' JSON.
    pub arguments_sha256: String,
    /// `sha256:` of the arguments the approver ran instead (decision
    /// lines of an edited approval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_arguments_sha256: Option<String>,
    /// `approved`, `rejected` or `canceled` (decision lines); `allowed`
    /// or `denied` (policy lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'a str>,
    /// Who decided (decision lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<&'a Actor>,
    /// Who raised the approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<&'a Actor>,
    /// The reason given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    /// `executing`, `not_run` (decision lines); `succeeded`, `failed`,
    /// `waiting_again` (outcome lines).
    pub outcome: &'a str,
}

impl<'a> AuditLine<'a> {
    /// A line about `approval`.
    pub fn about(event: &'a str, approval: &'a PendingApproval, outcome: &'a str) -> Self {
        AuditLine {
            event,
            time: Utc::now(),
            conversation: approval.conversation_id,
            approval: Some(approval.uuid),
            rule: approval.rule.as_deref(),
            tool: &approval.tool_name,
            arguments_sha256: arguments_hash(&approval.tool_args),
            edited_arguments_sha256: None,
            decision: None,
            by: None,
            requested_by: approval.requested_by.as_ref(),
            reason: None,
            outcome,
        }
    }
}

impl<'a> AuditLine<'a> {
    /// A `policy` line: `rule` allowed (`allowed`, outcome `executing`) or
    /// denied (`denied`, outcome `not_run`) a call without asking anyone.
    pub fn policy(
        conversation: Uuid,
        tool: &'a str,
        arguments: &serde_json::Map<String, Value>,
        rule: &'a str,
        allowed: bool,
    ) -> Self {
        AuditLine {
            event: "policy",
            time: Utc::now(),
            conversation,
            approval: None,
            rule: Some(rule),
            tool,
            arguments_sha256: arguments_hash(arguments),
            edited_arguments_sha256: None,
            decision: Some(if allowed { "allowed" } else { "denied" }),
            by: None,
            requested_by: None,
            reason: None,
            outcome: if allowed { "executing" } else { "not_run" },
        }
    }
}

/// `sha256:<hex>` of the arguments' JSON (keys in sorted order).
pub fn arguments_hash(arguments: &serde_json::Map<String, Value>) -> String {
    let sorted: std::collections::BTreeMap<&String, &Value> = arguments.iter().collect();
    let bytes = serde_json::to_vec(&sorted).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The audit trail: a file of one process, or a table shared by replicas.
#[derive(Debug)]
pub struct AuditLog {
    sink: Sink,
}

#[derive(Debug)]
enum Sink {
    /// `data_dir/audit.jsonl`.
    File {
        path: PathBuf,
        file: Arc<Mutex<File>>,
    },
    /// The `audit_log` table.
    Postgres(postgres::PgAudit),
}

impl AuditLog {
    /// Opens (creates, owner-only) `data_dir/audit.jsonl` for appending.
    pub fn open(data_dir: &Path) -> std::io::Result<AuditLog> {
        let path = data_dir.join(FILE_NAME);
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&path)?;
        Ok(AuditLog {
            sink: Sink::File {
                path,
                file: Arc::new(Mutex::new(file)),
            },
        })
    }

    /// The `audit_log` table of the PostgreSQL store's database (migrated
    /// with the store's schema).
    pub fn postgres(pool: sqlx::PgPool) -> AuditLog {
        AuditLog {
            sink: Sink::Postgres(postgres::PgAudit::new(pool)),
        }
    }

    /// Appends a line; returns once it is durable (the file synced, or
    /// the insert committed). The file is written on the blocking pool,
    /// the insert awaited on the pool's connection: no runtime worker
    /// waits on a disk or a database.
    pub async fn append(&self, line: &AuditLine<'_>) -> std::io::Result<()> {
        match &self.sink {
            Sink::File { file, .. } => {
                let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
                bytes.push(b'\n');
                let file = file.clone();
                tokio::task::spawn_blocking(move || {
                    let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
                    file.write_all(&bytes)?;
                    file.sync_data()
                })
                .await
                .map_err(std::io::Error::other)?
            }
            Sink::Postgres(table) => table.append(line).await,
        }
    }

    /// Where it is: the file, or `None` for the database table.
    pub fn path(&self) -> Option<&Path> {
        match &self.sink {
            Sink::File { path, .. } => Some(path),
            Sink::Postgres(_) => None,
        }
    }

    /// The lines about one conversation, in the order they were written
    /// (for tests and tools; operators query the file or the table).
    pub async fn lines(&self, conversation: Uuid) -> std::io::Result<Vec<Value>> {
        match &self.sink {
            Sink::File { path, .. } => {
                let text = tokio::fs::read_to_string(path).await?;
                let wanted = Value::from(conversation.to_string());
                Ok(text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(|line| line["conversation"] == wanted)
                    .collect())
            }
            Sink::Postgres(table) => table.lines(conversation).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn argument_hashes_ignore_key_order_and_see_every_value() {
        let a = json!({"name": "web", "value": 1});
        let b = json!({"value": 1, "name": "web"});
        let c = json!({"name": "web", "value": 2});
        let hash = |v: &Value| arguments_hash(v.as_object().unwrap());
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(hash(&a), hash(&c));
        assert!(hash(&a).starts_with("sha256:") && hash(&a).len() == 7 + 64);
    }

    #[tokio::test]
    async fn lines_are_appended_as_json_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(dir.path()).unwrap();
        let approval: PendingApproval = serde_json::from_value(json!({
            "uuid": Uuid::new_v4(), "conversation_id": Uuid::new_v4(),
            "tool_name": "resources_add", "tool_args": {"name": "x"},
            "description": "d", "created_at": Utc::now(), "call_id": "c"}))
        .unwrap();
        let actor = Actor {
            subject: "alice".into(),
            name: None,
            role: Some("approver".into()),
            via: Some("rest".into()),
        };
        let mut line = AuditLine::about("decision", &approval, "executing");
        line.decision = Some("approved");
        line.by = Some(&actor);
        log.append(&line).await.unwrap();
        log.append(&AuditLine::about("outcome", &approval, "succeeded"))
            .await
            .unwrap();
        let path = log.path().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["by"]["subject"], "alice");
        assert_eq!(lines[0]["decision"], "approved");
        assert_eq!(lines[1]["outcome"], "succeeded");
        assert!(!text.contains("\"name\":\"x\""), "arguments are hashed");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_postgres_lines_are_rows_of_the_shared_table_in_order() {
        let db = asg_tests::pg::TestDb::create().await;
        let store = crate::store::PgStore::open(&db.url, 2).await.unwrap();
        // Two replicas' logs on one database.
        let (a, b) = (
            AuditLog::postgres(store.pool()),
            AuditLog::postgres(store.pool()),
        );
        assert!(a.path().is_none());
        let approval: PendingApproval = serde_json::from_value(json!({
            "uuid": Uuid::new_v4(), "conversation_id": Uuid::new_v4(),
            "tool_name": "resources_add", "tool_args": {"name": "x"},
            "description": "d", "created_at": Utc::now(), "call_id": "c"}))
        .unwrap();
        let mut decision = AuditLine::about("decision", &approval, "executing");
        decision.decision = Some("approved");
        a.append(&decision).await.unwrap();
        b.append(&AuditLine::about("outcome", &approval, "succeeded"))
            .await
            .unwrap();
        let other = AuditLine::policy(Uuid::new_v4(), "t", &Default::default(), "r", true);
        a.append(&other).await.unwrap();
        let lines = b.lines(approval.conversation_id).await.unwrap();
        let events: Vec<&Value> = lines.iter().map(|l| &l["event"]).collect();
        assert_eq!(events, [&json!("decision"), &json!("outcome")]);
        // The same JSON object a line of audit.jsonl holds.
        assert_eq!(lines[0], serde_json::to_value(&decision).unwrap());
        assert_eq!(lines[1]["approval"], json!(approval.uuid));
        assert!(!lines[0].to_string().contains("\"name\":\"x\""));
    }
}
