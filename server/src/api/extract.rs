//! Request parsing that answers with [`ApiError`] instead of axum's plain
//! text rejections: JSON bodies, UUID path segments, and the request
//! context (session id, bearer token).

use asg_http::CLIENT_HEADER;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::page::PageRequest;

use super::error::ApiError;
use crate::auth::{Credential, Principal};
use crate::context::{
    BearerToken, DELEGATION_DEPTH_HEADER, RequestContext, is_valid_session_id, new_session_id,
};

/// Header carrying the session id across agents.
pub const SESSION_HEADER: &str = "x-session-id";

/// True when a body has nothing but white space.
pub fn is_blank(body: &[u8]) -> bool {
    body.iter().all(u8::is_ascii_whitespace)
}

/// Parses a JSON body. Malformed JSON is a 400, valid JSON of the wrong
/// shape a 422; both messages say what is wrong.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if is_blank(body) {
        return Err(ApiError::bad_request(
            "request body is empty; a JSON object is expected",
        ));
    }
    let invalid = |message: String| {
        ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            message,
        )
    };
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|error| {
        use serde_json::error::Category;
        match error.classify() {
            Category::Data => invalid(format!("invalid request body: {error}")),
            _ => ApiError::bad_request(format!("malformed JSON: {error}")),
        }
    })?;
    // serde would also read a struct from an array (`[true]` as
    // `{"approved": true}`); only an object names its fields.
    if !value.is_object() {
        return Err(invalid(
            "invalid request body: a JSON object is expected".to_string(),
        ));
    }
    serde_json::from_value(value).map_err(|error| invalid(format!("invalid request body: {error}")))
}

/// Parses an id taken from the URL; nothing else ever reaches a path.
pub fn parse_uuid(what: &str, raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::bad_request(format!("{what} must be a UUID, got {raw:?}")))
}

/// The session id and bearer token of a request.
#[derive(Debug, Clone)]
pub struct Ctx(pub RequestContext);

impl<S: Send + Sync> FromRequestParts<S> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Ctx, ApiError> {
        let mut ctx = request_context(&parts.headers, parts.extensions.get());
        let principal = parts.extensions.get::<Principal>().cloned();
        // Only a provider's token travels on; an API key stays here.
        if principal
            .as_ref()
            .is_some_and(|p| p.credential == Credential::ApiKey)
        {
            ctx.bearer = None;
        }
        ctx.principal = principal;
        Ok(Ctx(ctx))
    }
}

/// Builds the context from headers; `session` is the id the logging layer
/// already picked for this request, if any.
pub fn request_context(headers: &HeaderMap, session: Option<&SessionId>) -> RequestContext {
    let session_id = match session {
        Some(SessionId(id)) => id.clone(),
        None => session_from_headers(headers).unwrap_or_else(new_session_id),
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .filter(|t| !t.is_empty())
        .map(BearerToken::new);
    let depth = headers
        .get(DELEGATION_DEPTH_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let via = match headers.get(CLIENT_HEADER).and_then(|v| v.to_str().ok()) {
        Some("web") => "web",
        _ => "rest",
    };
    RequestContext {
        session_id,
        bearer,
        depth,
        principal: None,
        via,
        a2a_context: None,
    }
}

/// The authenticated caller of a request (the anonymous principal when
/// authentication is off).
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Caller, ApiError> {
        Ok(Caller(
            parts
                .extensions
                .get::<Principal>()
                .cloned()
                .unwrap_or_else(Principal::anonymous),
        ))
    }
}

/// A valid incoming `X-Session-ID`, if any.
pub fn session_from_headers(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|id| is_valid_session_id(id))
        .map(str::to_string)
}

/// The session id chosen for a request (request extension).
#[derive(Debug, Clone)]
pub struct SessionId(pub String);

/// A listing's query: `?limit=&cursor=&status=` (nothing else). Parsed by
/// hand so that each bad value gets a 400 naming it.
pub struct ListQuery {
    /// The page asked for.
    pub page: PageRequest,
    /// `status=`, as given.
    pub status: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for ListQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
            .map_err(|e| ApiError::bad_request(format!("malformed query string: {e}")))?;
        let mut seen = std::collections::HashMap::new();
        for (name, value) in pairs {
            if !matches!(name.as_str(), "limit" | "cursor" | "status") {
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter {name:?}; this listing takes limit, cursor and status"
                )));
            }
            if seen.insert(name.clone(), value).is_some() {
                return Err(ApiError::bad_request(format!(
                    "query parameter {name:?} is given twice"
                )));
            }
        }
        let get = |name: &str| seen.get(name).map(String::as_str);
        let page =
            PageRequest::parse(get("limit"), get("cursor")).map_err(ApiError::bad_request)?;
        Ok(ListQuery {
            page,
            status: get("status").map(str::to_string),
        })
    }
}

/// A `status=` value as one of `allowed` (its snake_case names).
pub fn parse_status<T: DeserializeOwned>(
    raw: Option<&str>,
    allowed: &str,
) -> Result<Option<T>, ApiError> {
    raw.map(|text| {
        serde_json::from_value(serde_json::Value::String(text.to_string())).map_err(|_| {
            ApiError::bad_request(format!("status must be one of {allowed}, got {text:?}"))
        })
    })
    .transpose()
}
