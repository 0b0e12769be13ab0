//! Readable tool arguments and results: a key/value table instead of
//! one-line JSON, and pretty-printed JSON where a value is structured.

use serde_json::{Map, Value};

/// One row of an argument table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgRow {
    /// Argument name.
    pub key: String,
    /// The value as shown: strings without quotes, numbers and booleans
    /// as written, objects and arrays pretty-printed.
    pub value: String,
    /// True when the value spans several lines (structured or long text),
    /// so the view can show it as a block.
    pub block: bool,
}

/// The rows of an argument table, in the order of the map (sorted by
/// name unless serde_json keeps insertion order).
pub fn arg_rows(args: &Map<String, Value>) -> Vec<ArgRow> {
    args.iter()
        .map(|(key, value)| {
            let shown = display_value(value);
            ArgRow {
                key: key.clone(),
                block: shown.contains('\n') || matches!(value, Value::Object(_) | Value::Array(_)),
                value: shown,
            }
        })
        .collect()
}

/// One value as a person reads it.
pub fn display_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "null".to_string(),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::Array(items) if items.is_empty() => "[]".to_string(),
        Value::Object(map) if map.is_empty() => "{}".to_string(),
        Value::Array(_) | Value::Object(_) => pretty_json(value),
    }
}

/// Pretty-printed JSON (two-space indent).
pub fn pretty_json(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A tool's output text: pretty-printed when it is a JSON object or array,
/// unchanged otherwise.
pub fn pretty_text(text: &str) -> String {
    let trimmed = text.trim();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(trimmed)
        && (value.is_object() || value.is_array())
    {
        return pretty_json(&value);
    }
    text.to_string()
}

/// A one-line summary of the arguments, e.g. `name: web-1, value: 42`,
/// shortened to about `max` characters.
pub fn args_summary(args: &Map<String, Value>, max: usize) -> String {
    let full = args
        .iter()
        .map(|(key, value)| {
            let shown = match value {
                Value::Object(_) | Value::Array(_) => value.to_string(),
                _ => display_value(value),
            };
            format!("{key}: {shown}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    shorten(&full, max)
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn scalar_arguments_become_plain_rows_in_order() {
        let rows = arg_rows(&map(json!({"name": "web-1", "value": 42, "force": true})));
        let shown: Vec<_> = rows
            .iter()
            .map(|r| (r.key.as_str(), r.value.as_str(), r.block))
            .collect();
        assert_eq!(
            shown,
            [
                ("force", "true", false),
                ("name", "web-1", false),
                ("value", "42", false)
            ]
        );
    }

    #[test]
    fn structured_arguments_are_pretty_printed_blocks() {
        let rows = arg_rows(&map(
            json!({"b_tags": ["a", "b"], "a_meta": {"k": 1}, "c_none": null}),
        ));
        assert_eq!(rows[1].value, "[\n  \"a\",\n  \"b\"\n]");
        assert!(rows[1].block);
        assert_eq!(rows[0].value, "{\n  \"k\": 1\n}");
        assert_eq!(rows[2].value, "null");
        assert!(!rows[2].block);
    }

    #[test]
    fn empty_containers_stay_short_and_multiline_text_is_a_block() {
        let rows = arg_rows(&map(json!({"a": [], "b": {}, "c": "x\ny"})));
        assert_eq!(rows[0].value, "[]");
        assert_eq!(rows[1].value, "{}");
        assert!(rows[2].block);
    }

    #[test]
    fn tool_output_is_pretty_printed_only_when_it_is_json() {
        assert_eq!(pretty_text(r#"{"a":1}"#), "{\n  \"a\": 1\n}");
        assert_eq!(pretty_text("[1]"), "[\n  1\n]");
        assert_eq!(pretty_text("Found 2 resources"), "Found 2 resources");
        assert_eq!(pretty_text("{not json"), "{not json");
    }

    #[test]
    fn summaries_are_one_line_and_shortened() {
        let args = map(json!({"name": "web-1", "value": 42}));
        assert_eq!(args_summary(&args, 80), "name: web-1, value: 42");
        assert_eq!(args_summary(&args, 10), "name: web…");
        assert_eq!(shorten("héllo", 5), "héllo");
    }
}
