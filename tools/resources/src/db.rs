//! SQLite storage of the `mcp-resources` server: one `resources` table of
//! named integer values.
//!
//! The methods are synchronous (rusqlite); callers on the async runtime run
//! them with `tokio::task::spawn_blocking`. The connection is not `Sync`, so
//! it lives behind a `std::sync::Mutex`.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use anyhow::Context as _;
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use serde::Serialize;

/// One row of the `resources` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// Generated id: `res_` and 8 hex characters.
    pub id: String,
    /// Resource name.
    pub name: String,
    /// Integer value.
    pub value: i64,
    /// RFC 3339 creation time (UTC).
    pub created_at: String,
    /// RFC 3339 time of the last change (UTC).
    pub updated_at: String,
}

/// The resources database.
pub struct ResourceDb {
    conn: Mutex<Connection>,
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS resources (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    value INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
)";

const COLUMNS: &str = "id, name, value, created_at, updated_at";

impl ResourceDb {
    /// Opens (creating if needed) the database file and its parent directory.
    pub fn open(path: &Path) -> anyhow::Result<ResourceDb> {
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create directory {}", parent.display()))?;
        }
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open SQLite database {}", path.display()))?;
        Self::init(conn)
    }

    /// An in-memory database (tests, throwaway runs).
    pub fn open_in_memory() -> anyhow::Result<ResourceDb> {
        Self::init(Connection::open_in_memory().context("cannot open in-memory SQLite")?)
    }

