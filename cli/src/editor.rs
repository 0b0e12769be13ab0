//! `[e]dit` at the approval prompt: the arguments go to a temporary JSON
//! file, `$EDITOR` (else `$VISUAL`, else `vi`) opens it, and what comes
//! back must be a JSON object before it is sent as the approved
//! arguments.

use std::io::Write;

use serde_json::{Map, Value};

use crate::error::{CliError, Result};

/// The editor command: `EDITOR`, else `VISUAL`, else `vi` (empty values
/// count as unset).
pub fn editor_command(editor: Option<String>, visual: Option<String>) -> String {
    [editor, visual]
        .into_iter()
        .flatten()
        .map(|e| e.trim().to_string())
        .find(|e| !e.is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// The edited file's text as arguments: a JSON object, or a message
/// saying what is wrong.
pub fn parse_edited(text: &str) -> std::result::Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("the arguments must be a JSON object".into()),
        Err(e) => Err(format!("the edited arguments are not valid JSON: {e}")),
    }
}

/// Opens the arguments in the editor and reads them back.
pub fn edit_arguments(arguments: &Map<String, Value>) -> Result<Map<String, Value>> {
    let mut file = tempfile::Builder::new()
        .prefix("asg-arguments-")
        .suffix(".json")
        .tempfile()?;
    let text = serde_json::to_string_pretty(arguments).map_err(std::io::Error::other)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.flush()?;
    let command = editor_command(std::env::var("EDITOR").ok(), std::env::var("VISUAL").ok());
    // Through the shell, so `EDITOR="code --wait"` works; the path is a
    // positional parameter, never spliced into the command text.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{command} \"$1\""))
        .arg("asg-editor")
        .arg(file.path())
        .status()
        .map_err(|e| CliError::Invalid(format!("cannot start the editor {command:?}: {e}")))?;
    if !status.success() {
        return Err(CliError::Invalid(format!(
            "the editor {command:?} failed ({status}); nothing was sent"
        )));
    }
    let edited = std::fs::read_to_string(file.path())?;
    parse_edited(&edited).map_err(CliError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_then_visual_then_vi() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(editor_command(s("nano"), s("code")), "nano");
        assert_eq!(editor_command(s(" "), s("code --wait")), "code --wait");
        assert_eq!(editor_command(None, None), "vi");
    }

    #[test]
    fn only_a_json_object_comes_back() {
        assert_eq!(
            parse_edited("{\"value\": 9}\n").map(|m| m["value"].clone()),
            Ok(serde_json::json!(9))
        );
        assert!(parse_edited("[1]").unwrap_err().contains("object"));
        assert!(
            parse_edited("{value: 9")
                .unwrap_err()
                .contains("not valid JSON")
        );
    }
}
