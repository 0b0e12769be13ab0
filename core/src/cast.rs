//! The principals the core's table tests use (test builds only).

use std::collections::BTreeSet;

use crate::principal::{Credential, Principal, Role};

/// A token principal with `roles` and `groups`.
pub fn who(subject: &str, roles: &[Role], groups: &[&str]) -> Principal {
    Principal {
        subject: subject.into(),
        name: None,
        roles: roles.iter().copied().collect::<BTreeSet<_>>(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        credential: Credential::Token,
    }
}

/// The owner of the tests' conversations.
pub fn alice() -> Principal {
    who("alice", &[], &[])
}
/// A stranger.
pub fn bob() -> Principal {
    who("bob", &[], &[])
}
/// An approver.
pub fn erin() -> Principal {
    who("erin", &[Role::Approver], &[])
}
/// An approver in `sre`.
pub fn frank() -> Principal {
    who("frank", &[Role::Approver], &["sre"])
}
/// An admin.
pub fn dana() -> Principal {
    who("dana", &[Role::Admin], &[])
}
