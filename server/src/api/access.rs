//! The authorization checks of the handlers: a conversation the caller
//! may not see is answered as not found, so its existence is not
//! revealed (the rules: the core's `gate`).

use std::sync::Arc;

use asg_shared::Conversation;
use uuid::Uuid;

use super::error::ApiError;
use crate::auth::Principal;
use crate::context::RequestContext;
use crate::engine::{Command, Engine, EngineError};

/// The conversation, when the core's gate lets `caller` read it; 404
/// otherwise.
pub async fn readable(
    engine: &Engine,
    caller: &Principal,
    id: Uuid,
) -> Result<Arc<Conversation>, ApiError> {
    let ctx = RequestContext {
        principal: Some(caller.clone()),
        ..RequestContext::default()
    };
    engine
        .authorized(id, &ctx, Command::Read)
        .await
        .map_err(|error| match error {
            EngineError::ConversationNotFound(_) => {
                ApiError::not_found(format!("conversation {id} not found"))
            }
            other => other.into(),
        })
}
