//! Webhook signatures: `X-ASG-Signature: sha256=<hex>`, the HMAC-SHA256 of
//! the exact body bytes under the webhook's secret. A receiver recomputes
//! it over the raw body and compares in constant time.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The signature header's name.
pub const SIGNATURE_HEADER: &str = "X-ASG-Signature";

/// `sha256=<lowercase hex HMAC-SHA256(secret, body)>`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + digest.len() * 2);
    out.push_str("sha256=");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Checks a `sha256=<hex>` header value against `body` (constant time).
pub fn verify(secret: &[u8], body: &[u8], header: &str) -> bool {
    let Some(hex) = header.strip_prefix("sha256=") else {
        return false;
    };
    let Some(given) = decode_hex(hex) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_test_case_2() {
        // RFC 4231, test case 2 (key "Jefe").
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn signatures_verify_only_for_the_same_secret_and_body() {
        let secret = b"0123456789abcdef-secret";
        let body = br#"{"event":"approval.requested"}"#;
        let header = signature(secret, body);
        assert!(verify(secret, body, &header));
        assert!(!verify(b"another-secret-0123456789", body, &header));
        assert!(!verify(secret, br#"{"event":"approval.decided"}"#, &header));
        assert!(!verify(secret, body, header.trim_start_matches("sha256=")));
        assert!(!verify(secret, body, "sha256=zz"));
        assert!(!verify(secret, body, "sha256=abc"));
    }
}
