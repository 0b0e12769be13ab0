//! What a principal may do, as pure functions (the one place these rules
//! live; handlers and the engine call them).
//!
//! - Every principal may chat: create conversations, and read, continue
//!   and stream its own.
//! - `approver`: in addition lists every pending approval, reads any
//!   conversation that has or had an approval, and decides approvals
//!   (not its own with `approval.separate_approver`).
//! - `admin`: reads and lists everything.
//!
//! Another principal's conversation is invisible (answered as not found).

use asg_shared::{Actor, Conversation, PendingApproval};

use crate::principal::{Principal, Role};

/// May `principal` see `conversation`?
pub fn can_read(principal: &Principal, conversation: &Conversation) -> bool {
    // Whether it had an approval (a walk through its history) is asked
    // only when the owner and the roles leave it open.
    ReadScope::of(principal).admits_with(conversation.owner.as_deref(), || {
        conversation.had_approval()
    })
}

/// Which conversations a principal may read, as plain data: what a
/// store filters listings on without reading every conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadScope {
    /// The principal's subject: its own conversations.
    pub subject: String,
    /// Anonymous (authentication off): also the conversations created
    /// while it was off (no owner).
    pub anonymous: bool,
    /// Admin: every conversation.
    pub everything: bool,
    /// Approver: also every conversation that has or had an approval.
    pub approvals: bool,
}

impl ReadScope {
    /// The scope of `principal`.
    pub fn of(principal: &Principal) -> ReadScope {
        ReadScope {
            subject: principal.subject.clone(),
            anonymous: principal.is_anonymous(),
            everything: principal.has(Role::Admin),
            approvals: principal.has(Role::Approver),
        }
    }

    /// Whether a conversation of `owner` (`None`: created while
    /// authentication was off), which `had_approval` or not, is in scope.
    pub fn admits(&self, owner: Option<&str>, had_approval: bool) -> bool {
        self.admits_with(owner, || had_approval)
    }

    /// [`admits`](Self::admits), asking `had_approval` only when the
    /// owner and the roles leave the answer open.
    pub fn admits_with(&self, owner: Option<&str>, had_approval: impl FnOnce() -> bool) -> bool {
        let owns = match owner {
            Some(owner) => owner == self.subject,
            None => self.anonymous,
        };
        owns || self.everything || (self.approvals && had_approval())
    }
}

/// May `principal` send messages to (or cancel) `conversation`?
pub fn can_continue(principal: &Principal, conversation: &Conversation) -> bool {
    principal.is_anonymous() || conversation.owner.as_deref() == Some(principal.subject.as_str())
}

/// May `principal` see this pending approval in a list?
pub fn can_see_approval(principal: &Principal, approval: &PendingApproval) -> bool {
    match approvals_seen_by(principal) {
        None => true,
        Some(subject) => approval
            .requested_by
            .as_ref()
            .is_some_and(|by| by.subject == subject),
    }
}

/// Whose pending approvals `principal` sees in a list: every one (`None`)
/// as an approver or admin, else only those it asked for.
pub fn approvals_seen_by(principal: &Principal) -> Option<String> {
    let every = principal.has(Role::Approver) || principal.has(Role::Admin);
    (!every).then(|| principal.subject.clone())
}

/// Why a principal may not decide an approval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not an approver.
    #[error("deciding approvals needs the approver role; {0} does not have it")]
    NotApprover(String),
    /// An approver outside the rule's `approvers`.
    #[error(
        "{who} may not decide this approval: {rule} lets only {approvers} decide; it stays pending"
    )]
    NotListed {
        /// The principal.
        who: String,
        /// The rule.
        rule: String,
        /// Its approvers, comma-separated.
        approvers: String,
    },
    /// The requester itself, with `separate_approver`.
    #[error(
        "{0} raised this approval and may not decide it (approval.separate_approver: another approver must); it stays pending"
    )]
    OwnRequest(String),
}

/// May `principal` decide `approval`? The role it acts in, or why not.
pub fn can_decide(
    principal: &Principal,
    approval: &PendingApproval,
    separate_approver: bool,
) -> Result<Role, Refusal> {
    if !principal.has(Role::Approver) {
        return Err(Refusal::NotApprover(principal.subject.clone()));
    }
    let own = approval
        .requested_by
        .as_ref()
        .is_some_and(|by| by.subject == principal.subject);
    if separate_approver && own && !principal.is_anonymous() {
        return Err(Refusal::OwnRequest(principal.subject.clone()));
    }
    let listed = approval.approvers.is_empty()
        || principal.is_anonymous()
        || approval.approvers.iter().any(|name| principal.is_in(name));
    if !listed {
        return Err(Refusal::NotListed {
            who: principal.subject.clone(),
            rule: approval
                .rule
                .clone()
                .unwrap_or_else(|| "approval.rules".into()),
            approvers: approval.approvers.join(", "),
        });
    }
    Ok(Role::Approver)
}

