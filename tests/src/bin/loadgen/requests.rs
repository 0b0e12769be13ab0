//! The requests the benchmark sends, each checking its answer so a fast
//! error is never counted as a fast success: `GET /health`,
//! `GET /conversations/{id}`, `POST /conversations` and a full
//! "list resources" turn. Every URL is built from the agent's
//! `http://127.0.0.1:PORT` base.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use asg_shared::rest::{ApprovalList, ConversationResponse};
use serde_json::json;

use crate::load::HttpStatus;

/// One client with a keep-alive pool large enough for every load client;
/// proxies from the environment are ignored (loopback only).
pub fn http_client(clients: usize) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(clients * 2)
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .build()
        .context("cannot build the HTTP client")
}

/// The seeded approvals are all visible: the agent loaded the files
/// (counted over every page of `GET /approvals`).
pub async fn check_loaded(http: &reqwest::Client, base: &str, pending: usize) -> Result<()> {
    let mut shown = 0;
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{base}/approvals?limit=500&cursor={c}"),
            None => format!("{base}/approvals?limit=500"),
        };
        let list = approvals_page(http, &url).await?;
        shown += list.approvals.len();
        match list.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    ensure!(
        shown == pending,
        "the agent shows {shown} pending approvals, {pending} were seeded: it did not load the seeded conversations"
    );
    Ok(())
}

/// How long one `GET url` takes to answer 200 and its whole body.
pub async fn timed_get(http: &reqwest::Client, url: &str) -> Result<std::time::Duration> {
    let started = std::time::Instant::now();
    let response = http
        .get(url)
        .send()
        .await
        .with_context(|| format!("GET {url} failed"))?;
    ensure!(
        response.status().is_success(),
        "GET {url} answered {}",
        response.status()
    );
    response
        .bytes()
        .await
        .with_context(|| format!("GET {url}: the body did not arrive"))?;
    Ok(started.elapsed())
}

/// One page of `GET /approvals`.
async fn approvals_page(http: &reqwest::Client, url: &str) -> Result<ApprovalList> {
    let response = http
        .get(url)
        .send()
        .await
        .context("GET /approvals failed")?;
    ensure!(
        response.status().is_success(),
        "GET /approvals answered {}",
        response.status()
    );
    response
        .json()
        .await
        .context("GET /approvals answered an unexpected body")
}

/// GET that must answer 200 with a body starting with `prefix`.
pub async fn get_ok(http: &reqwest::Client, url: &str, prefix: &[u8]) -> Result<()> {
    let response = http.get(url).send().await?;
    let status = response.status();
    let body = response.bytes().await?;
    expect_ok(&format!("GET {url}"), status, &body)?;
    ensure!(
        body.starts_with(prefix),
        "GET {url} answered {status}: {}",
        String::from_utf8_lossy(&body[..body.len().min(200)])
    );
    Ok(())
}

/// `POST /conversations` without a message; the new conversation id.
pub async fn create_conversation(http: &reqwest::Client, base: &str) -> Result<uuid::Uuid> {
    let response = http
        .post(format!("{base}/conversations"))
        .json(&json!({}))
        .send()
        .await
        .context("POST /conversations failed")?;
    let status = response.status();
    let body = response.bytes().await?;
    if status != reqwest::StatusCode::CREATED {
        expect_ok("POST /conversations", status, &body)?;
    }
    let created: ConversationResponse =
        serde_json::from_slice(&body).context("POST /conversations answered an unexpected body")?;
    Ok(created.conversation.id)
}

/// One full turn: "list resources" must be answered with the listing.
pub async fn list_resources(http: &reqwest::Client, url: &str) -> Result<()> {
    let response = http
        .post(url)
        .json(&json!({"message": "list resources"}))
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    expect_ok(&format!("POST {url}"), status, &body)?;
    let answer: ConversationResponse =
        serde_json::from_slice(&body).context("unexpected turn answer")?;
    let result = answer.result.context("the turn answer has no result")?;
    ensure!(
        !result.waiting_approval && result.response.starts_with("There "),
        "unexpected turn result: {:?}",
        result.response
    );
    Ok(())
}

