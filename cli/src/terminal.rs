//! Reading what the person types. At a terminal: lines through reedline
//! (editing, history in the XDG state dir) and single keys in raw mode
//! through crossterm. Elsewhere (stdin a pipe or a file): plain lines,
//! where a key is the first character of a line, so a script can still
//! drive `asg chat`.

use std::borrow::Cow;
use std::io::BufRead;
use std::path::PathBuf;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use reedline::{FileBackedHistory, Prompt, PromptEditMode, PromptHistorySearch, Reedline, Signal};

use crate::keys::Key;

/// Where lines and keys come from.
pub trait Input {
    /// One line after showing `prompt`; None at the end (Ctrl-D, EOF).
    fn line(&mut self, prompt: &str) -> std::io::Result<Option<String>>;
    /// One key after showing `prompt`.
    fn key(&mut self, prompt: &str) -> std::io::Result<Key>;
}

/// A person at a terminal.
pub struct TerminalInput {
    editor: Reedline,
}

impl TerminalInput {
    /// Line editing with the history in `history` (kept in memory only
    /// when None or unwritable).
    pub fn new(history: Option<PathBuf>) -> TerminalInput {
        let editor = Reedline::create();
        let file = history.and_then(|path| FileBackedHistory::with_file(1000, path).ok());
        let editor = match file {
            Some(file) => editor.with_history(Box::new(file)),
            None => editor,
        };
        TerminalInput { editor }
    }
}

impl Input for TerminalInput {
    fn line(&mut self, prompt: &str) -> std::io::Result<Option<String>> {
        let prompt = TextPrompt(prompt.to_string());
        loop {
            match self
                .editor
                .read_line(&prompt)
                .map_err(std::io::Error::other)?
            {
                Signal::Success(line) => return Ok(Some(line)),
                Signal::CtrlD => return Ok(None),
                // Ctrl-C clears the line, as in a shell.
                _ => continue,
            }
        }
    }

    fn key(&mut self, prompt: &str) -> std::io::Result<Key> {
        use std::io::Write;
        let mut out = std::io::stdout();
        write!(out, "{prompt} ")?;
        out.flush()?;
        let key = {
            let _raw = RawMode::on()?;
            loop {
                if let Some(key) = read_key()? {
                    break key;
                }
            }
        };
        match key {
            Key::Char(c) => writeln!(out, "{c}")?,
            _ => writeln!(out)?,
        }
        Ok(key)
    }
}

/// Raw mode while it lives (restored on drop, errors included).
pub struct RawMode;

impl RawMode {
    /// Switches the terminal to raw mode.
    pub fn on() -> std::io::Result<RawMode> {
        crossterm::terminal::enable_raw_mode()?;
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Waits for the next terminal event; the key it is, if it is one we use.
pub fn read_key() -> std::io::Result<Option<Key>> {
    Ok(match crossterm::event::read()? {
        Event::Key(event) => key_of(event),
        _ => None,
    })
}

/// A crossterm key press as a [`Key`].
pub fn key_of(event: KeyEvent) -> Option<Key> {
    if event.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
    match event.code {
        KeyCode::Char('c' | 'd') if ctrl => Some(Key::Interrupt),
        KeyCode::Char(c) if !ctrl => Some(Key::Char(c)),
        KeyCode::Enter => Some(Key::Enter),
        KeyCode::Backspace => Some(Key::Backspace),
        KeyCode::Esc => Some(Key::Esc),
        _ => None,
    }
}

/// Lines from a pipe: no editing, no raw mode.
pub struct PlainInput<R> {
    reader: R,
}

impl<R: BufRead> PlainInput<R> {
    /// Reads from `reader`.
    pub fn new(reader: R) -> PlainInput<R> {
        PlainInput { reader }
    }
}

impl<R: BufRead> Input for PlainInput<R> {
    fn line(&mut self, _prompt: &str) -> std::io::Result<Option<String>> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        Ok(Some(line.trim_end_matches(['\n', '\r']).to_string()))
    }

    fn key(&mut self, prompt: &str) -> std::io::Result<Key> {
        Ok(match self.line(prompt)? {
            None => Key::Interrupt,
            Some(line) => line.trim().chars().next().map_or(Key::Enter, Key::Char),
        })
    }
}

/// A prompt of fixed text.
struct TextPrompt(String);

impl Prompt for TextPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.0)
    }
    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed(" ")
    }
    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }
    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossterm_keys_map_to_ours() {
        let press = |code, modifiers| key_of(KeyEvent::new(code, modifiers));
        assert_eq!(
            press(KeyCode::Char('a'), KeyModifiers::NONE),
            Some(Key::Char('a'))
        );
        assert_eq!(
            press(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Key::Interrupt)
        );
        assert_eq!(press(KeyCode::Char('x'), KeyModifiers::CONTROL), None);
        assert_eq!(press(KeyCode::Enter, KeyModifiers::NONE), Some(Key::Enter));
        assert_eq!(press(KeyCode::Up, KeyModifiers::NONE), None);
    }

    #[test]
    fn piped_input_gives_lines_and_first_characters_as_keys() {
        let mut input = PlainInput::new(&b"hello\r\n  a\n\n"[..]);
        assert_eq!(input.line("").expect("read").as_deref(), Some("hello"));
        assert_eq!(input.key("").expect("read"), Key::Char('a'));
        assert_eq!(input.key("").expect("read"), Key::Enter);
        assert_eq!(input.key("").expect("read"), Key::Interrupt);
        assert_eq!(input.line("").expect("read"), None);
    }
}
