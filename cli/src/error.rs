//! The client's errors, each one line for the person at the terminal:
//! the server's own `{"error": {"code", "message"}}`, an unreachable
//! server named with its URL, or input refused before anything is sent.

use thiserror::Error;

/// What went wrong.
#[derive(Debug, Error)]
pub enum CliError {
    /// The server answered with an error body (or a non-JSON error).
    #[error("{message} ({code}, HTTP {status})")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The server's stable code, e.g. `not_found`.
        code: String,
        /// The server's message.
        message: String,
    },
    /// No connection to the server.
    #[error("cannot reach the agent at {url}: {reason}")]
    Unreachable {
        /// The base URL tried.
        url: String,
        /// Why, in short.
        reason: String,
    },
    /// Input refused before sending (a bad UUID, invalid JSON, …).
    #[error("{0}")]
    Invalid(String),
    /// Any other HTTP failure (a body that is not what the API answers).
    #[error("{0}")]
    Http(String),
    /// A local file or terminal failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Shorthand.
pub type Result<T> = std::result::Result<T, CliError>;

impl CliError {
    /// The error for an HTTP answer with status `status` and body `text`:
    /// the server's JSON error when it is one, else the text itself.
    pub fn from_body(status: u16, text: &str) -> CliError {
        match serde_json::from_str::<asg_shared::rest::ErrorBody>(text) {
            Ok(body) => CliError::Api {
                status,
                code: body.error.code,
                message: body.error.message,
            },
            Err(_) => {
                let text = text.trim();
                let message = if text.is_empty() {
                    "the server answered without a body".to_string()
                } else {
                    text.lines().next().unwrap_or(text).to_string()
                };
                CliError::Api {
                    status,
                    code: "http_error".into(),
                    message,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_error_body_becomes_one_line() {
        let error = CliError::from_body(
            404,
            r#"{"error":{"code":"not_found","message":"no conversation 42"}}"#,
        );
        assert_eq!(
            error.to_string(),
            "no conversation 42 (not_found, HTTP 404)"
        );
    }

    #[test]
    fn a_body_that_is_not_json_keeps_its_first_line() {
        let error = CliError::from_body(502, "Bad gateway\nmore");
        assert_eq!(error.to_string(), "Bad gateway (http_error, HTTP 502)");
        let empty = CliError::from_body(500, "");
        assert!(empty.to_string().contains("without a body"));
    }
}
