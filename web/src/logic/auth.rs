//! Who uses the chat and what they may do: the sign-in state (from the web
//! server's `/auth/me`, or the agent's `/me` without login), the
//! approver check (the server stays the authority), the labels of
//! `requested_by` / `decided_by`, the "sign-in needed" note of a tool
//! result (an MCP server over HTTP answered 401), and the message kept
//! across the sign-in redirect so it can be sent again afterwards.

use asg_shared::rest::Me;
use asg_shared::{Actor, ApprovalDecision};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The role that may decide approvals.
pub const APPROVER: &str = "approver";

/// The sessionStorage key of a message to send again after sign-in.
pub const RESEND_KEY: &str = "asg.resend";

/// Where the chat stands with sign-in.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AuthState {
    /// Not known yet (the first `/auth/me` is on its way).
    #[default]
    Unknown,
    /// The web server has no login (`/auth/me` is 404): the chat works as
    /// without identity; `me` is the agent's `/me`, when it answered.
    NoLogin {
        /// The agent's view of the caller.
        me: Option<Me>,
    },
    /// Login is configured and nobody is signed in (or the session ended).
    SignedOut,
    /// Signed in.
    SignedIn(Me),
}

impl AuthState {
    /// True when the web server has a login (Sign in / Sign out apply).
    pub fn login_configured(&self) -> bool {
        matches!(self, AuthState::SignedOut | AuthState::SignedIn(_))
    }

    /// True when Approve / Reject are shown: signed in with the approver
    /// role; without login, as before identity (everyone), unless the
    /// agent itself knows the caller and says they are no approver.
    pub fn can_approve(&self) -> bool {
        match self {
            AuthState::Unknown | AuthState::SignedOut => false,
            AuthState::NoLogin { me } => match me {
                Some(me) if me.authenticated => has_role(me, APPROVER),
                _ => true,
            },
            AuthState::SignedIn(me) => has_role(me, APPROVER),
        }
    }

    /// The signed-in user, if any.
    pub fn user(&self) -> Option<&Me> {
        match self {
            AuthState::SignedIn(me) => Some(me),
            AuthState::NoLogin { me: Some(me) } if me.authenticated => Some(me),
            _ => None,
        }
    }
}

fn has_role(me: &Me, role: &str) -> bool {
    me.roles.iter().any(|r| r == role)
}

/// The display name of a user: the name, else the subject.
pub fn display_name(me: &Me) -> String {
    me.name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| me.subject.clone())
}

/// Roles as shown next to the name (`no roles` when there are none).
pub fn roles_label(me: &Me) -> String {
    if me.roles.is_empty() {
        "no roles".to_string()
    } else {
        me.roles.join(", ")
    }
}

/// A subject as a person reads it: a provider token's
/// `oidc:<issuer>#<sub>` is its `sub` (the issuer is the one the agent
/// trusts); `key:<name>`, `anonymous` and `system:*` stay as they are.
pub fn short_subject(subject: &str) -> &str {
    match subject
        .strip_prefix("oidc:")
        .and_then(|rest| rest.rsplit_once('#'))
    {
        Some((_, sub)) if !sub.is_empty() => sub,
        _ => subject,
    }
}

/// An actor as a person reads it: `Alice Approver (alice)`, plus the role
/// used and the channel when recorded: `Alice Approver (alice) · approver · via web`.
pub fn actor_label(actor: &Actor) -> String {
    let subject = short_subject(&actor.subject);
    let mut label = match actor.name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() && name != subject => format!("{name} ({subject})"),
        _ => subject.to_string(),
    };
    if let Some(role) = actor.role.as_deref().filter(|r| !r.is_empty()) {
        label.push_str(&format!(" · {role}"));
    }
    if let Some(via) = actor.via.as_deref().filter(|v| !v.is_empty()) {
        label.push_str(&format!(" · via {via}"));
    }
    label
}

/// The decision recorded for an approval, if any.
pub fn decision_for(decisions: &[ApprovalDecision], approval: Uuid) -> Option<&ApprovalDecision> {
    decisions.iter().rev().find(|d| d.approval_uuid == approval)
}

/// One line for a recorded decision: `Approved by … ` / `Rejected by …: reason`.
pub fn decision_label(decision: &ApprovalDecision) -> String {
    let verb = if decision.approved {
        "Approved"
    } else {
        "Rejected"
    };
    let mut text = format!("{verb} by {}", actor_label(&decision.decided_by));
    if let Some(reason) = decision.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        text.push_str(&format!(": {reason}"));
    }
    text
}

/// Phrases that mark a tool result as "the tool server wants a signed-in
/// user": an MCP server over HTTP answered 401.
const SIGN_IN_PHRASES: &[&str] = &[
    "sign-in required",
    "sign in required",
    "authorization required",
    "auth required",
    "401 unauthorized",
    "http 401",
];

/// True when a tool result says the tool server needs the user to sign in.
pub fn needs_sign_in(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    SIGN_IN_PHRASES.iter().any(|p| lower.contains(p))
}

/// `/auth/login?return_to=<path>` (the path percent-encoded).
pub fn login_url(return_to: &str) -> String {
    let mut encoded = String::with_capacity(return_to.len());
    for b in return_to.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                encoded.push(b as char)
            }
            _ => encoded.push_str(&format!("%{b:02X}")),
        }
    }
    format!("/auth/login?return_to={encoded}")
}

/// A message to send again once the user is back from signing in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resend {
    /// The conversation it belongs to.
    pub conversation_id: Uuid,
    /// The text.
    pub message: String,
}

