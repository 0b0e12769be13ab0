//! `channels.email`: each approval request becomes a short mail to its
//! recipients (all of `channels.email.to`, or its rule's route) with two
//! signed links, Approve and Reject ([`token`]). A link opens a
//! confirmation page on this agent ([`door`]); **a GET never decides**
//! (mail scanners follow links), the page's button POSTs the decision,
//! which the engine applies as the recipient's principal, judged by the
//! gate like every door's. Questions (`ask_human`, elicitations) are not
//! mailed: they are answered in the web chat or over REST.
//!
//! Mails leave through a bounded queue with retries ([`send`]); building
//! one is pure ([`mail`]). The inbox followed is this process's own, so
//! with replicas each approval is mailed once, by the replica that
//! raised it; any replica takes the decision (the store is shared).
//!
//! Single use needs no list of used tokens: a link decides only an
//! approval that is still pending, and the engine decides it once under
//! the conversation's claim, so a replay, the other link, or the same
//! link on another replica finds it decided (409). A link refused by the
//! gate (four-eyes) decided nothing and stays as valid as before.

pub mod door;
pub mod mail;
pub mod page;
pub mod send;
pub mod token;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use asg_core::principal::Principal;
use asg_shared::events::InboxEvent;
use asg_shared::{ApprovalState, PendingApproval};
use chrono::Utc;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::directory::Directory;
use crate::config::AgentConfig;
use crate::config::channels::{EmailConfig, EmailTls};
use crate::engine::Engine;
use send::{MAIL_ATTEMPTS, Outbox, Outgoing, Retry};
use token::{Decision, Link, Signer};

/// How long one SMTP attempt may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long shutdown waits for queued mails.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(3);

/// The email channel.
pub struct Email {
    /// The agent's name (subjects, pages).
    agent: String,
    from: Mailbox,
    /// Address → the principal its links decide as.
    recipients: BTreeMap<String, Principal>,
    /// Rule index → its recipients.
    routes: BTreeMap<usize, Vec<String>>,
    link_ttl: Duration,
    signer: Signer,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    outbox: Outbox,
    /// Subscribed at build time, so no request made after startup is
    /// missed; taken by [`Email::start`].
    inbox: Mutex<Option<broadcast::Receiver<InboxEvent>>>,
    /// Where links point (`start`'s public URL).
    public_url: OnceLock<String>,
    closing: CancellationToken,
}

impl Email {
    /// The channel of `channels.email`, when configured: the link secret
    /// and SMTP credentials from `env` (an unset or short secret is a
    /// startup error naming its variable), recipients resolved in
    /// `directory`.
    pub fn build(
        config: &AgentConfig,
        engine: &Engine,
        env: &dyn Fn(&str) -> Option<String>,
        directory: &Directory,
    ) -> Result<Option<Email>, String> {
        let Some(email) = &config.channels.email else {
            return Ok(None);
        };
        let signer = link_signer(email, env)?;
        let transport = transport(email, env)?;
        let from = email
            .from
            .parse()
            .map_err(|e| format!("channels.email.from: {e}"))?;
        let mut recipients = BTreeMap::new();
        for (address, subject) in &email.to {
            let principal = directory.principal(subject).ok_or_else(|| {
                format!("channels.email.to.{address}: principal {subject:?} is not known")
            })?;
            recipients.insert(address.clone(), principal);
        }
        let routes = email
            .routes
            .iter()
            .map(|route| (route.rule, route.to.clone()))
            .collect();
        Ok(Some(Email {
            agent: config.name.clone(),
            from,
            recipients,
            routes,
            link_ttl: email.link_ttl.get(),
            signer,
            transport,
            outbox: Outbox::new(),
            inbox: Mutex::new(Some(engine.inbox_receiver())),
            public_url: OnceLock::new(),
            closing: CancellationToken::new(),
        }))
    }

    /// Starts mailing approval requests; links point at `public_url`.
    pub fn start(self: &Arc<Self>, public_url: &str) {
        let _ = self
            .public_url
            .set(public_url.trim_end_matches('/').to_string());
        let inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(inbox) = inbox else {
            return;
        };
        self.outbox.start(
            self.transport.clone(),
            Retry {
                attempts: MAIL_ATTEMPTS,
                ..Retry::default()
            },
        );
        tracing::info!(
            recipients = self.recipients.len(),
            "approval mails enabled (channels.email)"
        );
        let email = self.clone();
        tokio::spawn(async move { email.dispatch(inbox).await });
    }

    /// Stops mailing, sending what is queued within a short bound.
    pub async fn shutdown(&self) {
        self.closing.cancel();
        self.outbox.shutdown(SHUTDOWN_BOUND).await;
    }

