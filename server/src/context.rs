//! Per-request context that flows from the HTTP edge into the engine:
//! the session id and the caller's bearer token.
//!
//! Invariant: a [`BearerToken`] is never logged (its `Debug` is redacted),
//! never serialized and never handed to an LLM provider. It lives only in
//! memory for the duration of the request that carried it.

pub use asg_http::BearerToken;

use crate::auth::Principal;

/// Header carrying how many agents a request has already passed through,
/// so delegation cycles (A -> B -> A ...) stop at a limit.
pub const DELEGATION_DEPTH_HEADER: &str = "x-a2a-delegation-depth";

/// What the engine needs to know about the request that started a turn.
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// Session id (`X-Session-ID`, or generated).
    pub session_id: String,
    /// Caller's bearer token, forwarded to MCP-over-HTTP servers and
    /// sub-agents.
    pub bearer: Option<BearerToken>,
    /// Delegation depth of the incoming request (0 from a human).
    pub depth: u32,
    /// Who is calling (`None`: an internal task, e.g. startup checks).
    pub principal: Option<Principal>,
    /// Where the request came from: `rest`, `a2a`, `web`, `slack` or `email`.
    pub via: &'static str,
    /// The A2A client's `contextId`, kept with the conversation by the
    /// turn (when it has none yet).
    pub a2a_context: Option<String>,
}

impl RequestContext {
    /// The caller, or the anonymous principal for internal work.
    pub fn caller(&self) -> Principal {
        self.principal.clone().unwrap_or_else(Principal::anonymous)
    }

    /// The caller as recorded on what it raises (`None` when
    /// authentication is off).
    pub fn requester(&self) -> Option<asg_shared::Actor> {
        self.principal
            .as_ref()
            .filter(|p| !p.is_anonymous())
            .map(|p| crate::auth::policy::actor(p, None, self.via))
    }
}

/// Generates an 8-hex-char session id (rand's thread-local CSPRNG).
pub fn new_session_id() -> String {
    format!("{:08x}", rand::random::<u32>())
}

/// True when `id` is acceptable as an incoming session id: 1 to 64 chars of
/// `[A-Za-z0-9_-]` (it goes into logs and files).
pub fn is_valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_eight_hex_chars_and_validated() {
        let id = new_session_id();
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(is_valid_session_id(&id));
        assert!(!is_valid_session_id("../etc"));
        assert!(!is_valid_session_id(""));
        assert!(!is_valid_session_id(&"a".repeat(65)));
    }
}