impl Resend {
    /// The sessionStorage value.
    pub fn to_storage(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a sessionStorage value (`None` when it is not one).
    pub fn from_storage(value: &str) -> Option<Resend> {
        crate::logic::objects::from_str::<Resend>(value)
            .ok()
            .filter(|r| !r.message.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::{at, id};

    fn me(roles: &[&str], authenticated: bool) -> Me {
        Me {
            subject: "alice".into(),
            name: Some("Alice Approver".into()),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            authenticated,
            login: false,
        }
    }

    #[test]
    fn only_approvers_see_the_decision_buttons() {
        assert!(AuthState::SignedIn(me(&["approver"], true)).can_approve());
        assert!(!AuthState::SignedIn(me(&[], true)).can_approve());
        assert!(!AuthState::SignedIn(me(&["admin"], true)).can_approve());
        assert!(!AuthState::SignedOut.can_approve());
        assert!(!AuthState::Unknown.can_approve());
        // Without login: as before identity...
        assert!(AuthState::NoLogin { me: None }.can_approve());
        assert!(
            AuthState::NoLogin {
                me: Some(me(&[], false))
            }
            .can_approve()
        );
        // ...unless the agent knows the caller.
        assert!(
            !AuthState::NoLogin {
                me: Some(me(&[], true))
            }
            .can_approve()
        );
        assert!(AuthState::SignedOut.login_configured());
        assert!(!AuthState::NoLogin { me: None }.login_configured());
    }

    #[test]
    fn names_and_roles() {
        let alice = me(&["approver"], true);
        assert_eq!(display_name(&alice), "Alice Approver");
        assert_eq!(roles_label(&alice), "approver");
        let mut bob = me(&[], true);
        bob.name = None;
        bob.subject = "bob".into();
        assert_eq!(display_name(&bob), "bob");
        assert_eq!(roles_label(&bob), "no roles");
    }

    fn actor(name: Option<&str>, role: Option<&str>, via: Option<&str>) -> Actor {
        Actor {
            subject: "alice".into(),
            name: name.map(str::to_string),
            role: role.map(str::to_string),
            via: via.map(str::to_string),
        }
    }

    #[test]
    fn actors_read_naturally() {
        assert_eq!(
            actor_label(&actor(
                Some("Alice Approver"),
                Some("approver"),
                Some("web")
            )),
            "Alice Approver (alice) · approver · via web"
        );
        assert_eq!(actor_label(&actor(None, None, None)), "alice");
        assert_eq!(
            actor_label(&actor(Some("alice"), None, Some("rest"))),
            "alice · via rest"
        );
    }

    #[test]
    fn decisions_are_found_and_labelled() {
        let decision = |n: u128, approved: bool, reason: Option<&str>| ApprovalDecision {
            approval_uuid: id(n),
            tool_name: "resources_add".into(),
            approved,
            decided_by: actor(Some("Alice Approver"), Some("approver"), Some("web")),
            decided_at: at(0),
            reason: reason.map(str::to_string),
            edited_arguments: None,
            remembered: None,
            question: false,
            reply: None,
        };
        let list = vec![
            decision(1, true, None),
            decision(2, false, Some("not today")),
        ];
        assert_eq!(
            decision_label(decision_for(&list, id(1)).unwrap()),
            "Approved by Alice Approver (alice) · approver · via web"
        );
        assert_eq!(
            decision_label(decision_for(&list, id(2)).unwrap()),
            "Rejected by Alice Approver (alice) · approver · via web: not today"
        );
        assert!(decision_for(&list, id(3)).is_none());
    }

    #[test]
    fn tool_results_that_need_a_sign_in() {
        assert!(needs_sign_in(
            "Tool error: MCP server \"crm\": sign-in required: the server at http://x/mcp answered 401 Unauthorized"
        ));
        assert!(needs_sign_in("Tool error: ... Auth required"));
        assert!(!needs_sign_in("Tool error: timed out after 5 seconds"));
        assert!(!needs_sign_in("Created the resource"));
    }

    #[test]
    fn login_urls_keep_the_conversation() {
        assert_eq!(login_url("/"), "/auth/login?return_to=/");
        assert_eq!(
            login_url("/?c=0000-1"),
            "/auth/login?return_to=/%3Fc%3D0000-1"
        );
    }

    #[test]
    fn a_resend_survives_session_storage() {
        let resend = Resend {
            conversation_id: id(7),
            message: "add resource web-1 with value 42".into(),
        };
        assert_eq!(Resend::from_storage(&resend.to_storage()), Some(resend));
        assert_eq!(Resend::from_storage("junk"), None);
        let empty = Resend {
            conversation_id: id(7),
            message: "  ".into(),
        };
        assert_eq!(Resend::from_storage(&empty.to_storage()), None);
    }

    #[test]
    fn a_providers_subject_reads_as_its_sub() {
        assert_eq!(short_subject("oidc:https://idp.example.com#alice"), "alice");
        assert_eq!(short_subject("oidc:http://127.0.0.1:9/x#a#b"), "b");
        assert_eq!(short_subject("key:ops-bot"), "key:ops-bot");
        assert_eq!(short_subject("system:expiry"), "system:expiry");
        assert_eq!(short_subject("oidc:broken"), "oidc:broken");
        let named = Actor {
            subject: "oidc:https://idp.example.com#alice".into(),
            name: Some("Alice Approver".into()),
            role: None,
            via: None,
        };
        assert_eq!(actor_label(&named), "Alice Approver (alice)");
    }
}
