//! `/openapi.json` (generated from the handlers' `#[utoipa::path]`
//! annotations and the `asg_shared` types) and `/docs`, a self-contained
//! interactive page rendered from it. The page loads nothing from the
//! internet, so it works on an offline machine.

use asg_http::html::escape as escape_html;
use axum::Json;
use axum::extract::State;
use axum::response::Html;
use utoipa::OpenApi;

use super::{
    AgentInfo, AppState, approvals, conversations, events, inbox, markdown, questions, system,
};

mod a2a_v1;

/// The OpenAPI description of the REST API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Agent Stop and Go",
        description = include_str!("assets/api.md")
    ),
    paths(
        system::health,
        system::tools_index,
        system::me,
        markdown::markdown_render,
        conversations::conversations_create,
        conversations::conversations_index,
        conversations::conversations_show,
        conversations::conversations_send,
        events::conversations_events,
        approvals::approvals_resolve,
        approvals::approvals_index,
        approvals::grants_revoke,
        questions::questions_index,
        questions::questions_answer,
        inbox::inbox_events,
        a2a_rpc,
        agent_card,
        agent_card_legacy,
        a2a_v1::message_send,
        a2a_v1::message_stream,
        a2a_v1::tasks_list,
        a2a_v1::tasks_get,
        a2a_v1::tasks_cancel,
        a2a_v1::tasks_subscribe,
        a2a_v1::tasks_subscribe_post,
        a2a_v1::push_config_create,
        a2a_v1::push_configs_list,
        a2a_v1::push_config_get,
        a2a_v1::push_config_delete,
    ),
    components(schemas(crate::api::a2a::v1::rest::Problem)),
    tags(
        (name = "system", description = "Health and tools"),
        (name = "conversations", description = "Conversations and messages"),
        (name = "approvals", description = "The human in the loop"),
        (name = "questions", description = "Questions for a human: the model's ask_human and MCP elicitation"),
        (name = "a2a", description = "The same agent over A2A v0.3 and v1.0 (JSON-RPC 2.0; v1.0 also HTTP+JSON under /a2a/v1): other agents and A2A SDKs"),
    )
)]
pub struct ApiDoc;

