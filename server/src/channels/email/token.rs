//! The signed link tokens of approval mails. A token binds one approval
//! (uuid), one decision (approve or reject), one recipient (address) and
//! an expiry, and carries a random id; it is
//! `base64url(payload).base64url(HMAC-SHA256(secret, payload))`. Only a
//! holder of the secret (this agent) makes one, so a link proves that
//! the person who follows it received that mail: who decides is the
//! recipient's principal. The MAC is compared in constant time (`hmac`'s
//! `verify_slice`, on `subtle`). What a token allows is still judged by
//! the gate, and an approval decides once, so a used or stale link does
//! nothing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

/// Shortest link secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// The payload's format version.
const VERSION: u8 = 1;

/// Bytes before the recipient: version, uuid, decision, expiry, id.
const FIXED: usize = 1 + 16 + 1 + 8 + 8;

/// Longest token accepted (a recipient address is at most 254 bytes).
const MAX_TOKEN_CHARS: usize = 512;

/// What a link asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Approve the call.
    Approve,
    /// Reject it.
    Reject,
}

impl Decision {
    /// `approve` or `reject` (the link's path segment).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        }
    }

    /// The decision a path segment or form field names.
    pub fn parse(text: &str) -> Option<Decision> {
        match text {
            "approve" => Some(Decision::Approve),
            "reject" => Some(Decision::Reject),
            _ => None,
        }
    }
}

/// A verified link's claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The approval it decides.
    pub approval: Uuid,
    /// What it decides.
    pub decision: Decision,
    /// The address it was mailed to.
    pub recipient: String,
    /// Unix seconds after which it is refused.
    pub expires_at: i64,
    /// Random, for the log (which link was used).
    pub id: u64,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// Not a token this agent makes (cut, garbled, too long).
    #[error("the link is incomplete or damaged")]
    Malformed,
    /// Well-formed but not signed by this agent with this content.
    #[error("the link's signature does not match (it was changed, or made elsewhere)")]
    BadSignature,
    /// Signed, but past its expiry.
    #[error("the link expired")]
    Expired,
    /// Signed for another approval than the one asked about.
    #[error("the link is for another approval")]
    OtherApproval,
    /// Signed for the other decision.
    #[error("the link is for the other decision")]
    OtherDecision,
}

/// Signs and verifies links with the agent's secret (no `Debug`: never
/// logged).
pub struct Signer {
    /// The keyed MAC, cloned for each token.
    keyed: Hmac<Sha256>,
}

impl Signer {
    /// A signer with `secret`; shorter than [`MIN_SECRET_BYTES`] is
    /// refused (the caller names the variable it came from).
    pub fn new(secret: &[u8]) -> Result<Signer, String> {
        if secret.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "the secret is {} bytes; at least {MIN_SECRET_BYTES} are needed",
                secret.len()
            ));
        }
        let keyed = <Hmac<Sha256> as Mac>::new_from_slice(secret).map_err(|e| e.to_string())?;
        Ok(Signer { keyed })
    }

    fn mac(&self) -> Hmac<Sha256> {
        self.keyed.clone()
    }

    /// The token for `link`.
    pub fn sign(&self, link: &Link) -> String {
        let mut payload = Vec::with_capacity(FIXED + link.recipient.len());
        payload.push(VERSION);
        payload.extend_from_slice(link.approval.as_bytes());
        payload.push(match link.decision {
            Decision::Approve => 1,
            Decision::Reject => 2,
        });
        payload.extend_from_slice(&link.expires_at.to_be_bytes());
        payload.extend_from_slice(&link.id.to_be_bytes());
        payload.extend_from_slice(link.recipient.as_bytes());
        let mut mac = self.mac();
        mac.update(&payload);
        let tag = mac.finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The claims of `token` when this agent signed it and it has not
    /// expired at `now` (unix seconds). The signature is checked before
    /// anything in the payload is read.
    pub fn verify(&self, token: &str, now: i64) -> Result<Link, LinkError> {
        if token.len() > MAX_TOKEN_CHARS {
            return Err(LinkError::Malformed);
        }
        let (payload, tag) = token.split_once('.').ok_or(LinkError::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| LinkError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| LinkError::Malformed)?;
        let mut mac = self.mac();
        mac.update(&payload);
        mac.verify_slice(&tag)
            .map_err(|_| LinkError::BadSignature)?;
        let link = decode(&payload).ok_or(LinkError::Malformed)?;
        if now >= link.expires_at {
            return Err(LinkError::Expired);
        }
        Ok(link)
    }
}

impl Link {
    /// Whether the link is for `approval` and `decision` (what the page
    /// or form it came with names).
    pub fn check(&self, approval: Uuid, decision: Decision) -> Result<(), LinkError> {
        if self.approval != approval {
            return Err(LinkError::OtherApproval);
        }
        if self.decision != decision {
            return Err(LinkError::OtherDecision);
        }
        Ok(())
    }
}

/// The claims of a signed payload.
fn decode(payload: &[u8]) -> Option<Link> {
    if payload.len() < FIXED || payload[0] != VERSION {
        return None;
    }
    let approval = Uuid::from_slice(&payload[1..17]).ok()?;
    let decision = match payload[17] {
        1 => Decision::Approve,
        2 => Decision::Reject,
        _ => return None,
    };
    let expires_at = i64::from_be_bytes(payload[18..26].try_into().ok()?);
    let id = u64::from_be_bytes(payload[26..34].try_into().ok()?);
    let recipient = String::from_utf8(payload[FIXED..].to_vec()).ok()?;
    Some(Link {
        approval,
        decision,
        recipient,
        expires_at,
        id,
    })
}

#[cfg(test)]
mod tests;
