//! The service token: a shared secret between the agent and a tool server
//! over HTTP (`mcp-resources --config`, `mcp-filesystem`), so that only
//! the agent — not any page or process that can reach the port — calls
//! the tools.
//!
//! Both sides name an environment variable (`auth_token_env`) and read it
//! once at startup ([`from_env`]): a missing, empty or short value stops
//! the start with an error naming the variable. The tool server keeps only
//! the token's SHA-256 digest ([`ExpectedToken`]) and compares digests in
//! constant time, so neither the content nor the length of the token leaks
//! through timing; `/mcp` requests without `Authorization: Bearer <token>`
//! get 401 ([`unauthorized`], from `asg-tool-http`'s guard). The token is never logged: the agent holds
//! it as a [`BearerToken`] (redacted in `Debug` / `Display`).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::BearerToken;

/// Shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// The token in the environment variable `var` (`env` looks variables
/// up). `field` is the configuration key that named it, for the error.
pub fn from_env(
    field: &str,
    var: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BearerToken, String> {
    let value = env(var).unwrap_or_default();
    let problem = if value.is_empty() {
        "is not set or empty".to_string()
    } else if value.chars().count() < MIN_TOKEN_LEN {
        format!("is shorter than {MIN_TOKEN_LEN} characters")
    } else if !value.bytes().all(|b| b.is_ascii_graphic()) {
        "holds spaces, control or non-ASCII characters".to_string()
    } else {
        return Ok(BearerToken::new(&value));
    };
    Err(format!(
        "{field}: the environment variable {var} {problem}; it must hold the service token \
         (at least {MIN_TOKEN_LEN} visible ASCII characters, e.g. `openssl rand -hex 32`)"
    ))
}

/// What a tool server compares presented tokens with: the digest of the
/// expected token, never the token itself.
pub struct ExpectedToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for ExpectedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExpectedToken(<redacted>)")
    }
}

impl ExpectedToken {
    /// Expects `token`.
    pub fn new(token: &BearerToken) -> ExpectedToken {
        ExpectedToken {
            digest: Sha256::digest(token.expose().as_bytes()).into(),
        }
    }

    /// Whether `presented` is the token: equal digests, compared in
    /// constant time (a digest has the same length whatever was sent).
    pub fn matches(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        digest.ct_eq(&self.digest).into()
    }

    /// Whether the request carries `Authorization: Bearer <the token>`.
    pub fn accepts(&self, headers: &HeaderMap) -> bool {
        bearer(headers).is_some_and(|token| self.matches(token))
    }
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The 401 (`WWW-Authenticate: Bearer`) of a request without the
/// expected token; it says nothing about the token.
pub fn unauthorized() -> Response {
    let mut response = crate::error_response(
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        "this MCP server needs `Authorization: Bearer <service token>`; the token is missing \
         or wrong (an agent sends it when its mcp_servers entry names the variable holding \
         it in auth_token_env)",
    );
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef-token";

    fn env(var: &str) -> Option<String> {
        match var {
            "GOOD" => Some(TOKEN.into()),
            "EMPTY" => Some(String::new()),
            "SHORT" => Some("0123456789abcde".into()),
            "SPACES" => Some("0123456789 abcdef".into()),
            _ => None,
        }
    }

    #[test]
    fn the_token_comes_from_a_set_long_enough_variable() {
        let token = from_env("auth_token_env", "GOOD", &env).unwrap();
        assert_eq!(token.expose(), TOKEN);
        for (var, problem) in [
            ("MISSING", "is not set or empty"),
            ("EMPTY", "is not set or empty"),
            ("SHORT", "is shorter than 16"),
            ("SPACES", "holds spaces"),
        ] {
            let error = from_env("mcp_servers[0].auth_token_env", var, &env).unwrap_err();
            assert!(
                error.starts_with(&format!(
                    "mcp_servers[0].auth_token_env: the environment variable {var} {problem}"
                )),
                "{error}"
            );
        }
        let error = from_env("auth_token_env", "SHORT", &env).unwrap_err();
        assert!(!error.contains("0123456789abcde"), "never echoed: {error}");
    }

    #[test]
    fn only_the_exact_token_matches() {
        let expected = ExpectedToken::new(&BearerToken::new(TOKEN));
        assert!(expected.matches(TOKEN));
        for wrong in ["", "0123456789abcdef-toke", "0123456789abcdef-tokenx", "x"] {
            assert!(!expected.matches(wrong), "{wrong:?}");
        }
        assert_eq!(format!("{expected:?}"), "ExpectedToken(<redacted>)");
    }

    #[test]
    fn the_bearer_header_is_parsed() {
        let expected = ExpectedToken::new(&BearerToken::new(TOKEN));
        let headers = |value: &str| {
            let mut map = HeaderMap::new();
            map.insert(header::AUTHORIZATION, value.parse().unwrap());
            map
        };
        assert!(expected.accepts(&headers(&format!("Bearer {TOKEN}"))));
        assert!(expected.accepts(&headers(&format!("bearer  {TOKEN} "))));
        assert!(!expected.accepts(&headers(&format!("Basic {TOKEN}"))));
        assert!(!expected.accepts(&headers(TOKEN)));
        assert!(!expected.accepts(&headers("Bearer ")));
        assert!(!expected.accepts(&HeaderMap::new()));
    }
}
