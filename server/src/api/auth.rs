//! Authentication at the edge: every request except the public pages
//! (`/`, `/health`, `/docs`, `/openapi.json`, the agent card) and the
//! channels' routes (`/channels/…`, which verify their own signatures)
//! must carry a credential; the principal goes into the request's extensions for the
//! handlers. Missing or invalid credentials answer 401 with
//! `WWW-Authenticate: Bearer` naming the problem; a provider whose keys
//! cannot be read answers 503. Nothing about the credential is logged.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::auth::{AuthError, Authenticator, Credential};

/// When the token a request was authenticated with expires: what a
/// long-lived answer (an event stream) must not outlive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialExpiry(pub std::time::SystemTime);

/// The `exp` of a token that has just been verified (so its claims are
/// the provider's): read from its payload, nothing else trusted.
fn expiry_of(token: &str) -> Option<CredentialExpiry> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?.as_u64()?;
    let at = std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(exp))?;
    Some(CredentialExpiry(at))
}

/// Paths anyone may read.
const PUBLIC: [&str; 6] = [
    "/",
    "/health",
    "/docs",
    "/openapi.json",
    "/.well-known/agent-card.json",
    "/.well-known/agent.json",
];

/// Authenticates a request (its principal, and a token's expiry, put in
/// its extensions), or gives the 401 / 503 answering it. Called by
/// [`super::edge`].
pub async fn authenticate(auth: &Authenticator, mut request: Request) -> Result<Request, Response> {
    let path = request.uri().path();
    // Channel routes verify their own signatures and tokens.
    if PUBLIC.contains(&path) || super::channels::is_channel_path(path) {
        return Ok(request);
    }
    let principal = auth
        .authenticate(request.headers())
        .await
        .map_err(|error| refusal(&error))?;
    if principal.credential == Credential::Token
        && let Some(expiry) = crate::auth::bearer(request.headers()).and_then(expiry_of)
    {
        request.extensions_mut().insert(expiry);
    }
    request.extensions_mut().insert(principal);
    Ok(request)
}

fn refusal(error: &AuthError) -> Response {
    let (status, description) = match error {
        AuthError::Missing => (StatusCode::UNAUTHORIZED, None),
        AuthError::Invalid(why) => (StatusCode::UNAUTHORIZED, Some(why.as_str())),
        AuthError::Unavailable(_) => {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "auth_unavailable",
                error.to_string(),
            )
            .into_response();
        }
    };
    let mut response = ApiError::new(status, "unauthenticated", error.to_string()).into_response();
    let challenge = match description {
        Some(why) => format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\"",
            why.replace(['"', '\\'], "'")
        ),
        None => "Bearer".to_string(),
    };
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
