//! Where `asg` keeps its files, after the XDG base directory spec: the
//! token from `asg login` under `$XDG_CONFIG_HOME/asg/` (default
//! `~/.config/asg/`), the chat history under `$XDG_STATE_HOME/asg/`
//! (default `~/.local/state/asg/`). Read from the environment through a
//! lookup function, so the rules are tested without touching it.

use std::path::PathBuf;

/// `$XDG_CONFIG_HOME/asg`, else `$HOME/.config/asg`; None without either.
pub fn config_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    base(&env, "XDG_CONFIG_HOME", ".config").map(|dir| dir.join("asg"))
}

/// `$XDG_STATE_HOME/asg`, else `$HOME/.local/state/asg`.
pub fn state_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    base(&env, "XDG_STATE_HOME", ".local/state").map(|dir| dir.join("asg"))
}

/// The stored token's file.
pub fn token_file(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    config_dir(env).map(|dir| dir.join("token.json"))
}

/// The chat history's file.
pub fn history_file(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    state_dir(env).map(|dir| dir.join("history"))
}

/// The process environment as a lookup (empty values count as unset, as
/// the XDG spec says).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The variable if it is an absolute path (the spec ignores relative
/// ones), else `$HOME/<fallback>`.
fn base(env: &impl Fn(&str) -> Option<String>, variable: &str, fallback: &str) -> Option<PathBuf> {
    if let Some(dir) = env(variable).map(PathBuf::from)
        && dir.is_absolute()
    {
        return Some(dir);
    }
    env("HOME").map(|home| PathBuf::from(home).join(fallback))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn xdg_variables_win_over_home() {
        let vars = [
            ("HOME", "/home/ann"),
            ("XDG_CONFIG_HOME", "/cfg"),
            ("XDG_STATE_HOME", "/st"),
        ];
        assert_eq!(token_file(env(&vars)), Some("/cfg/asg/token.json".into()));
        assert_eq!(history_file(env(&vars)), Some("/st/asg/history".into()));
    }

    #[test]
    fn home_is_the_fallback_and_relative_paths_are_ignored() {
        let vars = [("HOME", "/home/ann"), ("XDG_CONFIG_HOME", "rel")];
        assert_eq!(
            token_file(env(&vars)),
            Some("/home/ann/.config/asg/token.json".into())
        );
        assert_eq!(
            history_file(env(&vars)),
            Some("/home/ann/.local/state/asg/history".into())
        );
        assert_eq!(token_file(env(&[])), None);
    }
}
