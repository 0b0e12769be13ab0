//! A thin client of Slack's Web API: `POST {api_url}/{method}` with the
//! bot token as `Authorization: Bearer`, a JSON body (a form for the
//! read methods, which take no JSON), and Slack's answer read as
//! `{"ok": true, …}` or `{"ok": false, "error": "…"}`. The token is
//! never logged: this type has no `Debug`, and errors name the method,
//! never the request.

use std::time::Duration;

use serde_json::Value;

/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The wait when a 429 carries no usable `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest `Retry-After` honoured as given.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Why a call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// HTTP 429 (or `ratelimited`): try again after this long.
    #[error("rate limited; retry after {0:?}")]
    RateLimited(Duration),
    /// Slack unreachable or failing (network, 5xx): try again later.
    #[error("Slack unreachable: {0}")]
    Unavailable(String),
    /// Slack refused (`ok: false` and its error, or another HTTP status):
    /// trying again would not help.
    #[error("Slack refused: {0}")]
    Refused(String),
}

/// The Web API at one base URL with one bot token.
#[derive(Clone)]
pub struct WebApi {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl WebApi {
    /// A client of `base` (e.g. `https://slack.com/api`).
    pub fn new(base: &str, token: String) -> WebApi {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        WebApi {
            base: base.trim_end_matches('/').to_string(),
            token,
            http,
        }
    }

    /// Calls a write method (`chat.postMessage`, …) with a JSON body.
    pub async fn call(&self, method: &str, body: &Value) -> Result<Value, CallError> {
        let request = self
            .http
            .post(self.url(method))
            .bearer_auth(&self.token)
            .header("content-type", "application/json; charset=utf-8")
            .body(body.to_string());
        answer(method, request.send().await).await
    }

    /// Calls a read method (`users.info`) with form fields.
    pub async fn call_form(
        &self,
        method: &str,
        fields: &[(&str, &str)],
    ) -> Result<Value, CallError> {
        let body = serde_urlencoded::to_string(fields)
            .map_err(|e| CallError::Refused(format!("{method}: {e}")))?;
        let request = self
            .http
            .post(self.url(method))
            .bearer_auth(&self.token)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        answer(method, request.send().await).await
    }

    fn url(&self, method: &str) -> String {
        format!("{}/{method}", self.base)
    }
}

/// Slack's answer to a call.
async fn answer(
    method: &str,
    sent: Result<reqwest::Response, reqwest::Error>,
) -> Result<Value, CallError> {
    let response =
        sent.map_err(|e| CallError::Unavailable(format!("{method}: {}", e.without_url())))?;
    let status = response.status().as_u16();
    if status == 429 {
        let after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        return Err(CallError::RateLimited(retry_after(after)));
    }
    if status >= 500 || status == 408 {
        return Err(CallError::Unavailable(format!("{method}: HTTP {status}")));
    }
    if !(200..300).contains(&status) {
        return Err(CallError::Refused(format!("{method}: HTTP {status}")));
    }
    let body: Value = response.json().await.map_err(|e| {
        CallError::Unavailable(format!("{method}: unreadable answer: {}", e.without_url()))
    })?;
    judge(method, body)
}

/// `Retry-After` as honoured: given (at most [`MAX_RETRY_AFTER`]) or the
/// default.
fn retry_after(given: Option<Duration>) -> Duration {
    given.map_or(DEFAULT_RETRY_AFTER, |d| d.min(MAX_RETRY_AFTER))
}

/// A 2xx body: `ok: true` is the answer, else Slack's error.
fn judge(method: &str, body: Value) -> Result<Value, CallError> {
    if body["ok"] == Value::Bool(true) {
        return Ok(body);
    }
    let error = body["error"].as_str().unwrap_or("no error given");
    match error {
        "ratelimited" => Err(CallError::RateLimited(DEFAULT_RETRY_AFTER)),
        "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" => {
            Err(CallError::Unavailable(format!("{method}: {error}")))
        }
        _ => Err(CallError::Refused(format!("{method}: {error}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ok_answers_pass_and_errors_are_named() {
        let ok = json!({"ok": true, "ts": "1.2"});
        assert_eq!(judge("chat.postMessage", ok.clone()), Ok(ok));
        assert_eq!(
            judge(
                "chat.update",
                json!({"ok": false, "error": "message_not_found"})
            ),
            Err(CallError::Refused("chat.update: message_not_found".into()))
        );
        assert_eq!(
            judge("chat.update", json!({"ok": false, "error": "ratelimited"})),
            Err(CallError::RateLimited(DEFAULT_RETRY_AFTER))
        );
        assert!(matches!(
            judge("x", json!({"ok": false, "error": "internal_error"})),
            Err(CallError::Unavailable(_))
        ));
    }

    #[test]
    fn retry_after_is_honoured_within_a_bound() {
        assert_eq!(retry_after(None), DEFAULT_RETRY_AFTER);
        assert_eq!(
            retry_after(Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            retry_after(Some(Duration::from_secs(3600))),
            MAX_RETRY_AFTER
        );
    }
}
