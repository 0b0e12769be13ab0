//! [`BearerToken`]: a token carried in `Authorization: Bearer`, never
//! logged (its `Debug` and `Display` are redacted) and never serialized.

use std::fmt;
use std::sync::Arc;

/// A caller's `Authorization: Bearer` token. Cheap to clone; redacted in
/// `Debug` and `Display`; deliberately not `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(Arc<str>);

impl BearerToken {
    /// Wraps a token (without the `Bearer ` prefix).
    pub fn new(token: &str) -> Self {
        BearerToken(Arc::from(token))
    }

    /// The raw token, for the outgoing `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl fmt::Display for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_never_prints_its_value() {
        let token = BearerToken::new("s3cret-token");
        assert!(!format!("{token:?} {token}").contains("s3cret"));
        assert_eq!(token.expose(), "s3cret-token");
    }
}
