//! The command line (clap derive). Identity comes from the environment
//! (`ASG_URL`, `ASG_API_KEY`, `ASG_TOKEN`) or `asg login`; never from an
//! argument, so a key never lands in the shell history.

use clap::{Parser, Subcommand};

/// The agent's URL when `ASG_URL` is not set.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// `asg`: chat with the agent and decide its approvals from a terminal.
#[derive(Debug, Parser)]
#[command(name = "asg", version, about)]
pub struct Cli {
    /// The agent's base URL.
    #[arg(long, env = "ASG_URL", default_value = DEFAULT_URL, global = true)]
    pub url: String,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// An interactive chat: each line is a message; approvals and
    /// questions are prompted in place.
    Chat {
        /// Continue this conversation instead of starting a new one.
        #[arg(long)]
        conversation: Option<String>,
    },
    /// Pending approvals across conversations, live; decide by key.
    Inbox,
    /// Pending approvals.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Conversations.
    #[command(subcommand)]
    Conversations(ConversationsCommand),
    /// Sign in through the provider's device authorization flow and keep
    /// the token for later commands.
    Login {
        /// The OpenID Connect issuer.
        #[arg(long, env = "ASG_ISSUER")]
        issuer: String,
        /// The client id registered for this CLI at the provider.
        #[arg(long, env = "ASG_CLIENT_ID", default_value = "asg-cli")]
        client_id: String,
        /// Scopes to ask for.
        #[arg(long, default_value = "openid")]
        scope: String,
    },
    /// Forget the token `asg login` stored.
    Logout,
}

/// `asg approvals …`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Every pending approval (all pages).
    List,
    /// Approve one.
    Approve {
        /// The approval's UUID.
        uuid: String,
    },
    /// Reject one.
    Reject {
        /// The approval's UUID.
        uuid: String,
        /// Why (recorded on the decision).
        #[arg(long)]
        reason: Option<String>,
    },
}

/// `asg conversations …`.
#[derive(Debug, Subcommand)]
pub enum ConversationsCommand {
    /// One page of conversations, newest first.
    List,
    /// One conversation with its messages.
    Show {
        /// The conversation's id.
        id: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn reject_takes_a_reason() {
        let cli = Cli::try_parse_from(["asg", "approvals", "reject", "u", "--reason", "no"])
            .expect("parses");
        match cli.command {
            Command::Approvals(ApprovalsCommand::Reject { uuid, reason }) => {
                assert_eq!((uuid.as_str(), reason.as_deref()), ("u", Some("no")));
            }
            other => panic!("parsed as {other:?}"),
        }
    }
}
