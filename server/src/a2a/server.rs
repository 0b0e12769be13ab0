//! Placeholder until the A2A server lands.
use axum::Router;

use crate::api::AppState;

/// The A2A routes.
pub fn routes() -> Router<AppState> {
    Router::new()
}
