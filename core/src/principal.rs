//! Who is calling, as plain data: a [`Principal`] with its roles and
//! groups, whatever credential it authenticated with (the server's
//! `auth` module turns credentials into principals).

use std::collections::BTreeSet;

/// A role beyond chatting (every authenticated principal may chat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// May list all pending approvals, read conversations with approvals
    /// and decide approvals.
    Approver,
    /// May read and list everything.
    Admin,
}

impl Role {
    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    /// A configuration name as a role.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "approver" => Some(Role::Approver),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

/// How a principal authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// No `auth:` configured: anyone who reaches the port.
    Anonymous,
    /// An OpenID Connect access token (forwarded downstream).
    Token,
    /// A static API key (never forwarded).
    ApiKey,
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Who it is, namespaced by credential: `key:<name>` for an API key,
    /// `oidc:<issuer>#<sub>` for a provider token, `anonymous` without
    /// authentication (the system's own decisions are `system:*`).
    pub subject: String,
    /// Display name (`name` or `preferred_username` claim).
    pub name: Option<String>,
    /// Roles beyond chatting.
    pub roles: BTreeSet<Role>,
    /// Every name in the token's roles claim, or an API key's `groups`:
    /// what an approval rule's `approvers` are matched against.
    pub groups: BTreeSet<String>,
    /// How it authenticated.
    pub credential: Credential,
}

impl Principal {
    /// The caller when no `auth:` is configured: every role.
    pub fn anonymous() -> Principal {
        Principal {
            subject: "anonymous".into(),
            name: None,
            roles: [Role::Approver, Role::Admin].into_iter().collect(),
            groups: BTreeSet::new(),
            credential: Credential::Anonymous,
        }
    }

    /// Has `role`.
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// Holds the role, or belongs to the group, called `name`.
    pub fn is_in(&self, name: &str) -> bool {
        self.groups.contains(name) || Role::parse(name).is_some_and(|role| self.has(role))
    }

    /// Authentication is off for this caller.
    pub fn is_anonymous(&self) -> bool {
        self.credential == Credential::Anonymous
    }
}