/// A2A JSON-RPC 2.0 endpoint (v0.3, and v1.0 by method name): the same
/// conversations as the REST API (task id = conversation id).
///
/// | Method | What it does |
/// |---|---|
/// | `message/send` | A new task (a new conversation), or with `message.taskId` the next message of one. On a task that is `input-required` (waiting for approval), the text `approved`/`yes` or `rejected`/`no`, or a data part `{"approved": bool}`, decides the approval; other text is a new turn. |
/// | `message/stream` | Like `message/send`, answered as server-sent events: the task, status updates, the answer artifact, a final status. |
/// | `tasks/get` | The task, with `historyLength` messages of history. |
/// | `tasks/cancel` | Cancels a task that waits for approval (its call is not run); other tasks are not cancelable. |
/// | `tasks/resubscribe` | The event stream of a task again. |
/// | `tasks/pushNotificationConfig/set`, `get`, `list`, `delete` | Callbacks (`url`, `token`, `authentication`) the agent POSTs the task to when it becomes `input-required`, `completed`, `failed` or `canceled`; owner only; callback URLs on private, loopback or link-local addresses are refused unless `a2a_push` allows them. |
///
/// A task waiting for an answer to a question (the model's `ask_human`) is
/// `input-required` too, with the question under `question` in its data
/// part; a continuation with a data part `{"answer": …}` (or
/// `{"action": "decline"}`), or with plain text, answers it.
///
/// A task waiting for approval is `input-required`; its status message has
/// a text part and a data part `{approval_uuid, tool_name, tool_args,
/// description}`. A model failure is not an error: the task is `failed`
/// with the reason in its status message.
///
/// Errors keep HTTP status 200 and come as a JSON-RPC `error`:
///
/// | Code | Meaning |
/// |---|---|
/// | -32700 | the body is not JSON |
/// | -32600 | not a JSON-RPC 2.0 request |
/// | -32601 | unknown method |
/// | -32602 | invalid params |
/// | -32603 | internal error |
/// | -32001 | task not found (also an id that is not a UUID) |
/// | -32002 | task not cancelable |
/// | -32003 | push notifications are not supported here (`message/stream` with a push config) |
/// | -32010 | forbidden (e.g. deciding without the approver role) |
/// | -32005 | unsupported content type in a message part |
/// | -32009 | the `A2A-Version` header names a version not served (only 0.3 and 1.0) |
///
/// The same endpoint serves A2A v1.0 by method name: `SendMessage`,
/// `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`,
/// `SubscribeToTask` and the `…TaskPushNotificationConfig(s)` methods,
/// in the v1.0 wire form (`ROLE_USER`, `TASK_STATE_*`, parts without
/// `kind`); the HTTP+JSON binding of v1.0 is under `/a2a/v1`. Every
/// answer names the version served in its `A2A-Version` header.
///
/// Like every body, the request must be sent as `Content-Type:
/// application/json` (415 otherwise).
#[utoipa::path(post, path = "/a2a", tag = "a2a",
    request_body(content = serde_json::Value, description = "A JSON-RPC 2.0 request", examples(
        ("message/send" = (value = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {"kind": "message", "messageId": "m1", "role": "user",
                "parts": [{"kind": "text", "text": "list resources"}]}}}))),
        ("approve a waiting task" = (value = json!({"jsonrpc": "2.0", "id": 2, "method": "message/send",
            "params": {"message": {"kind": "message", "messageId": "m2", "role": "user",
                "taskId": "bb77af30-9945-40e6-8a98-3214f774d0c5",
                "parts": [{"kind": "data", "data": {"approved": true}}]}}}))),
        ("tasks/get" = (value = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
            "params": {"id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "historyLength": 2}}))),
    )),
    responses(
        (status = 200, description = "A JSON-RPC response: `result` (a task) or `error`; `text/event-stream` for the streaming methods", body = serde_json::Value,
            examples(
                ("completed task" = (value = json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "kind": "task", "id": "9f1a489e-f142-4e0b-a210-a78f74846156", "contextId": "9f1a489e-f142-4e0b-a210-a78f74846156",
                    "status": {"state": "completed", "timestamp": "2026-01-02T03:04:05Z"},
                    "artifacts": [{"artifactId": "answer-008e003d", "name": "answer",
                        "parts": [{"kind": "text", "text": "There are 0 resources: {\"count\": 0, \"resources\": []}"}]}],
                    "metadata": {"conversation_status": "active", "session_id": "5eb385c2"}}}))),
                ("error" = (value = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "task \"nope\" not found"}}))),
            )),
        (status = 415, description = "The body is not declared `application/json`", body = asg_shared::rest::ErrorBody),
    ))]
#[allow(dead_code)]
fn a2a_rpc() {}

/// The A2A agent card: name, description, the endpoints, capabilities,
/// how callers authenticate and one skill per tool. One card for both
/// versions: the v1.0 fields (`supportedInterfaces`, each security
/// scheme's one member such as `apiKeySecurityScheme`,
/// `securityRequirements`) with the v0.3 fields beside them (`url`,
/// `protocolVersion`, `preferredTransport`, each scheme's `type`,
/// `security`), as the a2a-sdk 1.3.0 server serves its own. With
/// `A2A-Version: 1.0` the v1.0 card alone (no v0.3 field).
#[utoipa::path(get, path = "/.well-known/agent-card.json", tag = "a2a",
    params(("A2A-Version" = Option<String>, Header, description = "`1.0`: the v1.0 card alone")),
    responses((status = 200, description = "The agent card (v1.0 with the v0.3 fields; here without `auth:`)", body = serde_json::Value,
        example = json!({"name": "resource-manager", "description": "Lists, adds and removes resources; asks a human before any change.",
            "url": "http://127.0.0.1:8080/a2a", "version": "0.1.0", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
            "supportedInterfaces": [
                {"url": "http://127.0.0.1:8080/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "http://127.0.0.1:8080/a2a/v1", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                {"url": "http://127.0.0.1:8080/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}],
            "capabilities": {"streaming": true, "pushNotifications": true, "stateTransitionHistory": false},
            "defaultInputModes": ["text/plain", "application/json"], "defaultOutputModes": ["text/plain", "application/json"],
            "skills": [{"id": "resources_add", "name": "resources_add", "description": "Add a resource with a `name` and an integer `value`.", "tags": ["mcp", "destructive"]}],
            "documentationUrl": "http://127.0.0.1:8080/docs"}))))]
