//! Slack's request signatures: `X-Slack-Signature: v0=<hex HMAC-SHA256(
//! signing secret, "v0:{X-Slack-Request-Timestamp}:{raw body}")>`,
//! compared in constant time, with the timestamp within five minutes of
//! ours either way (an older one is a replay, a later one a forgery).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// How far a request's timestamp may be from our clock.
pub const MAX_SKEW_SECS: i64 = 5 * 60;

/// Why a request is not Slack's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A header is absent or empty.
    #[error("the {0} header is missing")]
    Missing(&'static str),
    /// The timestamp is not a number of seconds.
    #[error("X-Slack-Request-Timestamp is not a Unix time")]
    Malformed,
    /// Older than [`MAX_SKEW_SECS`]: a replay.
    #[error("the request timestamp is more than 5 minutes old (a replay?)")]
    Stale,
    /// Later than [`MAX_SKEW_SECS`] ahead of our clock.
    #[error("the request timestamp is more than 5 minutes in the future")]
    Future,
    /// The signature does not match the body.
    #[error("the Slack signature does not match the request")]
    Mismatch,
}

/// `v0=<hex>` for `body` sent at `timestamp` (what Slack sends).
pub fn sign(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    // HMAC takes keys of any length; new_from_slice cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

/// Checks a request's two headers against its raw body at `now` (Unix
/// seconds).
pub fn verify(
    secret: &[u8],
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let timestamp = timestamp
        .filter(|t| !t.is_empty())
        .ok_or(SignatureError::Missing("X-Slack-Request-Timestamp"))?;
    let signature = signature
        .filter(|s| !s.is_empty())
        .ok_or(SignatureError::Missing("X-Slack-Signature"))?;
    let sent: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| SignatureError::Malformed)?;
    if now.saturating_sub(sent) > MAX_SKEW_SECS {
        return Err(SignatureError::Stale);
    }
    if sent.saturating_sub(now) > MAX_SKEW_SECS {
        return Err(SignatureError::Future);
    }
    let expected = sign(secret, timestamp, body);
    match bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
        true => Ok(()),
        false => Err(SignatureError::Mismatch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";
    const BODY: &[u8] = b"payload=%7B%22type%22%3A%22block_actions%22%7D";
    const NOW: i64 = 1_700_000_000;

    fn check(timestamp: i64, signature: &str) -> Result<(), SignatureError> {
        let timestamp = timestamp.to_string();
        verify(SECRET, Some(&timestamp), Some(signature), BODY, NOW)
    }

    #[test]
    fn slacks_documented_example_verifies() {
        // api.slack.com/authentication/verifying-requests-from-slack
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let given = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(sign(SECRET, "1531420618", body), given);
        assert_eq!(
            verify(SECRET, Some("1531420618"), Some(given), body, 1_531_420_700),
            Ok(())
        );
    }

    #[test]
    fn a_good_signature_within_five_minutes_passes() {
        for at in [NOW, NOW - MAX_SKEW_SECS, NOW + MAX_SKEW_SECS] {
            let good = sign(SECRET, &at.to_string(), BODY);
            assert_eq!(check(at, &good), Ok(()), "at {at}");
        }
    }

    #[test]
    fn a_bad_signature_is_refused() {
        let good = sign(SECRET, &NOW.to_string(), BODY);
        let other_secret = sign(b"another secret", &NOW.to_string(), BODY);
        let other_time = sign(SECRET, &(NOW - 1).to_string(), BODY);
        for bad in [
            &other_secret,
            &other_time,
            &good[..good.len() - 1],
            "v0=",
            "junk",
        ] {
            assert_eq!(check(NOW, bad), Err(SignatureError::Mismatch), "{bad}");
        }
        let tampered = verify(
            SECRET,
            Some(&NOW.to_string()),
            Some(&good),
            b"payload=other",
            NOW,
        );
        assert_eq!(tampered, Err(SignatureError::Mismatch));
    }

    #[test]
    fn stale_and_future_timestamps_are_refused_even_when_signed() {
        let stale = NOW - MAX_SKEW_SECS - 1;
        let signed = sign(SECRET, &stale.to_string(), BODY);
        assert_eq!(check(stale, &signed), Err(SignatureError::Stale));
        let future = NOW + MAX_SKEW_SECS + 1;
        let signed = sign(SECRET, &future.to_string(), BODY);
        assert_eq!(check(future, &signed), Err(SignatureError::Future));
    }

    #[test]
    fn missing_or_malformed_headers_are_refused() {
        let good = sign(SECRET, &NOW.to_string(), BODY);
        assert_eq!(
            verify(SECRET, None, Some(&good), BODY, NOW),
            Err(SignatureError::Missing("X-Slack-Request-Timestamp"))
        );
        assert_eq!(
            verify(SECRET, Some("1"), None, BODY, NOW),
            Err(SignatureError::Missing("X-Slack-Signature"))
        );
        assert_eq!(
            verify(SECRET, Some("soon"), Some(&good), BODY, NOW),
            Err(SignatureError::Malformed)
        );
    }
}
