//! Link tokens: only this agent's unexpired, unchanged tokens verify,
//! and a token names one approval, one decision and one recipient.

use super::*;

const NOW: i64 = 1_800_000_000;

fn signer() -> Signer {
    Signer::new(b"0123456789abcdef0123456789abcdef").unwrap()
}

fn link() -> Link {
    Link {
        approval: Uuid::from_u128(7),
        decision: Decision::Approve,
        recipient: "alice@example.com".into(),
        expires_at: NOW + 60,
        id: 42,
    }
}

/// `token` with its payload replaced by `f(payload)`, the MAC kept.
fn with_payload(token: &str, f: impl Fn(&mut Vec<u8>)) -> String {
    let (payload, tag) = token.split_once('.').unwrap();
    let mut payload = URL_SAFE_NO_PAD.decode(payload).unwrap();
    f(&mut payload);
    format!("{}.{tag}", URL_SAFE_NO_PAD.encode(payload))
}

#[test]
fn a_good_token_verifies_to_its_claims() {
    let token = signer().sign(&link());
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    );
    let verified = signer().verify(&token, NOW).unwrap();
    assert_eq!(verified, link());
    assert_eq!(
        verified.check(Uuid::from_u128(7), Decision::Approve),
        Ok(())
    );
}

#[test]
fn an_expired_token_is_refused() {
    let token = signer().sign(&link());
    assert_eq!(signer().verify(&token, NOW + 59).map(|l| l.id), Ok(42));
    assert_eq!(signer().verify(&token, NOW + 60), Err(LinkError::Expired));
    // Moving the expiry breaks the signature.
    let later = with_payload(&token, |p| {
        p[18..26].copy_from_slice(&(NOW + 9_999).to_be_bytes())
    });
    assert_eq!(
        signer().verify(&later, NOW + 60),
        Err(LinkError::BadSignature)
    );
}

#[test]
fn a_tampered_token_is_refused() {
    let token = signer().sign(&link());
    let (payload, tag) = token.split_once('.').unwrap();
    let mut bad_tag = URL_SAFE_NO_PAD.decode(tag).unwrap();
    bad_tag[0] ^= 1;
    let forged = format!("{payload}.{}", URL_SAFE_NO_PAD.encode(bad_tag));
    assert_eq!(signer().verify(&forged, NOW), Err(LinkError::BadSignature));
    let other_key = Signer::new(b"another secret of 32 bytes or more").unwrap();
    assert_eq!(other_key.verify(&token, NOW), Err(LinkError::BadSignature));
    for garbled in [
        "",
        "abc",
        "abc.",
        "!!.!!",
        &token[..token.len() - 3],
        &"a".repeat(600),
    ] {
        let refused = signer().verify(garbled, NOW).unwrap_err();
        assert!(
            matches!(refused, LinkError::Malformed | LinkError::BadSignature),
            "{garbled}: {refused:?}"
        );
    }
}

#[test]
fn a_token_for_the_other_decision_or_approval_does_not_pass() {
    let token = signer().sign(&link());
    let verified = signer().verify(&token, NOW).unwrap();
    assert_eq!(
        verified.check(Uuid::from_u128(7), Decision::Reject),
        Err(LinkError::OtherDecision)
    );
    assert_eq!(
        verified.check(Uuid::from_u128(8), Decision::Approve),
        Err(LinkError::OtherApproval)
    );
    let flipped = with_payload(&token, |p| p[17] = 2);
    assert_eq!(signer().verify(&flipped, NOW), Err(LinkError::BadSignature));
    let other_uuid = with_payload(&token, |p| {
        p[1..17].copy_from_slice(Uuid::from_u128(8).as_bytes())
    });
    assert_eq!(
        signer().verify(&other_uuid, NOW),
        Err(LinkError::BadSignature)
    );
}

#[test]
fn a_token_for_another_recipient_cannot_be_made_from_this_one() {
    let token = signer().sign(&link());
    let bob = with_payload(&token, |p| {
        p.truncate(FIXED);
        p.extend_from_slice(b"bob@example.com");
    });
    assert_eq!(signer().verify(&bob, NOW), Err(LinkError::BadSignature));
    let bobs_own = signer().sign(&Link {
        recipient: "bob@example.com".into(),
        ..link()
    });
    assert_eq!(
        signer().verify(&bobs_own, NOW).unwrap().recipient,
        "bob@example.com"
    );
}

#[test]
fn short_secrets_are_refused() {
    assert!(Signer::new(&[7; 31]).is_err());
    assert!(Signer::new(&[7; 32]).is_ok());
}
