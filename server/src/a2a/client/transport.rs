//! The HTTP details every exchange with a sub-agent shares: a body read
//! with a cap, an error's text without its URL, the trace context.

/// Why a body was not read.
pub enum Capped {
    /// The connection failed.
    Transport(reqwest::Error),
    /// Past the cap.
    TooLarge,
}

/// A response body, refused past `limit` bytes (checked as it arrives).
pub async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Capped> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(Capped::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Capped::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(Capped::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A reqwest error's text without the URL (kept short for users).
pub fn without_url(error: &reqwest::Error) -> String {
    let text = error.to_string();
    let mut source = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() { text } else { detail }
}

/// The current span's trace context as headers (none with traces off).
pub fn trace_headers() -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    crate::telemetry::inject(&mut headers);
    headers
}
