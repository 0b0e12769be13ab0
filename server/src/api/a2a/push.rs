//! `tasks/pushNotificationConfig/{set,get,list,delete}`: only the task's
//! owner (the principal that may continue it) manages its configs;
//! another principal's task is not found (-32001), a task it may read
//! but not continue is forbidden (-32010). A refused callback URL or a
//! malformed config is -32602 with the reason; a config the task does not
//! have is -32602 on v0.3 and -32001 on v1.0; without a push service
//! (a router built without one) every method answers -32003.

use std::sync::Arc;

use asg_shared::Conversation;
use asg_shared::a2a::{
    NOTIFY_AS_V1, PushNotificationConfig, TaskPushConfigParams, TaskPushNotificationConfig,
    error_codes,
};
use serde_json::Value;
use uuid::Uuid;

use super::{Call, RpcError, engine_error, typed};
use crate::engine::Command;
use crate::notify::a2a_push::PushService;

/// A method's conversation (for the request log) and result.
type PushAnswer = Result<(Arc<Conversation>, Value), RpcError>;

/// Runs one push method.
pub(crate) async fn dispatch(call: &Call, method: &str, params: Option<Value>) -> PushAnswer {
    let service = service(call)?;
    let params = params.ok_or_else(|| RpcError::invalid_params("params are required"))?;
    match method {
        "tasks/pushNotificationConfig/set" => set(call, service, params).await,
        "tasks/pushNotificationConfig/get" => get(call, service, params).await,
        "tasks/pushNotificationConfig/list" => list(call, service, params).await,
        _ => delete(call, service, params).await,
    }
}

/// The push service, or -32003.
pub(crate) fn service(call: &Call) -> Result<&PushService, RpcError> {
    call.push.as_ref().ok_or_else(|| {
        RpcError::new(
            error_codes::PUSH_NOTIFICATION_NOT_SUPPORTED,
            "push notifications are not enabled on this server",
        )
    })
}

/// The task behind `raw`, if the caller owns it.
async fn owned_task(call: &Call, raw: &str) -> Result<(Uuid, Arc<Conversation>), RpcError> {
    let id = Uuid::parse_str(raw).map_err(|_| RpcError::task_not_found(raw))?;
    let conversation = call
        .state
        .engine
        .authorized(id, &call.ctx, Command::ManagePush)
        .await
        .map_err(|e| engine_error(&e))?;
    Ok((id, conversation))
}

/// A service error as a JSON-RPC error.
pub(crate) fn refused(why: String) -> RpcError {
    if why.starts_with("internal error") {
        RpcError::new(error_codes::INTERNAL_ERROR, why)
    } else {
        RpcError::invalid_params(format!("params.pushNotificationConfig: {why}"))
    }
}

/// A config the caller's task does not have: v0.3 answers invalid params
/// (-32602); v1.0 answers `TaskNotFoundError` (-32001; HTTP 404
/// `TASK_NOT_FOUND`) naming the config, as both official SDKs' servers do.
fn no_config(call: &Call, task: Uuid, wanted: Option<&str>) -> RpcError {
    let message = match wanted {
        Some(name) => format!("task {task} has no push notification config {name:?}"),
        None => format!("task {task} has no push notification config"),
    };
    match call.wire {
        super::Wire::V03 => RpcError::invalid_params(message),
        super::Wire::V1Rpc | super::Wire::V1Rest => {
            RpcError::new(error_codes::TASK_NOT_FOUND, message)
        }
    }
}

fn with_task(task: Uuid, config: PushNotificationConfig) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        task_id: task.to_string(),
        push_notification_config: config,
    }
}

fn to_value(value: &impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value)
        .map_err(|e| RpcError::new(error_codes::INTERNAL_ERROR, format!("internal error: {e}")))
}

async fn set(call: &Call, service: &PushService, params: Value) -> PushAnswer {
    for key in ["taskId", "pushNotificationConfig"] {
        if params.get(key).is_none() {
            return Err(RpcError::invalid_params(format!(
                "params.{key} is required"
            )));
        }
    }
    let mut params: TaskPushNotificationConfig = typed(params)?;
    let (id, conversation) = owned_task(call, &params.task_id).await?;
    let context = crate::a2a::mapping::context_of(&conversation);
    // The form of the notifications follows the binding, never the body.
    params.push_notification_config.notify_as = match call.wire {
        super::Wire::V03 => None,
        super::Wire::V1Rpc | super::Wire::V1Rest => Some(NOTIFY_AS_V1.to_string()),
    };
    let stored = service
        .set(id, &context, params.push_notification_config)
        .await
        .map_err(refused)?;
    Ok((conversation, to_value(&with_task(id, stored))?))
}

fn query(params: Value) -> Result<TaskPushConfigParams, RpcError> {
    if params.get("id").is_none() {
        return Err(RpcError::invalid_params("params.id is required"));
    }
    typed(params)
}

async fn get(call: &Call, service: &PushService, params: Value) -> PushAnswer {
    let params = query(params)?;
    let (id, conversation) = owned_task(call, &params.id).await?;
    let wanted = params.push_notification_config_id.as_deref();
    let config = service.get(id, wanted).await.map_err(refused)?;
    let config = config.ok_or_else(|| no_config(call, id, wanted))?;
    Ok((conversation, to_value(&with_task(id, config))?))
}

async fn list(call: &Call, service: &PushService, params: Value) -> PushAnswer {
    let params = query(params)?;
    let (id, conversation) = owned_task(call, &params.id).await?;
    let configs: Vec<TaskPushNotificationConfig> = service
        .list(id)
        .await
        .map_err(refused)?
        .into_iter()
        .map(|c| with_task(id, c))
        .collect();
    Ok((conversation, to_value(&configs)?))
}

async fn delete(call: &Call, service: &PushService, params: Value) -> PushAnswer {
    let params = query(params)?;
    let (id, conversation) = owned_task(call, &params.id).await?;
    let name = params
        .push_notification_config_id
        .ok_or_else(|| RpcError::invalid_params("params.pushNotificationConfigId is required"))?;
    if !service.delete(id, &name).await.map_err(refused)? {
        return Err(no_config(call, id, Some(&name)));
    }
    Ok((conversation, Value::Null))
}