/// The record of `principal` acting in `role`, `via` a channel.
pub fn actor(principal: &Principal, role: Option<Role>, via: &str) -> Actor {
    Actor {
        subject: principal.subject.clone(),
        name: principal.name.clone(),
        role: role.map(|r| r.as_str().to_string()),
        via: Some(via.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use asg_shared::fixtures;
    use chrono::Utc;
    use uuid::Uuid;

    use super::*;
    use crate::principal::Credential;

    fn who(subject: &str, roles: &[Role]) -> Principal {
        Principal {
            subject: subject.into(),
            name: None,
            roles: roles.iter().copied().collect::<BTreeSet<_>>(),
            groups: BTreeSet::new(),
            credential: Credential::Token,
        }
    }

    fn conversation(owner: &str, with_approval: bool) -> Conversation {
        let id = Uuid::new_v4();
        Conversation {
            id,
            pending_approval: with_approval.then(|| approval(id, owner)),
            owner: Some(owner.into()),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            ..fixtures::conversation()
        }
    }

    fn approval(conversation_id: Uuid, requester: &str) -> PendingApproval {
        PendingApproval {
            conversation_id,
            description: "d".into(),
            created_at: Utc::now(),
            call_id: "c".into(),
            requested_by: Some(actor(&who(requester, &[]), None, "rest")),
            ..fixtures::pending_approval("resources_add")
        }
    }

    #[test]
    fn reading_follows_ownership_and_roles() {
        let bob = who("bob", &[]);
        let alice = who("alice", &[Role::Approver]);
        let dana = who("dana", &[Role::Admin]);
        let plain = conversation("carol", false);
        let gated = conversation("carol", true);
        let table = [
            (&bob, &plain, false),
            (&bob, &gated, false),
            (&alice, &plain, false),
            (&alice, &gated, true),
            (&dana, &plain, true),
            (&who("carol", &[]), &plain, true),
            (&Principal::anonymous(), &plain, true),
        ];
        for (principal, conversation, expected) in table {
            assert_eq!(
                can_read(principal, conversation),
                expected,
                "{} on {:?}",
                principal.subject,
                conversation.owner
            );
        }
        assert!(!can_continue(&alice, &gated), "approvers decide, not chat");
        assert!(can_continue(&who("carol", &[]), &gated));
    }

    #[test]
    fn the_history_is_walked_only_when_owner_and_roles_leave_it_open() {
        let walked = std::cell::Cell::new(0);
        let counter = &walked;
        let had = |answer: bool| {
            move || {
                counter.set(counter.get() + 1);
                answer
            }
        };
        let carol = ReadScope::of(&who("carol", &[Role::Approver]));
        assert!(carol.admits_with(Some("carol"), had(false)), "her own");
        let dana = ReadScope::of(&who("dana", &[Role::Admin]));
        assert!(dana.admits_with(Some("carol"), had(false)), "an admin");
        let bob = ReadScope::of(&who("bob", &[]));
        assert!(
            !bob.admits_with(Some("carol"), had(true)),
            "no role to ask for"
        );
        assert_eq!(walked.get(), 0);
        assert!(carol.admits_with(Some("erin"), had(true)));
        assert!(!carol.admits_with(Some("erin"), had(false)));
        assert_eq!(walked.get(), 2, "an approver on another's conversation");
    }

    #[test]
    fn deciding_needs_the_approver_role_and_another_principal() {
        let request = approval(Uuid::new_v4(), "alice");
        let bob = who("bob", &[]);
        let alice = who("alice", &[Role::Approver]);
        let erin = who("erin", &[Role::Approver]);
        assert_eq!(
            can_decide(&bob, &request, false),
            Err(Refusal::NotApprover("bob".into()))
        );
        assert_eq!(can_decide(&alice, &request, false), Ok(Role::Approver));
        let refused = can_decide(&alice, &request, true).unwrap_err();
        assert!(
            refused.to_string().contains("separate_approver"),
            "{refused}"
        );
        assert_eq!(can_decide(&erin, &request, true), Ok(Role::Approver));
        assert!(can_decide(&Principal::anonymous(), &request, true).is_ok());
    }

    #[test]
    fn approval_lists_show_everything_to_approvers_and_own_ones_to_others() {
        let request = approval(Uuid::new_v4(), "bob");
        assert!(can_see_approval(&who("bob", &[]), &request));
        assert!(!can_see_approval(&who("carol", &[]), &request));
        assert!(can_see_approval(&who("alice", &[Role::Approver]), &request));
        assert!(can_see_approval(&who("dana", &[Role::Admin]), &request));
    }

    #[test]
    fn a_rules_approvers_limit_who_decides() {
        let mut pending = approval(Uuid::new_v4(), "bob");
        pending.approvers = vec!["sre".into(), "admin".into()];
        pending.rule = Some("approval.rules[1] (ask resources_add)".into());
        let mut frank = who("frank", &[Role::Approver]);
        frank.groups.insert("sre".into());
        let alice = who("alice", &[Role::Approver]);
        let dana = who("dana", &[Role::Approver, Role::Admin]);
        let mut carol = who("carol", &[]);
        carol.groups.insert("sre".into());
        assert_eq!(can_decide(&frank, &pending, false), Ok(Role::Approver));
        assert_eq!(
            can_decide(&dana, &pending, false),
            Ok(Role::Approver),
            "a listed role"
        );
        assert!(can_decide(&Principal::anonymous(), &pending, false).is_ok());
        let refusal = can_decide(&alice, &pending, false).unwrap_err();
        assert!(matches!(refusal, Refusal::NotListed { .. }), "{refusal}");
        let message = refusal.to_string();
        assert!(
            message.contains("alice")
                && message.contains("sre, admin")
                && message.contains("approval.rules[1]"),
            "{message}"
        );
        // The group alone does not make an approver.
        assert_eq!(
            can_decide(&carol, &pending, false),
            Err(Refusal::NotApprover("carol".into()))
        );
        pending.approvers.clear();
        assert!(can_decide(&alice, &pending, false).is_ok());
    }
}