/// One A2A `message/send` to the orchestrator, which delegates to the
/// resource agent: the task must come back completed with the listing.
pub async fn a2a_list(http: &reqwest::Client, url: &str) -> Result<()> {
    let answer = a2a_send(http, url, A2A_TEXT).await?;
    ensure!(
        answer["result"]["status"]["state"] == "completed"
            && answer.to_string().contains("Downstream answered: There "),
        "unexpected A2A result: {answer}"
    );
    Ok(())
}

/// The same `message/send` to the a2a-sdk echo server (the anchor): the
/// answer must be a message carrying the text back.
pub async fn a2a_echo(http: &reqwest::Client, url: &str) -> Result<()> {
    let answer = a2a_send(http, url, A2A_TEXT).await?;
    ensure!(
        answer["result"]["kind"] == "message" && answer["result"]["parts"][0]["text"] == A2A_TEXT,
        "unexpected A2A echo: {answer}"
    );
    Ok(())
}

/// A2A `message/send` straight to the agent with a text its model
/// answers without a tool (the scripted model's fallback reply): a new
/// task, one model call, its durable saves.
pub async fn a2a_reply(http: &reqwest::Client, url: &str) -> Result<()> {
    let answer = a2a_send(http, url, "hello").await?;
    ensure!(
        answer["result"]["status"]["state"] == "completed"
            && answer.to_string().contains("I manage resources"),
        "unexpected A2A result: {answer}"
    );
    Ok(())
}

/// The text the chain and the echo anchor send.
const A2A_TEXT: &str = "list resources";

/// POSTs one A2A `message/send` with `text`; the JSON-RPC answer.
async fn a2a_send(http: &reqwest::Client, url: &str, text: &str) -> Result<serde_json::Value> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {
            "role": "user", "kind": "message", "messageId": uuid::Uuid::new_v4().to_string(),
            "parts": [{"kind": "text", "text": text}]
        }}
    });
    let response = http.post(url).json(&body).send().await?;
    let status = response.status();
    let body = response.bytes().await?;
    expect_ok(&format!("POST {url}"), status, &body)?;
    serde_json::from_slice(&body).context("unexpected A2A answer")
}

/// A [`HttpStatus`] error unless `status` is 200 OK; `what` is e.g.
/// `GET <url>`, the message shows the start of the body.
fn expect_ok(what: &str, status: reqwest::StatusCode, body: &[u8]) -> Result<()> {
    if status == reqwest::StatusCode::OK {
        return Ok(());
    }
    Err(HttpStatus {
        status: status.as_u16(),
        message: format!(
            "{what} answered {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        ),
    }
    .into())
}

/// SplitMix64: a cheap, well-spread hash for picking random conversations.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// `GET /conversations/{id}` on stored conversations, a well-spread pick
/// per (client, iteration): the read both the GET phase and the overload
/// phase load the agent with.
#[derive(Clone)]
pub struct RandomShows {
    http: reqwest::Client,
    urls: std::sync::Arc<Vec<String>>,
}

impl RandomShows {
    /// Reads of `ids` on the agent at `base`.
    pub fn new(http: &reqwest::Client, base: &str, ids: &[uuid::Uuid]) -> RandomShows {
        let urls = ids
            .iter()
            .map(|id| format!("{base}/conversations/{id}"))
            .collect();
        RandomShows {
            http: http.clone(),
            urls: std::sync::Arc::new(urls),
        }
    }

    /// The read of `client`'s `iteration`-th request.
    pub fn get(
        &self,
        client: usize,
        iteration: usize,
    ) -> impl std::future::Future<Output = Result<()>> + Send + use<> {
        let (http, urls) = (self.http.clone(), self.urls.clone());
        async move {
            let pick = mix((client as u64) << 32 | iteration as u64) as usize % urls.len();
            get_ok(&http, &urls[pick], b"{\"conversation\":").await
        }
    }
}
