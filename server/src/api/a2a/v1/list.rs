//! `ListTasks` (v1.0): one page of the tasks the caller may read that
//! match the filters, newest first, by the same rule and the same store
//! query as REST `GET /conversations` (`ReadScope` of the caller: its own
//! tasks, all of them for an admin). The filters (`status`, `contextId`,
//! `statusTimestampAfter`) are the store's own ([`TaskFilter`]: listing
//! columns kept at every save), so a page is always full when more
//! match, and `totalSize` counts every matching task. The page token is
//! the REST cursor.

use crate::auth::policy::ReadScope;
use asg_shared::a2a::v1::{ListTasksRequest, ListTasksResponse, Task, TaskState};
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::super::{Call, RpcError, engine_error, typed};
use crate::a2a::mapping;
use crate::api::page::{self, Key};
use crate::store::{ListQuery, TaskFilter};

/// Tasks per page unless the caller says.
const DEFAULT_PAGE_SIZE: i64 = 50;

/// The most tasks in one page.
const MAX_PAGE_SIZE: i64 = 100;

/// What a `ListTasks` request asks for, checked.
struct Asked {
    page_size: i64,
    history_length: Option<usize>,
    after: Option<Key>,
    filter: TaskFilter,
}

/// `ListTasks`: the page, or -32602 naming a bad parameter.
pub(crate) async fn list_tasks(
    call: &Call,
    params: Option<Value>,
) -> Result<ListTasksResponse, RpcError> {
    let request: ListTasksRequest =
        typed(params.unwrap_or_else(|| Value::Object(Default::default())))?;
    let asked = asked(&request)?;
    let listed = call
        .state
        .engine
        .list_for(ListQuery {
            scope: ReadScope::of(&call.ctx.caller()),
            status: None,
            after: asked.after.map(|key| (key.at, key.id)),
            limit: usize::try_from(asked.page_size).unwrap_or(50),
            tasks: asked.filter,
        })
        .await
        .map_err(|e| engine_error(&e))?;
    let tasks = listed
        .conversations
        .iter()
        .map(|conversation| {
            let task = mapping::to_task(
                conversation,
                &mapping::context_of(conversation),
                asked.history_length,
            );
            let mut task = Task::from(&task);
            if request.include_artifacts != Some(true) {
                task.artifacts.clear();
            }
            task
        })
        .collect();
    Ok(ListTasksResponse {
        tasks,
        next_page_token: listed
            .next
            .map(|(at, id)| page::encode(Key { at, id }))
            .unwrap_or_default(),
        page_size: asked.page_size,
        total_size: i64::try_from(listed.summary.total).unwrap_or(i64::MAX),
    })
}

/// The page, history length, cursor and filters a request asks for.
fn asked(request: &ListTasksRequest) -> Result<Asked, RpcError> {
    let invalid = |what: String| RpcError::invalid_params(format!("params.{what}"));
    let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(invalid(format!(
            "pageSize must be 1 to {MAX_PAGE_SIZE}, got {page_size}"
        )));
    }
    let history_length = match request.history_length {
        Some(n) => Some(
            usize::try_from(n)
                .map_err(|_| invalid(format!("historyLength must not be negative, got {n}")))?,
        ),
        None => None,
    };
    let after = match request.page_token.as_deref().filter(|t| !t.is_empty()) {
        Some(token) => Some(page::decode(token).map_err(|e| invalid(format!("pageToken: {e}")))?),
        None => None,
    };
    let changed_since = match request.status_timestamp_after.as_deref() {
        Some(time) => Some(
            DateTime::parse_from_rfc3339(time)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    invalid(format!(
                        "statusTimestampAfter must be an RFC 3339 time such as \
                         2026-01-02T03:04:05Z, got {time:?}: {e}"
                    ))
                })?,
        ),
        None => None,
    };
    let filter = TaskFilter {
        state: request.status.and_then(TaskState::v03),
        context_id: request.context_id.clone().filter(|c| !c.is_empty()),
        changed_since,
    };
    Ok(Asked {
        page_size,
        history_length,
        after,
        filter,
    })
}