#[allow(dead_code)]
fn agent_card() {}

/// The same agent card at the path older A2A clients read.
#[utoipa::path(get, path = "/.well-known/agent.json", tag = "a2a",
    responses((status = 200, description = "The agent card, as at `/.well-known/agent-card.json`", body = serde_json::Value)))]
#[allow(dead_code)]
fn agent_card_legacy() {}

/// The OpenAPI document.
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// The interactive docs page.
pub async fn docs_page() -> Html<&'static str> {
    Html(include_str!("assets/docs.html"))
}

/// `GET /`: a small index of the agent's pages.
pub async fn index_page(State(state): State<AppState>) -> Html<String> {
    Html(render_index(&state.agent))
}

fn render_index(agent: &AgentInfo) -> String {
    let description = if agent.description.trim().is_empty() {
        "An agent with human approvals."
    } else {
        agent.description.trim()
    };
    let web_chat = match &agent.web_chat_url {
        Some(url) => format!(
            "<li><a href=\"{0}\">{0}</a><span>the web chat, with Approve and Reject buttons</span></li>",
            escape_html(url)
        ),
        None => String::new(),
    };
    include_str!("assets/index.html")
        .replace("{{name}}", &escape_html(&agent.name))
        .replace("{{description}}", &escape_html(description))
        .replace("{{version}}", &escape_html(&agent.version))
        .replace("{{web_chat}}", &web_chat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(web_chat_url: Option<&str>) -> AgentInfo {
        AgentInfo {
            name: "<b>bot</b>".into(),
            description: String::new(),
            public_url: "http://agent.test".into(),
            version: "1.0.0".into(),
            web_chat_url: web_chat_url.map(String::from),
            security: Default::default(),
        }
    }

    #[test]
    fn the_index_links_to_the_web_chat_when_one_is_configured() {
        let page = render_index(&agent(Some("http://127.0.0.1:3000/?a=1&b=\"x\"")));
        assert!(
            page.contains(r#"<a href="http://127.0.0.1:3000/?a=1&amp;b=&quot;x&quot;">"#),
            "{page}"
        );
        assert!(page.contains("the web chat"), "{page}");
        assert!(page.contains("&lt;b&gt;bot&lt;/b&gt;"), "{page}");
    }

    /// Every `ApiError::new(status, "code", …)` in the API's sources is a
    /// row of the error table on `/docs` (assets/api.md).
    #[test]
    fn the_error_table_names_every_error_code() {
        let table = include_str!("assets/api.md");
        let sources = [
            include_str!("error.rs"),
            include_str!("auth.rs"),
            include_str!("mod.rs"),
            include_str!("guard.rs"),
            include_str!("conversations.rs"),
            include_str!("approvals.rs"),
            include_str!("events.rs"),
            include_str!("inbox.rs"),
        ];
        let mut codes = Vec::new();
        for source in sources {
            for (at, _) in source.match_indices("ApiError::new(") {
                let call = &source[at..source.len().min(at + 200)];
                let code = call.split('"').nth(1).unwrap_or_default();
                codes.push(code.to_string());
            }
        }
        assert!(codes.len() >= 15, "found only {codes:?}");
        for code in codes {
            assert!(
                table.contains(&format!("`{code}`")),
                "the error table in assets/api.md lacks `{code}`"
            );
        }
    }

    #[test]
    fn the_index_has_no_web_chat_link_without_one() {
        let page = render_index(&agent(None));
        assert!(!page.contains("web chat"), "{page}");
        assert!(!page.contains("{{"), "a placeholder was left: {page}");
    }
}
