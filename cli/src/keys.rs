//! What a key means: the approval prompt's keys (`a`, `r`, `e`, `d`, `s`)
//! and the inbox's small input machine (a number picks an approval, then
//! `a` approves or `r` asks for a reason). Pure, so the tests press keys
//! without a terminal.

/// A key as the prompts see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Enter.
    Enter,
    /// Backspace.
    Backspace,
    /// Escape.
    Esc,
    /// Ctrl-C or Ctrl-D: leave.
    Interrupt,
}

/// A choice at the approval prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalKey {
    /// Approve as requested.
    Approve,
    /// Reject (a reason is asked next).
    Reject,
    /// Edit the arguments, then approve.
    Edit,
    /// Show the whole approval.
    Details,
    /// Leave it pending and go back to the chat.
    Skip,
}

/// The approval prompt's meaning of `key`; None for a key it ignores.
/// `[e]dit` is refused when the approval may not be edited.
pub fn approval_key(key: Key, editable: bool) -> Option<ApprovalKey> {
    match key {
        Key::Char(c) => match c.to_ascii_lowercase() {
            'a' | 'y' => Some(ApprovalKey::Approve),
            'r' | 'n' => Some(ApprovalKey::Reject),
            'e' if editable => Some(ApprovalKey::Edit),
            'd' => Some(ApprovalKey::Details),
            's' => Some(ApprovalKey::Skip),
            _ => None,
        },
        Key::Esc | Key::Interrupt => Some(ApprovalKey::Skip),
        Key::Enter | Key::Backspace => None,
    }
}

/// The keys line of the approval prompt.
pub fn approval_keys_hint(editable: bool) -> &'static str {
    if editable {
        "[a]pprove  [r]eject  [e]dit  [d]etails  [s]kip"
    } else {
        "[a]pprove  [r]eject  [d]etails  [s]kip"
    }
}

/// Where the inbox's input stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum InboxInput {
    /// Waiting for a number.
    #[default]
    Idle,
    /// Approval number N picked (more digits extend it).
    Picked(usize),
    /// Rejecting N: typing the reason.
    Reason(usize, String),
}

/// What the inbox does after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboxAction {
    /// Only the input line changes.
    Nothing,
    /// Approve approval number N.
    Approve(usize),
    /// Reject approval number N, with the reason if one was typed.
    Reject(usize, Option<String>),
    /// Leave the inbox.
    Quit,
}

impl InboxInput {
    /// The input after `key`, and what to do.
    pub fn press(self, key: Key) -> (InboxInput, InboxAction) {
        use InboxAction::*;
        match (self, key) {
            (_, Key::Interrupt) => (InboxInput::Idle, Quit),
            (InboxInput::Reason(n, mut text), key) => match key {
                Key::Char(c) => {
                    text.push(c);
                    (InboxInput::Reason(n, text), Nothing)
                }
                Key::Backspace => {
                    text.pop();
                    (InboxInput::Reason(n, text), Nothing)
                }
                Key::Enter => {
                    let reason = Some(text.trim().to_string()).filter(|r| !r.is_empty());
                    (InboxInput::Idle, Reject(n, reason))
                }
                _ => (InboxInput::Idle, Nothing),
            },
            (state, Key::Char(c)) if c.is_ascii_digit() => {
                let digit = c.to_digit(10).unwrap_or(0) as usize;
                let n = match state {
                    InboxInput::Picked(n) if n < 10_000 => n * 10 + digit,
                    _ => digit,
                };
                (InboxInput::Picked(n), Nothing)
            }
            (InboxInput::Picked(n), Key::Char('a' | 'y')) => (InboxInput::Idle, Approve(n)),
            (InboxInput::Picked(n), Key::Char('r' | 'n')) => {
                (InboxInput::Reason(n, String::new()), Nothing)
            }
            (InboxInput::Idle, Key::Char('q')) => (InboxInput::Idle, Quit),
            (InboxInput::Picked(n), Key::Char(_) | Key::Backspace | Key::Enter) => {
                (InboxInput::Picked(n), Nothing)
            }
            (_, _) => (InboxInput::Idle, Nothing),
        }
    }

    /// The input line to show for this state.
    pub fn prompt(&self) -> String {
        match self {
            InboxInput::Idle => "number of an approval to decide, q to quit".into(),
            InboxInput::Picked(n) => format!("#{n}: [a]pprove  [r]eject  (Esc: back)"),
            InboxInput::Reason(n, text) => format!("#{n} reject, reason (Enter to send): {text}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press_all(keys: &[Key]) -> (InboxInput, Vec<InboxAction>) {
        let mut state = InboxInput::Idle;
        let mut actions = Vec::new();
        for key in keys {
            let (next, action) = state.press(*key);
            state = next;
            if action != InboxAction::Nothing {
                actions.push(action);
            }
        }
        (state, actions)
    }

    fn chars(text: &str) -> Vec<Key> {
        text.chars().map(Key::Char).collect()
    }

    #[test]
    fn approval_keys() {
        assert_eq!(
            approval_key(Key::Char('a'), true),
            Some(ApprovalKey::Approve)
        );
        assert_eq!(
            approval_key(Key::Char('R'), true),
            Some(ApprovalKey::Reject)
        );
        assert_eq!(approval_key(Key::Char('e'), true), Some(ApprovalKey::Edit));
        assert_eq!(approval_key(Key::Char('e'), false), None, "no edit allowed");
        assert_eq!(
            approval_key(Key::Char('d'), false),
            Some(ApprovalKey::Details)
        );
        assert_eq!(approval_key(Key::Esc, true), Some(ApprovalKey::Skip));
        assert_eq!(approval_key(Key::Char('x'), true), None);
        assert_eq!(approval_key(Key::Enter, true), None);
        assert!(!approval_keys_hint(false).contains("[e]dit"));
    }

    #[test]
    fn a_number_then_a_approves_it() {
        let (state, actions) = press_all(&chars("12a"));
        assert_eq!(state, InboxInput::Idle);
        assert_eq!(actions, [InboxAction::Approve(12)]);
    }

    #[test]
    fn reject_asks_for_a_reason_with_backspace_and_enter() {
        let mut keys = chars("3rno!");
        keys.push(Key::Backspace);
        keys.push(Key::Enter);
        let (_, actions) = press_all(&keys);
        assert_eq!(actions, [InboxAction::Reject(3, Some("no".into()))]);
        let (_, actions) = press_all(&[Key::Char('1'), Key::Char('r'), Key::Enter]);
        assert_eq!(actions, [InboxAction::Reject(1, None)]);
    }

    #[test]
    fn escape_goes_back_and_q_or_ctrl_c_quits() {
        let (state, actions) = press_all(&[Key::Char('2'), Key::Esc, Key::Char('a')]);
        assert_eq!((state, actions), (InboxInput::Idle, vec![]));
        assert_eq!(press_all(&chars("q")).1, [InboxAction::Quit]);
        assert_eq!(
            press_all(&[Key::Char('2'), Key::Char('r'), Key::Interrupt]).1,
            [InboxAction::Quit]
        );
        assert_eq!(
            press_all(&chars("2rq")).0,
            InboxInput::Reason(2, "q".into())
        );
    }
}
