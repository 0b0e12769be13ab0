//! `/channels/email/…`: the pages an approval mail's links open. `GET
//! approve|reject?approval=…&token=…` shows the approval and a form (it
//! never decides: mail scanners follow links); `POST decide` (the form,
//! `application/x-www-form-urlencoded`) decides as the link's recipient.
//! The token is the credential (`crate::channels::email::token`), so
//! these routes skip bearer auth. Pages are sent with a
//! Content-Security-Policy that allows no script, framing or foreign
//! form target, `Cache-Control: no-store`, and `Referrer-Policy:
//! no-referrer` so the token never leaves in a `Referer`.

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::RawQuery;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::channels::Channels;
use crate::channels::email::door::{LinkRequest, Page};
use crate::channels::email::page;
use crate::channels::email::token::Decision;

/// The pages' Content-Security-Policy: no script, nothing loaded, no
/// framing, forms post back here only.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

/// `GET /channels/email/approve`.
pub async fn email_approve(
    Extension(channels): Extension<Arc<Channels>>,
    RawQuery(query): RawQuery,
) -> Response {
    email_confirm(&channels, Decision::Approve, query.as_deref()).await
}

/// `GET /channels/email/reject`.
pub async fn email_reject(
    Extension(channels): Extension<Arc<Channels>>,
    RawQuery(query): RawQuery,
) -> Response {
    email_confirm(&channels, Decision::Reject, query.as_deref()).await
}

async fn email_confirm(channels: &Channels, decision: Decision, query: Option<&str>) -> Response {
    let Some(email) = &channels.email else {
        return not_configured();
    };
    let request = parse(query.unwrap_or_default().as_bytes());
    html(email.confirm(&channels.engine, decision, &request).await)
}

/// `POST /channels/email/decide`.
pub async fn email_decide(Extension(channels): Extension<Arc<Channels>>, body: Bytes) -> Response {
    let Some(email) = &channels.email else {
        return not_configured();
    };
    let request = parse(&body);
    html(email.decide(&channels.engine, &request).await)
}

/// The fields; unreadable ones count as missing (a clear page follows).
fn parse(text: &[u8]) -> LinkRequest {
    serde_urlencoded::from_bytes(text).unwrap_or_default()
}

fn not_configured() -> Response {
    html(Page {
        status: 404,
        html: page::message(
            "agent",
            "Not found",
            "Approval mails are not configured here.",
        ),
    })
}

/// `page` as an HTML response with the pages' headers.
fn html(page: Page) -> Response {
    let status = StatusCode::from_u16(page.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, page.html).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