    /// Follows the inbox until shutdown, queueing the mails of each
    /// approval request.
    async fn dispatch(&self, mut inbox: broadcast::Receiver<InboxEvent>) {
        loop {
            let received = tokio::select! {
                received = inbox.recv() => received,
                () = self.closing.cancelled() => return,
            };
            match received {
                Ok(InboxEvent::ApprovalRequested { approval }) => self.mail(&approval, false),
                Ok(InboxEvent::ApprovalReminder { approval }) => self.mail(&approval, true),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "approval mails fell behind the approval events; some were not sent"
                    );
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Queues one mail per recipient of `approval` (not for questions);
    /// a `reminder` says the approval still waits.
    fn mail(&self, approval: &PendingApproval, reminder: bool) {
        if approval.is_question() || approval.state != ApprovalState::Pending {
            return;
        }
        let base = self.public_url.get().map(String::as_str).unwrap_or("");
        let expires = Utc::now() + self.link_ttl;
        for recipient in self.recipients_of(approval) {
            let link = |decision| {
                let token = self.signer.sign(&Link {
                    approval: approval.uuid,
                    decision,
                    recipient: recipient.to_string(),
                    expires_at: expires.timestamp(),
                    id: rand::random(),
                });
                link_url(base, decision, approval.uuid, &token)
            };
            let (approve_url, reject_url) = (link(Decision::Approve), link(Decision::Reject));
            let body = mail::body(&mail::MailContent {
                agent: &self.agent,
                approval,
                approve_url: &approve_url,
                reject_url: &reject_url,
                links_expire: expires,
                reminder,
            });
            let label = format!("approval {} to {recipient}", approval.uuid);
            match mail::message(&self.from, recipient, body) {
                Ok(message) => self.outbox.enqueue(Outgoing { message, label }),
                Err(error) => tracing::warn!(mail = %label, %error, "approval mail not built"),
            }
        }
    }

    /// The addresses an approval goes to: its rule's route; else the
    /// recipients whose principal holds one of the roles or groups the
    /// rule names as its `approvers`; else all.
    fn recipients_of(&self, approval: &PendingApproval) -> Vec<&str> {
        match routed(&self.routes, approval.rule.as_deref()) {
            Some(to) => to.iter().map(String::as_str).collect(),
            None => by_role(&self.recipients, &approval.approvers),
        }
    }

    /// The principal a recipient's links decide as.
    pub fn principal_of(&self, recipient: &str) -> Option<&Principal> {
        self.recipients.get(recipient)
    }

    /// The link signer.
    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    /// The agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }
}

/// `{base}/channels/email/{approve|reject}?approval=…&token=…`.
pub fn link_url(base: &str, decision: Decision, approval: uuid::Uuid, token: &str) -> String {
    format!(
        "{base}/channels/email/{}?approval={approval}&token={token}",
        decision.as_str()
    )
}

/// The route of the rule labelled `rule` (`approval.rules[N] (…)`), if
/// it has one.
fn routed<'a>(
    routes: &'a BTreeMap<usize, Vec<String>>,
    rule: Option<&str>,
) -> Option<&'a Vec<String>> {
    routes.get(&rule_index(rule?)?)
}

/// The recipients who may decide by role or group: those whose
/// principal is in one of `approvers` (all of them when it is empty). A
/// mail to someone the gate would refuse only wastes their time.
fn by_role<'a>(recipients: &'a BTreeMap<String, Principal>, approvers: &[String]) -> Vec<&'a str> {
    recipients
        .iter()
        .filter(|(_, principal)| {
            approvers.is_empty() || approvers.iter().any(|name| principal.is_in(name))
        })
        .map(|(address, _)| address.as_str())
        .collect()
}

/// The index of `approval.rules[N] (…)`.
fn rule_index(rule: &str) -> Option<usize> {
    let rest = rule.strip_prefix("approval.rules[")?;
    let (index, _) = rest.split_once(']')?;
    index.parse().ok()
}

