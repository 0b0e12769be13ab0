//! A fresh PostgreSQL database per test, on the server
//! `ASG_TEST_DATABASE_URL` names (default: the local one on 5432, which
//! `scripts/test.sh` provides); dropped when the test ends.

use sqlx::Connection;

/// The server the tests use (any database on it).
pub fn admin_url() -> String {
    std::env::var("ASG_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

/// A database of its own.
pub struct TestDb {
    /// Its URL (no password with the test server's trust auth).
    pub url: String,
    name: String,
}

impl TestDb {
    /// Creates it.
    pub async fn create() -> TestDb {
        let admin = admin_url();
        let name = format!("asg_test_{}", uuid::Uuid::new_v4().simple());
        let mut connection = sqlx::PgConnection::connect(&admin)
            .await
            .unwrap_or_else(|e| {
                panic!("no PostgreSQL for the tests at {admin} ({e}); scripts/test.sh starts one")
            });
        // The name is ours (a uuid's hex), never input.
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut connection)
            .await
            .expect("create a test database");
        let mut url = reqwest::Url::parse(&admin).expect("ASG_TEST_DATABASE_URL is a URL");
        url.set_path(&name);
        TestDb {
            url: url.to_string(),
            name,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `sql` on the server's admin database (e.g. to take this one
    /// away and back).
    pub async fn admin(&self, sql: &str) {
        let mut connection = sqlx::PgConnection::connect(&admin_url()).await.unwrap();
        let sql = sql.replace("{db}", &self.name);
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut connection)
            .await
            .expect("admin statement");
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let (admin, name) = (admin_url(), self.name.clone());
        // A thread of its own: the test's runtime may be shutting down.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                        let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                        let _ = sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&mut c).await;
                    }
                });
            }
        })
        .join();
    }
}
