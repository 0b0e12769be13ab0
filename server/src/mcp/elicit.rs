//! MCP elicitation, the client side: a server's `elicitation/create`
//! during a tool call goes to whoever asked for that call (an [`Asker`]
//! the engine gives with the call), which makes it a pending question and
//! waits for a person's answer; the answer goes back as the MCP result
//! (`accept` with the content, `decline`, `cancel`).
//!
//! MCP does not say which of a client's requests an elicitation belongs
//! to, so it goes to the one call in flight on the connection; with
//! several in flight it is declined (logged), never guessed. A call whose
//! elicitation waits is not timed out meanwhile: its timeout starts again
//! once the question is answered.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use asg_shared::QuestionReply;
use async_trait::async_trait;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use serde_json::Value;

/// What an MCP server asks a person during a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The server's name (as configured).
    pub server: String,
    /// What it asks.
    pub message: String,
    /// Form mode: the answer's flat schema.
    pub schema: Option<Value>,
    /// URL mode: the URL the person opens.
    pub url: Option<String>,
}

/// Who asks a person on behalf of a call (the engine, for the call's
/// conversation). `None`: nobody could be asked or nobody answered in
/// time; the server gets `cancel`.
#[async_trait]
pub trait Asker: Send + Sync {
    /// Asks and waits for the answer.
    async fn ask(&self, elicitation: Elicitation) -> Option<QuestionReply>;
}

/// One call in flight: its asker, and whether a question of it waits.
pub(crate) struct Call {
    asker: Option<Arc<dyn Asker>>,
    asking: AtomicUsize,
    answered: Mutex<Option<Instant>>,
}

impl Call {
    /// Whether a question of this call waits for a person now.
    pub(crate) fn is_asking(&self) -> bool {
        self.asking.load(Ordering::SeqCst) > 0
    }

    /// When its last question was answered.
    pub(crate) fn answered_at(&self) -> Option<Instant> {
        *self.answered.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The calls in flight on one connection.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: Mutex<Vec<(u64, Arc<Call>)>>,
    next: AtomicU64,
}

impl InFlight {
    /// Registers a call until the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, asker: Option<Arc<dyn Asker>>) -> Entered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let call = Arc::new(Call {
            asker,
            asking: AtomicUsize::new(0),
            answered: Mutex::new(None),
        });
        self.lock().push((id, call.clone()));
        Entered {
            calls: self.clone(),
            id,
            call,
        }
    }

    /// The one call in flight, if exactly one is.
    fn only(&self) -> Option<Arc<Call>> {
        match self.lock().as_slice() {
            [(_, call)] => Some(call.clone()),
            _ => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<Call>)>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A registered call; unregistered on drop.
pub(crate) struct Entered {
    calls: Arc<InFlight>,
    id: u64,
    /// The call.
    pub(crate) call: Arc<Call>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.calls.lock().retain(|(id, _)| *id != self.id);
    }
}

/// The client's handler on one connection: it declares elicitation (form
/// and URL modes) and hands each elicitation to its call's asker.
#[derive(Clone)]
pub(crate) struct Handler {
    server: String,
    calls: Arc<InFlight>,
}

impl Handler {
    pub(crate) fn new(server: &str, calls: Arc<InFlight>) -> Handler {
        Handler {
            server: server.to_string(),
            calls,
        }
    }

    /// The elicitation as the engine asks it; `Err` says why it is
    /// declined without asking anyone.
    fn elicitation(&self, request: ElicitRequestParams) -> Result<Elicitation, String> {
        let (message, schema, url) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(&requested_schema)
                    .map_err(|e| format!("its schema cannot be read: {e}"))?;
                let schema = asg_core::question::check_flat_schema(&schema)?;
                (message, Some(schema), None)
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                let parsed = url::Url::parse(&url).map_err(|e| format!("bad URL {url:?}: {e}"))?;
                if !matches!(parsed.scheme(), "https" | "http") {
                    return Err(format!("the URL {url:?} is not http(s)"));
                }
                (message, None, Some(url))
            }
            _ => return Err("an elicitation mode this agent does not know".into()),
        };
        if message.trim().is_empty() || message.len() > asg_core::question::MAX_QUESTION_BYTES {
            return Err("its message is empty or too long".into());
        }
        Ok(Elicitation {
            server: self.server.clone(),
            message,
            schema,
            url,
        })
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        super::server::client_config()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let decline = ElicitResult::new(ElicitationAction::Decline);
        let Some(call) = self.calls.only() else {
            tracing::warn!(target: "mcp", server = %self.server, "elicitation declined: not exactly one call in flight on the connection, so its call cannot be told");
            return Ok(decline);
        };
        let Some(asker) = call.asker.clone() else {
            tracing::warn!(target: "mcp", server = %self.server, "elicitation declined: this call cannot wait for a person");
            return Ok(decline);
        };
        let elicitation = match self.elicitation(request) {
            Ok(elicitation) => elicitation,
            Err(why) => {
                tracing::warn!(target: "mcp", server = %self.server, "elicitation declined: {why}");
                return Ok(decline);
            }
        };
        call.asking.fetch_add(1, Ordering::SeqCst);
        let reply = asker.ask(elicitation).await;
        *call.answered.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        call.asking.fetch_sub(1, Ordering::SeqCst);
        Ok(match reply {
            Some(QuestionReply::Accept {
                answer: Value::Object(fields),
            }) => ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(fields)),
            Some(QuestionReply::Accept { .. }) => ElicitResult::new(ElicitationAction::Accept),
            Some(QuestionReply::Decline) => decline,
            Some(QuestionReply::Cancel) | None => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}

/// The capabilities this client declares: elicitation in both modes.
pub(crate) fn capabilities() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(
        ElicitationCapability::new()
            .with_form(FormElicitationCapability::new())
            .with_url(UrlElicitationCapability::new()),
    );
    capabilities
}