/// The link signer, with the secret from `link_secret_env`.
fn link_signer(
    email: &EmailConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Signer, String> {
    let variable = &email.link_secret_env;
    let secret = env(variable).ok_or_else(|| {
        format!(
            "channels.email.link_secret_env: environment variable {variable} is not set \
             (the secret that signs the mails' links)"
        )
    })?;
    Signer::new(secret.as_bytes())
        .map_err(|why| format!("channels.email.link_secret_env: {variable}: {why}"))
}

/// The SMTP transport: host, port, TLS mode, credentials from `env`.
fn transport(
    email: &EmailConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let tls = |host: &str| {
        TlsParameters::new(host.to_string())
            .map_err(|e| format!("channels.email.tls: cannot set up TLS for {host}: {e}"))
    };
    let mode = match email.tls {
        EmailTls::None => Tls::None,
        EmailTls::Starttls => Tls::Required(tls(&email.smtp_host)?),
        EmailTls::Tls => Tls::Wrapper(tls(&email.smtp_host)?),
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&email.smtp_host)
        .port(email.smtp_port)
        .tls(mode)
        .timeout(Some(SMTP_TIMEOUT));
    if let (Some(user_env), Some(password_env)) = (&email.username_env, &email.password_env) {
        let read = |field: &str, variable: &str| {
            env(variable).ok_or_else(|| {
                format!("channels.email.{field}: environment variable {variable} is not set")
            })
        };
        let username = read("username_env", user_env)?;
        let password = read("password_env", password_env)?;
        builder = builder.credentials(Credentials::new(username, password));
    }
    Ok(builder.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use asg_core::principal::Role;

    #[test]
    fn rule_labels_give_their_index() {
        assert_eq!(rule_index("approval.rules[3] (ask resources_*)"), Some(3));
        assert_eq!(rule_index("approval.rules[12]"), Some(12));
        assert_eq!(rule_index("approval.always"), None);
        assert_eq!(rule_index("approval.rules[x] (ask t)"), None);
    }

    #[test]
    fn routed_rules_go_to_their_recipients_only() {
        let routes = BTreeMap::from([(1, vec!["bob@example.com".to_string()])]);
        let to = routed(&routes, Some("approval.rules[1] (ask resources_*)"));
        assert_eq!(
            to.map(Vec::as_slice),
            Some(&["bob@example.com".to_string()][..])
        );
        assert_eq!(routed(&routes, Some("approval.rules[0] (ask x)")), None);
        assert_eq!(routed(&routes, None), None);
    }

    #[test]
    fn named_approvers_pick_the_recipients_in_their_roles_or_groups() {
        let person = |roles: &[Role], groups: &[&str]| Principal {
            subject: "key:x".into(),
            name: None,
            roles: roles.iter().copied().collect(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            credential: asg_core::principal::Credential::ApiKey,
        };
        let recipients = BTreeMap::from([
            (
                "ops@example.com".to_string(),
                person(&[Role::Approver], &["sre"]),
            ),
            (
                "dba@example.com".to_string(),
                person(&[Role::Approver], &["dba"]),
            ),
            ("boss@example.com".to_string(), person(&[Role::Admin], &[])),
        ]);
        assert_eq!(by_role(&recipients, &["dba".into()]), ["dba@example.com"]);
        assert_eq!(
            by_role(&recipients, &["admin".into()]),
            ["boss@example.com"]
        );
        assert_eq!(by_role(&recipients, &[]).len(), 3);
        assert!(by_role(&recipients, &["finance".into()]).is_empty());
    }

    fn config(yaml_extra: &str) -> EmailConfig {
        let yaml = format!(
            "smtp_host: mail.example.com\nfrom: agent@example.com\n\
             link_secret_env: LINK_SECRET\n{yaml_extra}"
        );
        serde_yaml::from_str(&yaml).unwrap()
    }

    #[test]
    fn an_unset_or_short_link_secret_is_a_startup_error_naming_the_variable() {
        let unset = link_signer(&config(""), &|_| None).err().unwrap();
        assert!(
            unset.contains("channels.email.link_secret_env") && unset.contains("LINK_SECRET"),
            "{unset}"
        );
        let short = link_signer(&config(""), &|_| Some("short".into()))
            .err()
            .unwrap();
        assert!(
            short.contains("LINK_SECRET") && short.contains("32"),
            "{short}"
        );
        assert!(link_signer(&config(""), &|_| Some("s".repeat(32))).is_ok());
    }

    #[test]
    fn smtp_credentials_come_from_the_named_variables() {
        let with_auth = config("username_env: SMTP_USER\npassword_env: SMTP_PASSWORD\n");
        let missing = transport(&with_auth, &|name| {
            (name == "SMTP_USER").then(|| "u".into())
        })
        .err()
        .unwrap();
        assert!(
            missing.contains("channels.email.password_env") && missing.contains("SMTP_PASSWORD"),
            "{missing}"
        );
        assert!(transport(&with_auth, &|_| Some("x".into())).is_ok());
        assert!(transport(&config("tls: tls\n"), &|_| None).is_ok());
    }

    #[test]
    fn links_name_the_decision_the_approval_and_the_token() {
        let url = link_url(
            "https://agent.example",
            Decision::Reject,
            uuid::Uuid::from_u128(1),
            "a.b",
        );
        assert_eq!(
            url,
            "https://agent.example/channels/email/reject?approval=00000000-0000-0000-0000-000000000001&token=a.b"
        );
    }
}
