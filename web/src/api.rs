//! Every HTTP call of the chat: the agent's REST API under the same-origin
//! prefix `/api` (the `web` binary proxies it), with `gloo-net`, and the
//! live event streams (one conversation's, and the operator inbox across
//! conversations) with `EventSource`. Bodies are the
//! `asg_shared` types; failures are [`RequestError`]s.

use std::time::Duration;

use asg_shared::PendingApproval;
use asg_shared::events::{ConversationEvent, InboxEvent};
use asg_shared::rest::{
    AnswerRequest, ApprovalList, ApprovalRequest, ConversationList, ConversationResponse,
    CreateConversationRequest, MarkdownRequest, MarkdownResponse, Me, SendMessageRequest, ToolList,
};
use futures::StreamExt;
use futures::channel::oneshot;
use futures::future::{AbortHandle, abortable};
use gloo_net::eventsource::State;
use gloo_net::eventsource::futures::EventSource;
use gloo_net::http::{Request, RequestBuilder};
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::logic::errors::RequestError;
use crate::logic::events::parse_event;
use crate::logic::inbox::parse_inbox_event;
use crate::logic::pages::{APPROVALS_PAGE_LIMIT, ApprovalPages};
use crate::logic::url::{events_path, grant_path, inbox_path, page_path};

/// The REST prefix proxied to the agent.
const API: &str = "/api";

// The exchange itself (send, status, body) is one function for every
// call; only reading the JSON is per type. Generic async functions would
// compile the whole exchange once per answer type.

/// A JSON request to `url`: the method's builder with `accept` set.
fn json_request(builder: RequestBuilder) -> RequestBuilder {
    builder.header("accept", "application/json")
}

/// Sends `request`; the body of a 2xx answer, else the answer's error.
async fn exchange(request: Result<Request, gloo_net::Error>) -> Result<String, RequestError> {
    let request = request.map_err(|e| RequestError::Decode(e.to_string()))?;
    let response = request
        .send()
        .await
        .map_err(|e| RequestError::Network(e.to_string()))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| RequestError::Network(e.to_string()))?;
    if !(200..300).contains(&status) {
        return Err(RequestError::from_response(status, text));
    }
    Ok(text)
}

/// An answer's body read as `T`.
fn decode<T: DeserializeOwned>(text: &str) -> Result<T, RequestError> {
    crate::logic::objects::from_str(text).map_err(|e| RequestError::Decode(e.to_string()))
}

async fn get<T: DeserializeOwned>(path: &str) -> Result<T, RequestError> {
    get_url(&format!("{API}{path}")).await
}

async fn get_url<T: DeserializeOwned>(url: &str) -> Result<T, RequestError> {
    decode(&exchange(json_request(Request::get(url)).build()).await?)
}

async fn post<B: Serialize, T: DeserializeOwned>(path: &str, body: &B) -> Result<T, RequestError> {
    let request = json_request(Request::post(&format!("{API}{path}"))).json(body);
    decode(&exchange(request).await?)
}

/// `GET /auth/me` of the web server: who is signed in (401: nobody; 404
/// with `login_not_configured`: the web server has no login).
pub async fn auth_me() -> Result<Me, RequestError> {
    get_url("/auth/me").await
}

/// `GET /me` of the agent: who the agent takes this browser for.
pub async fn agent_me() -> Result<Me, RequestError> {
    get("/me").await
}

/// `POST /auth/logout`: ends the session; where to go next (the
/// provider's end-session page, or `/`).
pub async fn logout() -> Result<String, RequestError> {
    #[derive(serde::Deserialize)]
    struct Next {
        redirect: String,
    }
    let request = json_request(Request::post("/auth/logout")).build();
    decode::<Next>(&exchange(request).await?).map(|n| n.redirect)
}

/// `GET /conversations`: one page of summaries, newest first (the first
/// page, or the one after `cursor`), and counts by status.
pub async fn list_conversations(cursor: Option<&str>) -> Result<ConversationList, RequestError> {
    get(&page_path("/conversations", None, cursor)).await
}

/// `GET /approvals`: the pending approvals across conversations, oldest
/// first, every page (500 a page, at most
/// [`crate::logic::pages::MAX_APPROVAL_PAGES`] pages).
pub async fn list_approvals() -> Result<Vec<PendingApproval>, RequestError> {
    let mut pages = ApprovalPages::default();
    let mut cursor: Option<String> = None;
    loop {
        let path = page_path("/approvals", Some(APPROVALS_PAGE_LIMIT), cursor.as_deref());
        let page: ApprovalList = get(&path).await?;
        cursor = pages.take(page.approvals, page.next_cursor);
        if cursor.is_none() {
            return Ok(pages.finish());
        }
    }
}

/// `GET /tools`: what the agent can do.
pub async fn list_tools() -> Result<ToolList, RequestError> {
    get("/tools").await
}

/// `GET /conversations/{id}`.
pub async fn get_conversation(id: Uuid) -> Result<ConversationResponse, RequestError> {
    get(&format!("/conversations/{id}")).await
}

/// `POST /conversations` without a message: a new, empty conversation.
pub async fn create_conversation() -> Result<ConversationResponse, RequestError> {
    post("/conversations", &CreateConversationRequest::default()).await
}

