//! `ListTasks` (v1.0): one page of the tasks the caller may read, newest
//! first, by the same rule and the same store query as REST
//! `GET /conversations` (`ReadScope` of the caller: its own tasks, all of
//! them for an admin). The page token is the REST cursor. The `status`
//! and `contextId` filters apply to the page as listed, so a filtered
//! page may hold fewer than `pageSize` tasks while `nextPageToken` still
//! leads on; `totalSize` counts every task the caller may read.

use crate::auth::policy::ReadScope;
use asg_shared::a2a::v1::{ListTasksRequest, ListTasksResponse, Task, TaskState};
use serde_json::Value;

use super::super::{Call, RpcError, engine_error, typed};
use crate::a2a::mapping;
use crate::api::page::{self, Key};
use crate::store::ListQuery;

/// Tasks per page unless the caller says.
const DEFAULT_PAGE_SIZE: i64 = 50;

/// The most tasks in one page.
const MAX_PAGE_SIZE: i64 = 100;

/// `ListTasks`: the page, or -32602 naming a bad parameter.
pub(crate) async fn list_tasks(
    call: &Call,
    params: Option<Value>,
) -> Result<ListTasksResponse, RpcError> {
    let request: ListTasksRequest =
        typed(params.unwrap_or_else(|| Value::Object(Default::default())))?;
    let (page_size, history_length, after) = page_request(&request)?;
    let listed = call
        .state
        .engine
        .list_for(ListQuery {
            scope: ReadScope::of(&call.ctx.caller()),
            status: None,
            after: after.map(|key| (key.at, key.id)),
            limit: usize::try_from(page_size).unwrap_or(50),
        })
        .await
        .map_err(|e| engine_error(&e))?;
    let tasks = listed
        .conversations
        .iter()
        .map(|c| mapping::to_task(c, &mapping::context_of(c), history_length))
        .map(|task| Task::from(&task))
        .filter(|task| wanted(&request, task))
        .map(|mut task| {
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
        page_size,
        total_size: i64::try_from(listed.summary.total).unwrap_or(i64::MAX),
    })
}

/// The page size, history length and cursor key a request asks for.
fn page_request(request: &ListTasksRequest) -> Result<(i64, Option<usize>, Option<Key>), RpcError> {
    let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(RpcError::invalid_params(format!(
            "params.pageSize must be 1 to {MAX_PAGE_SIZE}, got {page_size}"
        )));
    }
    let history_length = match request.history_length {
        Some(n) => Some(usize::try_from(n).map_err(|_| {
            RpcError::invalid_params(format!(
                "params.historyLength must not be negative, got {n}"
            ))
        })?),
        None => None,
    };
    let after = match request.page_token.as_deref().filter(|t| !t.is_empty()) {
        Some(token) => Some(
            page::decode(token)
                .map_err(|e| RpcError::invalid_params(format!("params.pageToken: {e}")))?,
        ),
        None => None,
    };
    Ok((page_size, history_length, after))
}

/// Whether a task passes the request's filters.
fn wanted(request: &ListTasksRequest, task: &Task) -> bool {
    let state = request
        .status
        .filter(|s| *s != TaskState::Unspecified)
        .is_none_or(|s| s == task.status.state);
    let context = request
        .context_id
        .as_deref()
        .filter(|c| !c.is_empty())
        .is_none_or(|c| c == task.context_id);
    state && context
}
