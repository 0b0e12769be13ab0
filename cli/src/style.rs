//! Colour and layout decisions. Colour only when stdout is a terminal and
//! `NO_COLOR` is unset or empty (no-color.org); prompts, keys and live
//! redraws only when both stdin and stdout are terminals. Piped output is
//! plain lines without escape bytes.

use std::io::IsTerminal;

/// How output looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours on.
    pub color: bool,
    /// A person at a terminal: prompts and single keys.
    pub interactive: bool,
}

impl Style {
    /// The decision from the facts (pure, for the tests).
    pub fn decide(no_color: Option<&str>, stdin_tty: bool, stdout_tty: bool) -> Style {
        let no_color = no_color.is_some_and(|v| !v.is_empty());
        Style {
            color: stdout_tty && !no_color,
            interactive: stdin_tty && stdout_tty,
        }
    }

    /// The decision for this process.
    pub fn detect() -> Style {
        let no_color = std::env::var("NO_COLOR").ok();
        Style::decide(
            no_color.as_deref(),
            std::io::stdin().is_terminal(),
            std::io::stdout().is_terminal(),
        )
    }

    /// Plain: no colour, no prompts.
    pub fn plain() -> Style {
        Style {
            color: false,
            interactive: false,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Headings and names.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Secondary details.
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Something waits for a decision.
    pub fn warn(&self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Approved, ran.
    pub fn good(&self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Rejected, failed.
    pub fn bad(&self, text: &str) -> String {
        self.paint("31", text)
    }

    /// The agent's words.
    pub fn agent(&self, text: &str) -> String {
        self.paint("36", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_needs_a_terminal_and_no_no_color() {
        assert!(Style::decide(None, true, true).color);
        assert!(
            Style::decide(Some(""), false, true).color,
            "empty NO_COLOR is unset"
        );
        assert!(!Style::decide(Some("1"), true, true).color);
        assert!(!Style::decide(None, true, false).color);
    }

    #[test]
    fn prompts_need_both_ends_on_a_terminal() {
        assert!(Style::decide(None, true, true).interactive);
        assert!(!Style::decide(None, false, true).interactive);
        assert!(!Style::decide(None, true, false).interactive);
        assert!(
            Style::decide(Some("1"), true, true).interactive,
            "NO_COLOR is only about colour"
        );
    }

    #[test]
    fn plain_output_has_no_escape_bytes() {
        let style = Style::decide(None, true, false);
        let text = [
            style.bold("a"),
            style.dim("b"),
            style.warn("c"),
            style.good("d"),
            style.bad("e"),
            style.agent("f"),
        ]
        .concat();
        assert_eq!(text, "abcdef");
        assert!(Style::decide(None, true, true).bold("a").contains('\x1b'));
    }
}