    fn init(conn: Connection) -> anyhow::Result<ResourceDb> {
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .context("cannot set the SQLite busy timeout")?;
        conn.execute_batch(SCHEMA)
            .context("cannot create the resources table")?;
        Ok(ResourceDb {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every resource, oldest first; with `pattern`, only those whose name
    /// matches it (see [`like_pattern`]).
    pub fn list(&self, pattern: Option<&str>) -> rusqlite::Result<Vec<Resource>> {
        let conn = self.conn();
        select(&conn, None, pattern)
    }

    /// Adds a resource with a fresh id and returns it.
    pub fn add(&self, name: &str, value: i64) -> rusqlite::Result<Resource> {
        let conn = self.conn();
        let now = now();
        let mut attempt = 0;
        loop {
            let resource = Resource {
                id: new_id(),
                name: name.to_string(),
                value,
                created_at: now.clone(),
                updated_at: now.clone(),
            };
            let inserted = conn.execute(
                "INSERT INTO resources (id, name, value, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    resource.id,
                    resource.name,
                    resource.value,
                    resource.created_at,
                    resource.updated_at
                ],
            );
            match inserted {
                Ok(_) => return Ok(resource),
                // An id collision (32 random bits): draw another one.
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == ErrorCode::ConstraintViolation && attempt < 5 =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One resource by id.
    pub fn get(&self, id: &str) -> rusqlite::Result<Option<Resource>> {
        let conn = self.conn();
        conn.query_row(
            &format!("SELECT {COLUMNS} FROM resources WHERE id = ?1"),
            [id],
            row_to_resource,
        )
        .optional()
    }

    /// Removes the resources with this `id` and/or whose name matches
    /// `pattern` (both given: a row must match both) and returns them.
    /// Neither given removes nothing.
    pub fn remove(
        &self,
        id: Option<&str>,
        pattern: Option<&str>,
    ) -> rusqlite::Result<Vec<Resource>> {
        if id.is_none() && pattern.is_none() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let doomed = select(&tx, id, pattern)?;
        for resource in &doomed {
            tx.execute("DELETE FROM resources WHERE id = ?1", [&resource.id])?;
        }
        tx.commit()?;
        Ok(doomed)
    }
}

fn select(
    conn: &Connection,
    id: Option<&str>,
    pattern: Option<&str>,
) -> rusqlite::Result<Vec<Resource>> {
    let mut sql = format!("SELECT {COLUMNS} FROM resources WHERE 1 = 1");
    let mut args: Vec<String> = Vec::new();
    if let Some(id) = id {
        args.push(id.to_string());
        sql.push_str(&format!(" AND id = ?{}", args.len()));
    }
    if let Some(pattern) = pattern {
        args.push(like_pattern(pattern));
        sql.push_str(&format!(" AND name LIKE ?{} ESCAPE '\\'", args.len()));
    }
    sql.push_str(" ORDER BY created_at, rowid");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), row_to_resource)?;
    rows.collect()
}

fn row_to_resource(row: &rusqlite::Row<'_>) -> rusqlite::Result<Resource> {
    Ok(Resource {
        id: row.get(0)?,
        name: row.get(1)?,
        value: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
    })
}

/// Turns a user pattern into a SQL `LIKE` pattern (case-insensitive for
/// ASCII). A pattern containing `%` is used as a `LIKE` pattern as is (`%`:
/// any run of characters, `_`: one character, `\` escapes them); any other
/// pattern is a plain substring.
pub fn like_pattern(pattern: &str) -> String {
    if pattern.contains('%') {
        return pattern.to_string();
    }
    let mut out = String::with_capacity(pattern.len() + 2);
    out.push('%');
    for c in pattern.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

fn new_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("res_{}", &hex[..8])
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db() -> (tempfile::TempDir, ResourceDb) {
        let dir = tempfile::tempdir().unwrap();
        let db = ResourceDb::open(&dir.path().join("nested/dir/resources.db")).unwrap();
        (dir, db)
    }

    #[test]
    fn add_then_list() {
        let (_dir, db) = temp_db();
        assert!(db.list(None).unwrap().is_empty());
        let a = db.add("alpha", 1).unwrap();
        let b = db.add("beta", -2).unwrap();
        assert!(a.id.starts_with("res_") && a.id.len() == 12, "{}", a.id);
        assert_ne!(a.id, b.id);
        assert!(chrono::DateTime::parse_from_rfc3339(&a.created_at).is_ok());
        assert_eq!(a.created_at, a.updated_at);
        assert_eq!(db.list(None).unwrap(), vec![a.clone(), b]);
        assert_eq!(db.get(&a.id).unwrap(), Some(a));
        assert_eq!(db.get("res_missing").unwrap(), None);
    }

    #[test]
    fn data_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let added = ResourceDb::open(&path).unwrap().add("kept", 7).unwrap();
        assert_eq!(
            ResourceDb::open(&path).unwrap().list(None).unwrap(),
            vec![added]
        );
    }

    #[test]
    fn pattern_is_substring_or_like() {
        let (_dir, db) = temp_db();
        db.add("server_one", 1).unwrap();
        db.add("serverXone", 2).unwrap();
        db.add("Database", 3).unwrap();
        let names = |p: &str| -> Vec<String> {
            db.list(Some(p))
                .unwrap()
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        // Plain substring: `_` is literal, match is case-insensitive.
        assert_eq!(names("r_o"), vec!["server_one"]);
        assert_eq!(names("DATA"), vec!["Database"]);
        assert_eq!(names("er"), vec!["server_one", "serverXone"]);
        // With `%`: a LIKE pattern, `_` is one character.
        assert_eq!(names("server_one%"), vec!["server_one", "serverXone"]);
        assert_eq!(names("d%"), vec!["Database"]);
        assert!(names("nothing").is_empty());
        assert_eq!(like_pattern("a_b"), "%a\\_b%");
    }

    #[test]
    fn remove_by_id_pattern_or_both() {
        let (_dir, db) = temp_db();
        let a = db.add("temp-a", 1).unwrap();
        let b = db.add("temp-b", 2).unwrap();
        let keep = db.add("keep", 3).unwrap();
        assert!(db.remove(None, None).unwrap().is_empty());
        assert!(db.remove(Some("res_nothing"), None).unwrap().is_empty());
        // Both given: must match both.
        assert!(db.remove(Some(&a.id), Some("keep")).unwrap().is_empty());
        assert_eq!(db.remove(Some(&a.id), None).unwrap(), vec![a]);
        assert_eq!(db.remove(None, Some("temp")).unwrap(), vec![b]);
        assert_eq!(db.list(None).unwrap(), vec![keep]);
    }
}
