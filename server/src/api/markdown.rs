//! `POST /markdown`: Markdown rendered to safe HTML ([`crate::markdown`]),
//! for the web chat, whose bundle then carries no Markdown parser. Any
//! authenticated caller may render; nothing is read or stored.

use asg_shared::rest::{ErrorBody, MarkdownRequest, MarkdownResponse};
use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;

use super::error::ApiError;
use super::extract::parse_json;
use crate::markdown::render_markdown;

/// The most texts one request may carry (the body is also bounded, as
/// every request's, to 256 KiB).
pub const MAX_TEXTS: usize = 200;

/// Renders Markdown texts (agent answers, questions) to HTML fragments
/// that are safe to insert into a page.
#[utoipa::path(post, path = "/markdown", tag = "system",
    request_body(content = MarkdownRequest,
        example = json!({"texts": ["**Done.** Created `res_1`.", "<script>x</script>"]})),
    responses(
        (status = 200, description = "One fragment per text, in order", body = MarkdownResponse,
            example = json!({"html": ["<p><strong>Done.</strong> Created <code>res_1</code>.</p>\n", "&lt;script&gt;x&lt;/script&gt;"]})),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "Body over 256 KiB", body = ErrorBody),
        (status = 422, description = "No `texts` array, or more than 200 texts", body = ErrorBody,
            example = json!({"error": {"code": "invalid_request", "message": "too many texts: 201, at most 200 per request"}})),
    ))]
pub async fn markdown_render(body: Bytes) -> Result<Json<MarkdownResponse>, ApiError> {
    let request: MarkdownRequest = parse_json(&body)?;
    if request.texts.len() > MAX_TEXTS {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            format!(
                "too many texts: {}, at most {MAX_TEXTS} per request",
                request.texts.len()
            ),
        ));
    }
    let html = request
        .texts
        .iter()
        .map(|text| render_markdown(text))
        .collect();
    Ok(Json(MarkdownResponse { html }))
}
