//! `asg login`: the OAuth 2.0 device authorization grant (RFC 8628)
//! against the issuer's discovery document. The person opens the
//! verification URL elsewhere and enters the code shown; `asg` polls the
//! token endpoint meanwhile and stores the access token (mode 0600) for
//! later commands. A provider whose discovery has no
//! `device_authorization_endpoint` is named and refused.

use std::time::{Duration, Instant};

use chrono::Utc;
use serde::Deserialize;
use serde_json::Value;

use crate::credentials::{StoredToken, save};
use crate::error::{CliError, Result};
use crate::style::Style;

/// What `asg login` needs.
#[derive(Debug, Clone)]
pub struct LoginRequest {
    /// The issuer URL.
    pub issuer: String,
    /// The CLI's client id at the provider.
    pub client_id: String,
    /// Scopes.
    pub scope: String,
}

/// The two endpoints of the flow, from the discovery document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// `device_authorization_endpoint`.
    pub device: String,
    /// `token_endpoint`.
    pub token: String,
}

/// The endpoints in a discovery document, or why the flow is impossible.
pub fn endpoints(issuer: &str, discovery: &Value) -> std::result::Result<Endpoints, String> {
    let device = discovery["device_authorization_endpoint"]
        .as_str()
        .ok_or_else(|| {
            format!(
                "the provider at {issuer} does not offer the device authorization flow \
             (its discovery document has no device_authorization_endpoint); \
             set ASG_TOKEN or ASG_API_KEY instead"
            )
        })?;
    let token = discovery["token_endpoint"]
        .as_str()
        .ok_or_else(|| format!("the provider at {issuer} names no token_endpoint"))?;
    Ok(Endpoints {
        device: device.to_string(),
        token: token.to_string(),
    })
}

/// The device authorization answer (RFC 8628, 3.2).
#[derive(Debug, Deserialize)]
struct DeviceAuthorization {
    device_code: String,
    user_code: String,
    verification_uri: String,
    #[serde(default)]
    verification_uri_complete: Option<String>,
    expires_in: u64,
    #[serde(default)]
    interval: Option<u64>,
}

/// One answer of the token endpoint while polling (RFC 8628, 3.5).
#[derive(Debug, PartialEq)]
pub enum Poll {
    /// Signed in.
    Token {
        /// The access token.
        access_token: String,
        /// Its lifetime in seconds, when given.
        expires_in: Option<i64>,
    },
    /// Not yet: ask again after the interval.
    Pending,
    /// Ask again, five seconds slower.
    SlowDown,
    /// Over: denied, expired, or an error; the message says which.
    Failed(String),
}

/// Reads a token endpoint answer.
pub fn poll_answer(status: u16, body: &Value) -> Poll {
    if (200..300).contains(&status)
        && let Some(token) = body["access_token"].as_str()
    {
        return Poll::Token {
            access_token: token.to_string(),
            expires_in: body["expires_in"].as_i64(),
        };
    }
    match body["error"].as_str() {
        Some("authorization_pending") => Poll::Pending,
        Some("slow_down") => Poll::SlowDown,
        Some("access_denied") => Poll::Failed("the sign-in was denied".into()),
        Some("expired_token") => Poll::Failed("the code expired before it was entered".into()),
        Some(other) => Poll::Failed(format!(
            "the provider refused: {other}{}",
            body["error_description"]
                .as_str()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
        None => Poll::Failed(format!(
            "unexpected answer from the token endpoint (HTTP {status})"
        )),
    }
}

/// Runs the flow and stores the token.
pub async fn run(
    request: &LoginRequest,
    style: &Style,
    token_file: &std::path::Path,
) -> Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| CliError::Http(e.to_string()))?;
    let issuer = request.issuer.trim_end_matches('/');
    let discovery_url = format!("{issuer}/.well-known/openid-configuration");
    let discovery = get_json(&http, &discovery_url).await?;
    let endpoints = endpoints(issuer, &discovery).map_err(CliError::Invalid)?;
    let form = form(&[("client_id", &request.client_id), ("scope", &request.scope)]);
    let (status, body) = post_form(&http, &endpoints.device, form).await?;
    if !(200..300).contains(&status) {
        return Err(CliError::Invalid(format!(
            "the provider refused the device authorization (HTTP {status}): {}",
            body["error"].as_str().unwrap_or("no reason given")
        )));
    }
    let device: DeviceAuthorization = serde_json::from_value(body)
        .map_err(|e| CliError::Http(format!("unexpected device authorization answer: {e}")))?;
    println!(
        "Open {} and enter the code {}",
        style.bold(&device.verification_uri),
        style.bold(&device.user_code)
    );
    if let Some(complete) = &device.verification_uri_complete {
        println!("(or open {complete})");
    }
    let (access_token, expires_in) = poll(&http, &endpoints.token, request, &device).await?;
    let stored = StoredToken {
        access_token,
        issuer: issuer.to_string(),
        expires_at: expires_in.map(|s| Utc::now() + chrono::Duration::seconds(s)),
    };
    save(token_file, &stored)?;
    println!("Signed in; the token is kept in {}", token_file.display());
    Ok(())
}

