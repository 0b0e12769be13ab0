//! The agent's REST API as typed calls, with the wire types of
//! `asg-shared`: conversations, messages, approvals, questions and the two
//! event streams. Every failure becomes a [`CliError`]: the server's JSON
//! error, or the URL it could not reach.

use std::time::Duration;

use asg_shared::PendingApproval;
use asg_shared::rest::{
    AnswerRequest, ApprovalList, ApprovalRequest, ConversationList, ConversationResponse,
    CreateConversationRequest, SendMessageRequest,
};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::credentials::Credential;
use crate::error::{CliError, Result};
use crate::sse::SseParser;

/// A client of one agent.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    credential: Credential,
}

/// A UUID from the command line or a prompt, refused before sending when
/// it is not one.
pub fn parse_uuid(what: &str, text: &str) -> Result<Uuid> {
    Uuid::parse_str(text.trim())
        .map_err(|_| CliError::Invalid(format!("{what} {text:?} is not a UUID")))
}

impl Client {
    /// A client of the agent at `url` (`http://host:port`, no path needed).
    pub fn new(url: &str, credential: Credential) -> Result<Client> {
        let parsed = url::Url::parse(url)
            .map_err(|e| CliError::Invalid(format!("ASG_URL {url:?} is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(CliError::Invalid(format!(
                "ASG_URL {url:?} must start with http:// or https://"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("asg/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Http(e.to_string()))?;
        Ok(Client {
            http,
            base: url.trim_end_matches('/').to_string(),
            credential,
        })
    }

    /// The agent's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.base));
        match &self.credential {
            Credential::ApiKey(key) => request.header("x-api-key", key),
            Credential::Bearer(token) => request.bearer_auth(token),
            Credential::None => request,
        }
    }

    /// Maps a transport error: a connection failure names the URL.
    fn transport(&self, error: reqwest::Error) -> CliError {
        if error.is_connect() || error.is_timeout() {
            let reason = std::error::Error::source(&error)
                .map(|s| s.to_string())
                .unwrap_or_else(|| error.to_string());
            CliError::Unreachable {
                url: self.base.clone(),
                reason,
            }
        } else {
            CliError::Http(format!("request to {} failed: {error}", self.base))
        }
    }

    /// Sends, and reads a success as `T` or an error as the server's.
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&(impl Serialize + ?Sized)>,
    ) -> Result<T> {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            return Err(with_hint(CliError::from_body(status.as_u16(), &text)));
        }
        serde_json::from_str(&text)
            .map_err(|e| CliError::Http(format!("unexpected answer from {}{path}: {e}", self.base)))
    }

    /// `POST /conversations`, with a first message or empty.
    pub async fn create_conversation(&self, message: Option<&str>) -> Result<ConversationResponse> {
        let body = CreateConversationRequest {
            message: message.map(str::to_string),
        };
        self.call(Method::POST, "/conversations", Some(&body)).await
    }

    /// `POST /conversations/{id}/messages`.
    pub async fn send_message(&self, id: Uuid, message: &str) -> Result<ConversationResponse> {
        let body = SendMessageRequest {
            message: message.to_string(),
        };
        let path = format!("/conversations/{id}/messages");
        self.call(Method::POST, &path, Some(&body)).await
    }

    /// `GET /conversations/{id}`.
    pub async fn conversation(&self, id: Uuid) -> Result<ConversationResponse> {
        let path = format!("/conversations/{id}");
        self.call(Method::GET, &path, None::<&()>).await
    }

    /// `GET /conversations` (the first page).
    pub async fn conversations(&self) -> Result<ConversationList> {
        self.call(Method::GET, "/conversations", None::<&()>).await
    }

    /// `GET /approvals`, every page (following `next_cursor`).
    pub async fn approvals(&self) -> Result<Vec<PendingApproval>> {
        let mut all = Vec::new();
        let mut path = "/approvals?limit=500".to_string();
        loop {
            let page: ApprovalList = self.call(Method::GET, &path, None::<&()>).await?;
            all.extend(page.approvals);
            match page.next_cursor {
                Some(cursor) => {
                    let cursor: String =
                        url::form_urlencoded::byte_serialize(cursor.as_bytes()).collect();
                    path = format!("/approvals?limit=500&cursor={cursor}");
                }
                None => return Ok(all),
            }
        }
    }

    /// `POST /approvals/{uuid}`.
    pub async fn decide(&self, uuid: Uuid, body: &ApprovalRequest) -> Result<ConversationResponse> {
        let path = format!("/approvals/{uuid}");
        self.call(Method::POST, &path, Some(body)).await
    }

    /// `POST /questions/{uuid}`.
    pub async fn answer(&self, uuid: Uuid, body: &AnswerRequest) -> Result<ConversationResponse> {
        let path = format!("/questions/{uuid}");
        self.call(Method::POST, &path, Some(body)).await
    }

    /// Opens a server-sent event stream (`/events`,
    /// `/conversations/{id}/events`).
    pub async fn events(&self, path: &str) -> Result<EventStream> {
        let response = self
            .request(Method::GET, path)
            .header("accept", "text/event-stream")
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(with_hint(CliError::from_body(status.as_u16(), &text)));
        }
        Ok(EventStream {
            response,
            parser: SseParser::new(),
            ready: Default::default(),
        })
    }
}

/// A 401 says how to sign in.
fn with_hint(error: CliError) -> CliError {
    match error {
        CliError::Api {
            status: 401,
            code,
            message,
        } => CliError::Api {
            status: 401,
            code,
            message: format!("{message}; set ASG_API_KEY or ASG_TOKEN, or run `asg login`"),
        },
        other => other,
    }
}

/// An open event stream; [`EventStream::next`] gives each event's data.
pub struct EventStream {
    response: reqwest::Response,
    parser: SseParser,
    ready: std::collections::VecDeque<String>,
}

impl EventStream {
    /// The next event's data; None when the server closed the stream.
    pub async fn next(&mut self) -> Result<Option<String>> {
        loop {
            if let Some(data) = self.ready.pop_front() {
                return Ok(Some(data));
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.ready.extend(self.parser.feed(&chunk)),
                Ok(None) => return Ok(None),
                Err(e) => return Err(CliError::Http(format!("the event stream broke: {e}"))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_uuid_is_refused_before_sending() {
        let error = parse_uuid("approval", "12-x").expect_err("refused");
        assert_eq!(error.to_string(), "approval \"12-x\" is not a UUID");
        assert!(parse_uuid("approval", " 67e55044-10b1-426f-9247-bb680e5fe0c8 ").is_ok());
    }

    #[test]
    fn a_bad_url_is_refused() {
        assert!(Client::new("localhost:8080", Credential::None).is_err());
        assert!(Client::new("not a url", Credential::None).is_err());
        let client = Client::new("http://127.0.0.1:9/", Credential::None).expect("ok");
        assert_eq!(client.base(), "http://127.0.0.1:9");
    }

    #[test]
    fn unauthorized_says_how_to_sign_in() {
        let error = with_hint(CliError::from_body(
            401,
            r#"{"error":{"code":"unauthorized","message":"invalid API key"}}"#,
        ));
        assert!(error.to_string().contains("asg login"), "{error}");
    }
}
