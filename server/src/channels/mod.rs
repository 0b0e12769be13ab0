//! Channels: doors to the gate where people already work. Each posts the
//! engine's approval events (the operator inbox) somewhere people look,
//! and turns a person's click there into the same decision the REST API
//! makes, as the principal that person is mapped to ([`directory`]).
//! Nothing about deciding is here: the engine asks the core, as for
//! every door.

pub mod directory;
pub mod email;
pub mod slack;

use std::sync::Arc;

use crate::config::AgentConfig;
use crate::engine::Engine;
use directory::Directory;

/// The configured channels.
pub struct Channels {
    /// Who the channels' users stand for.
    pub directory: Arc<Directory>,
    /// The engine decisions go to.
    pub engine: Engine,
    /// Approval mails (`channels.email`), when configured.
    pub email: Option<Arc<email::Email>>,
    /// `channels.slack`, when configured.
    pub slack: Option<slack::Slack>,
}

impl Channels {
    /// Resolves every principal the channels name (an unknown one is a
    /// startup error naming its field).
    pub fn build(
        config: &AgentConfig,
        engine: &Engine,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Channels, String> {
        let directory = Directory::build(&config.auth, &config.channels, named_subjects(config))?;
        let directory = Arc::new(directory);
        let email = email::Email::build(config, engine, env, &directory)?.map(Arc::new);
        let web_url = config.approval.web_url.clone();
        let slack = match &config.channels.slack {
            Some(slack) => Some(slack::Slack::build(
                slack,
                engine,
                directory.clone(),
                env,
                web_url,
            )?),
            None => None,
        };
        Ok(Channels {
            directory,
            engine: engine.clone(),
            email,
            slack,
        })
    }

    /// Starts posting; `public_url` is the base of links back to us.
    pub async fn start(&self, public_url: &str) {
        if let Some(email) = &self.email {
            email.start(public_url);
        }
        if let Some(slack) = &self.slack {
            slack.start(public_url);
        }
    }

    /// Stops posting, waiting a short bound for posts in flight.
    pub async fn shutdown(&self) {
        if let Some(email) = &self.email {
            email.shutdown().await;
        }
        if let Some(slack) = &self.slack {
            slack.shutdown().await;
        }
    }
}

/// Every `(field, subject)` a channel maps its users to.
fn named_subjects(config: &AgentConfig) -> Vec<(String, &str)> {
    let channels = &config.channels;
    let slack = channels.slack.iter().flat_map(|slack| {
        slack
            .user_map
            .iter()
            .map(|(user, subject)| (format!("channels.slack.user_map.{user}"), subject.as_str()))
    });
    let email = channels.email.iter().flat_map(|email| {
        email
            .to
            .iter()
            .map(|(address, subject)| (format!("channels.email.to.{address}"), subject.as_str()))
    });
    slack.chain(email).collect()
}