/// Polls the token endpoint at the provider's pace until a token or the end.
async fn poll(
    http: &reqwest::Client,
    token_endpoint: &str,
    request: &LoginRequest,
    device: &DeviceAuthorization,
) -> Result<(String, Option<i64>)> {
    let deadline = Instant::now() + Duration::from_secs(device.expires_in);
    let mut interval = Duration::from_secs(device.interval.unwrap_or(5));
    loop {
        if Instant::now() >= deadline {
            return Err(CliError::Invalid(
                "the code expired before it was entered".into(),
            ));
        }
        tokio::time::sleep(interval).await;
        let form = form(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ("device_code", &device.device_code),
            ("client_id", &request.client_id),
        ]);
        let (status, body) = post_form(http, token_endpoint, form).await?;
        match poll_answer(status, &body) {
            Poll::Token {
                access_token,
                expires_in,
            } => return Ok((access_token, expires_in)),
            Poll::Pending => {}
            Poll::SlowDown => interval += Duration::from_secs(5),
            Poll::Failed(message) => return Err(CliError::Invalid(message)),
        }
    }
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

fn unreachable(url: &str, error: reqwest::Error) -> CliError {
    CliError::Unreachable {
        url: url.to_string(),
        reason: error.to_string(),
    }
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value> {
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|e| unreachable(url, e))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| unreachable(url, e))?;
    if !status.is_success() {
        return Err(CliError::Invalid(format!("{url} answered HTTP {status}")));
    }
    serde_json::from_str(&text).map_err(|e| CliError::Http(format!("{url}: not JSON: {e}")))
}

async fn post_form(http: &reqwest::Client, url: &str, body: String) -> Result<(u16, Value)> {
    let response = http
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| unreachable(url, e))?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|e| unreachable(url, e))?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_discovery_without_the_device_endpoint_is_named() {
        let error = endpoints(
            "https://idp",
            &json!({"token_endpoint": "https://idp/token"}),
        )
        .expect_err("refused");
        assert!(error.contains("device_authorization_endpoint"), "{error}");
        assert!(error.contains("https://idp"), "{error}");
        let found = endpoints(
            "https://idp",
            &json!({"token_endpoint": "t", "device_authorization_endpoint": "d"}),
        );
        assert_eq!(
            found,
            Ok(Endpoints {
                device: "d".into(),
                token: "t".into()
            })
        );
    }

    #[test]
    fn polling_answers() {
        assert_eq!(
            poll_answer(200, &json!({"access_token": "x", "expires_in": 60})),
            Poll::Token {
                access_token: "x".into(),
                expires_in: Some(60)
            }
        );
        assert_eq!(
            poll_answer(400, &json!({"error": "authorization_pending"})),
            Poll::Pending
        );
        assert_eq!(
            poll_answer(400, &json!({"error": "slow_down"})),
            Poll::SlowDown
        );
        assert!(
            matches!(poll_answer(400, &json!({"error": "access_denied"})), Poll::Failed(m) if m.contains("denied"))
        );
        assert!(matches!(poll_answer(500, &Value::Null), Poll::Failed(m) if m.contains("500")));
    }

    #[test]
    fn forms_are_encoded() {
        assert_eq!(form(&[("a", "x y"), ("b", "&=")]), "a=x+y&b=%26%3D");
    }
}
