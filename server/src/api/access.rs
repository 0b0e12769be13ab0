//! The authorization checks of the handlers: a conversation the caller
//! may not see is answered as not found, so its existence is not
//! revealed (the rules: [`crate::auth::policy`]).

use std::sync::Arc;

use asg_shared::Conversation;
use uuid::Uuid;

use super::error::ApiError;
use crate::auth::{Principal, policy};
use crate::engine::Engine;

/// The conversation, when `caller` may read it; 404 otherwise.
pub async fn readable(
    engine: &Engine,
    caller: &Principal,
    id: Uuid,
) -> Result<Arc<Conversation>, ApiError> {
    engine
        .get(id)
        .await?
        .filter(|c| policy::can_read(caller, c))
        .ok_or_else(|| ApiError::not_found(format!("conversation {id} not found")))
}
