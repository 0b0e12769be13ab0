//! Which credential goes with each request, the way the REST API takes
//! them: `ASG_API_KEY` as `X-API-Key`, else `ASG_TOKEN` as
//! `Authorization: Bearer`, else the token `asg login` stored (while it
//! has not expired), else none. The stored token lives in one file,
//! mode 0600, in a directory of mode 0700. Nothing here prints a secret:
//! [`Credential`]'s `Debug` names only the kind.

use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A credential for the agent.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// `X-API-Key: <key>`.
    ApiKey(String),
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// Nothing (an agent without `auth:`).
    None,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::ApiKey(_) => "ApiKey(…)",
            Credential::Bearer(_) => "Bearer(…)",
            Credential::None => "None",
        })
    }
}

/// What `asg login` keeps.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredToken {
    /// The access token.
    pub access_token: String,
    /// The issuer it came from.
    pub issuer: String,
    /// When it expires, if the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("issuer", &self.issuer)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// The credential from the environment's `ASG_API_KEY` and `ASG_TOKEN`
/// (empty counts as unset) and the stored token, in that order.
pub fn select(
    api_key: Option<String>,
    token: Option<String>,
    stored: Option<StoredToken>,
    now: DateTime<Utc>,
) -> Credential {
    let set = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    if let Some(key) = set(api_key) {
        return Credential::ApiKey(key);
    }
    if let Some(token) = set(token) {
        return Credential::Bearer(token);
    }
    match stored {
        Some(stored) if stored.expires_at.is_none_or(|at| at > now) => {
            Credential::Bearer(stored.access_token)
        }
        _ => Credential::None,
    }
}

/// Reads the stored token; None when there is none or it is unreadable.
pub fn load(path: &Path) -> Option<StoredToken> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes the token, readable by its owner only.
pub fn save(path: &Path, token: &StoredToken) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An older file keeps its mode through `open`: set it.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    let text = serde_json::to_string_pretty(token).map_err(std::io::Error::other)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(expires_in: i64) -> StoredToken {
        StoredToken {
            access_token: "stored-secret".into(),
            issuer: "https://idp".into(),
            expires_at: Some(Utc::now() + chrono::Duration::seconds(expires_in)),
        }
    }

    #[test]
    fn the_api_key_wins_then_the_token_then_the_stored_one() {
        let now = Utc::now();
        let key = Some("k".to_string());
        let token = Some("t".to_string());
        assert_eq!(
            select(key.clone(), token.clone(), Some(stored(60)), now),
            Credential::ApiKey("k".into())
        );
        assert_eq!(
            select(Some(" ".into()), token, Some(stored(60)), now),
            Credential::Bearer("t".into())
        );
        assert_eq!(
            select(None, Some(String::new()), Some(stored(60)), now),
            Credential::Bearer("stored-secret".into())
        );
        assert_eq!(select(None, None, None, now), Credential::None);
    }

    #[test]
    fn an_expired_stored_token_is_not_sent() {
        assert_eq!(
            select(None, None, Some(stored(-1)), Utc::now()),
            Credential::None
        );
    }

    #[test]
    fn debug_output_never_shows_a_secret() {
        let text = format!(
            "{:?} {:?} {:?}",
            Credential::ApiKey("key-secret".into()),
            Credential::Bearer("token-secret".into()),
            stored(1)
        );
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn the_token_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("asg").join("token.json");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, "old").expect("old file");
        save(&path, &stored(60)).expect("saved");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            load(&path).map(|t| t.access_token).as_deref(),
            Some("stored-secret")
        );
    }
}