/// `POST /conversations/{id}/messages`: one turn; answers when it ends.
pub async fn send_message(id: Uuid, message: String) -> Result<ConversationResponse, RequestError> {
    post(
        &format!("/conversations/{id}/messages"),
        &SendMessageRequest { message },
    )
    .await
}

/// `POST /approvals/{uuid}` with a decision body (approve, possibly with
/// edited arguments or remembered; or reject with a reason).
pub async fn decide(
    uuid: Uuid,
    body: ApprovalRequest,
) -> Result<ConversationResponse, RequestError> {
    post(&format!("/approvals/{uuid}"), &body).await
}

/// `POST /questions/{uuid}`: an answer (`{"answer": …}`) or
/// `{"action": "decline"|"cancel"}`.
pub async fn answer(uuid: Uuid, body: AnswerRequest) -> Result<ConversationResponse, RequestError> {
    post(&format!("/questions/{uuid}"), &body).await
}

/// `DELETE /conversations/{id}/grants/{tool}`: later calls of the tool
/// ask again; answers with the conversation.
pub async fn revoke_grant(id: Uuid, tool: &str) -> Result<ConversationResponse, RequestError> {
    let request = json_request(Request::delete(&format!("{API}{}", grant_path(id, tool)))).build();
    decode(&exchange(request).await?)
}

/// The state of a live event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveStatus {
    /// Opening the stream.
    Connecting,
    /// Events arrive.
    Live,
    /// The stream broke; the browser or this module reconnects.
    Reconnecting,
}

/// A live subscription; dropping it closes the stream.
pub struct LiveEvents {
    abort: AbortHandle,
}

impl Drop for LiveEvents {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

/// Longest wait between two attempts when the stream keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Follows `GET /conversations/{id}/events`. Each event goes to
/// `on_event` (the first is a snapshot, and again after every reconnect);
/// `on_status` hears about the connection; `on_bad_event` gets events that
/// do not parse.
pub fn subscribe(
    id: Uuid,
    on_event: impl Fn(ConversationEvent) + 'static,
    on_status: impl Fn(LiveStatus) + 'static,
    on_bad_event: impl Fn(String) + 'static,
) -> LiveEvents {
    let on_data = move |data: String| match parse_event(&data) {
        Ok(event) => on_event(event),
        Err(error) => on_bad_event(error),
    };
    follow(events_path(id), Box::new(on_data), Box::new(on_status))
}

/// Follows the operator inbox, `GET /events`: approvals and status
/// changes of every conversation (the first event lists every pending
/// approval, and again after every reconnect).
pub fn subscribe_inbox(
    on_event: impl Fn(InboxEvent) + 'static,
    on_status: impl Fn(LiveStatus) + 'static,
    on_bad_event: impl Fn(String) + 'static,
) -> LiveEvents {
    let on_data = move |data: String| match parse_inbox_event(&data) {
        Ok(event) => on_event(event),
        Err(error) => on_bad_event(error),
    };
    follow(
        inbox_path().to_string(),
        Box::new(on_data),
        Box::new(on_status),
    )
}

/// Follows a server-sent event stream at `url`. The browser reconnects a
/// broken stream by itself; a stream it gave up on (an error answer, e.g.
/// the agent is down or does not serve the stream) is reopened here after
/// a growing pause. Each event's data goes to `on_data`. One function for
/// both streams (boxed callbacks, not generic ones), so the loop is
/// compiled once.
fn follow(
    url: String,
    on_data: Box<dyn Fn(String)>,
    on_status: Box<dyn Fn(LiveStatus)>,
) -> LiveEvents {
    let task = async move {
        let mut backoff = Duration::from_secs(1);
        loop {
            on_status(LiveStatus::Connecting);
            if let Ok(mut source) = EventSource::new(&url)
                && let Ok(mut events) = source.subscribe("message")
            {
                while let Some(item) = events.next().await {
                    match item {
                        Ok((_, message)) => {
                            backoff = Duration::from_secs(1);
                            on_status(LiveStatus::Live);
                            on_data(message.data().as_string().unwrap_or_default());
                        }
                        Err(_) if source.state() == State::Closed => break,
                        Err(_) => on_status(LiveStatus::Reconnecting),
                    }
                }
                source.close();
            }
            on_status(LiveStatus::Reconnecting);
            sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    };
    let (task, abort) = abortable(task);
    leptos::task::spawn_local(async move {
        let _ = task.await;
    });
    LiveEvents { abort }
}

/// `POST /markdown`: the HTML of Markdown texts, one per text, in order.
pub async fn render_markdown(texts: &[String]) -> Result<Vec<String>, RequestError> {
    let answer: MarkdownResponse = post(
        "/markdown",
        &MarkdownRequest {
            texts: texts.to_vec(),
        },
    )
    .await?;
    Ok(answer.html)
}

/// Waits `duration` (a browser timer).
pub async fn sleep(duration: Duration) {
    let (done, wait) = oneshot::channel::<()>();
    leptos::prelude::set_timeout(
        move || {
            let _ = done.send(());
        },
        duration,
    );
    let _ = wait.await;
}
