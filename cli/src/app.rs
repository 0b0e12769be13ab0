//! The commands dispatched: the credential chosen (environment, then the
//! stored login), the style decided, then chat, inbox, the listings or
//! login.

use chrono::Utc;

use crate::args::{Cli, Command};
use crate::client::Client;
use crate::credentials::{load, select};
use crate::dirs::{process_env, token_file};
use crate::error::{CliError, Result};
use crate::login::LoginRequest;
use crate::style::Style;
use crate::{chat, inbox, listing, login};

/// Runs one command.
pub async fn run(cli: Cli) -> Result<()> {
    let style = Style::detect();
    let token_path = token_file(process_env);
    match cli.command {
        Command::Login {
            issuer,
            client_id,
            scope,
        } => {
            let path = token_path.ok_or_else(no_home)?;
            let request = LoginRequest {
                issuer,
                client_id,
                scope,
            };
            login::run(&request, &style, &path).await
        }
        Command::Logout => {
            let path = token_path.ok_or_else(no_home)?;
            match std::fs::remove_file(&path) {
                Ok(()) => println!("signed out; {} removed", path.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => println!("not signed in"),
                Err(e) => return Err(e.into()),
            }
            Ok(())
        }
        command => {
            let credential = select(
                process_env("ASG_API_KEY"),
                process_env("ASG_TOKEN"),
                token_path.as_deref().and_then(load),
                Utc::now(),
            );
            let client = Client::new(&cli.url, credential)?;
            match command {
                Command::Chat { conversation } => chat::run(&client, style, conversation).await,
                Command::Inbox => inbox::run(&client, style).await,
                Command::Approvals(c) => listing::approvals(&client, &style, c).await,
                Command::Conversations(c) => listing::conversations(&client, &style, c).await,
                Command::Login { .. } | Command::Logout => Ok(()),
            }
        }
    }
}

fn no_home() -> CliError {
    CliError::Invalid("neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep the token".into())
}
