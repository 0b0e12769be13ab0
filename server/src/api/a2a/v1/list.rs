//! `ListTasks` (v1.0): one page of the tasks the caller may read, newest
//! first, by the same rule and the same store query as REST
//! `GET /conversations` (`ReadScope` of the caller: its own tasks, all of
//! them for an admin). The page token is the REST cursor. The `status`
//! and `contextId` filters are applied while reading store pages until
//! the page holds `pageSize` tasks (at most [`MAX_SCANNED_PAGES`] store
//! pages per call; past them the page is short and the token goes on);
//! `totalSize` counts every task the caller may read, before filters.

use crate::auth::policy::ReadScope;
use asg_shared::Conversation;
use asg_shared::a2a::v1::{ListTasksRequest, ListTasksResponse, Task, TaskState};
use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

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
    let size = usize::try_from(page_size).unwrap_or(50);
    let mut found = Found::default();
    let mut cursor = after.map(|key| (key.at, key.id));
    for _ in 0..MAX_SCANNED_PAGES {
        let listed = call
            .state
            .engine
            .list_for(ListQuery {
                scope: ReadScope::of(&call.ctx.caller()),
                status: None,
                after: cursor,
                limit: size,
            })
            .await
            .map_err(|e| engine_error(&e))?;
        found.total.get_or_insert(listed.summary.total);
        let more = listed.next;
        cursor = found.take(&request, &listed.conversations, history_length, size, more);
        if found.tasks.len() == size || cursor.is_none() {
            break;
        }
    }
    Ok(ListTasksResponse {
        tasks: found.tasks,
        next_page_token: cursor
            .map(|(at, id)| page::encode(Key { at, id }))
            .unwrap_or_default(),
        page_size,
        total_size: i64::try_from(found.total.unwrap_or(0)).unwrap_or(i64::MAX),
    })
}

/// Store pages one `ListTasks` call reads at most while its filters skip
/// tasks: past them the page comes back short, with a token that goes on
/// from the last task read (the work per call stays bounded).
const MAX_SCANNED_PAGES: usize = 10;

/// The tasks a `ListTasks` call has kept so far.
#[derive(Default)]
struct Found {
    tasks: Vec<Task>,
    /// What the caller may read, before filters (the first page's count).
    total: Option<usize>,
}

impl Found {
    /// Keeps the conversations of one store page that pass the filters,
    /// up to `size` tasks; answers where the next read starts: after the
    /// last one kept when the page filled up inside this store page, else
    /// the store page's own `more`.
    fn take(
        &mut self,
        request: &ListTasksRequest,
        conversations: &[Conversation],
        history_length: Option<usize>,
        size: usize,
        more: Option<(DateTime<Utc>, Uuid)>,
    ) -> Option<(DateTime<Utc>, Uuid)> {
        for (i, conversation) in conversations.iter().enumerate() {
            let task = mapping::to_task(
                conversation,
                &mapping::context_of(conversation),
                history_length,
            );
            let mut task = Task::from(&task);
            if !wanted(request, &task) {
                continue;
            }
            if request.include_artifacts != Some(true) {
                task.artifacts.clear();
            }
            self.tasks.push(task);
            if self.tasks.len() == size && i + 1 < conversations.len() {
                return Some((conversation.created_at, conversation.id));
            }
        }
        more
    }
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
