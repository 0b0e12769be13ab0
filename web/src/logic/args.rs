//! Readable tool arguments: a key/value table instead of one-line JSON,
//! with structured values shown as JSON ([`crate::logic::json`]).

use serde_json::{Map, Value};

use crate::logic::json::{Shown, show_value};

/// One row of an argument table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgRow {
    /// Argument name.
    pub key: String,
    /// The value as shown: strings without quotes, numbers and booleans
    /// as written, objects and arrays (and strings holding them) as JSON,
    /// on one line when short, else a collapsed pretty-printed block.
    pub value: Shown,
}

impl ArgRow {
    /// True when the value is text that spans several lines, so the view
    /// shows it as a block.
    pub fn is_multiline(&self) -> bool {
        matches!(&self.value, Shown::Text(text) if text.contains('\n'))
    }
}

/// The rows of an argument table, in the order of the map (sorted by
/// name unless serde_json keeps insertion order).
pub fn arg_rows(args: &Map<String, Value>) -> Vec<ArgRow> {
    args.iter()
        .map(|(key, value)| ArgRow {
            key: key.clone(),
            value: match value {
                Value::String(_) | Value::Object(_) | Value::Array(_) => show_value(value),
                _ => Shown::Text(display_value(value)),
            },
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

    fn text(value: &str) -> Shown {
        Shown::Text(value.to_string())
    }

    #[test]
    fn scalar_arguments_become_plain_rows_in_order() {
        let rows = arg_rows(&map(json!({"name": "web-1", "value": 42, "force": true})));
        let shown: Vec<_> = rows.iter().map(|r| (r.key.as_str(), &r.value)).collect();
        assert_eq!(
            shown,
            [
                ("force", &text("true")),
                ("name", &text("web-1")),
                ("value", &text("42"))
            ]
        );
        assert!(rows.iter().all(|r| !r.is_multiline()));
    }

    #[test]
    fn structured_arguments_are_json_inline_or_collapsed() {
        let rows = arg_rows(&map(json!({
            "b_tags": ["a", "b"],
            "a_meta": {"k": 1, "long": "x".repeat(70)},
            "c_none": null,
            "d_json_text": "{\"k\": [1, 2]}"
        })));
        assert_eq!(rows[1].value, Shown::Inline("[\"a\",\"b\"]".into()));
        let Shown::Collapsed { pretty, .. } = &rows[0].value else {
            panic!("not collapsed: {:?}", rows[0]);
        };
        assert!(pretty.starts_with("{\n  \"k\": 1,\n"), "{pretty}");
        assert_eq!(rows[2].value, text("null"));
        assert_eq!(rows[3].value, Shown::Inline("{\"k\":[1,2]}".into()));
    }

    #[test]
    fn empty_containers_stay_short_and_multiline_text_is_a_block() {
        let rows = arg_rows(&map(json!({"a": [], "b": {}, "c": "x\ny"})));
        assert_eq!(rows[0].value, Shown::Inline("[]".into()));
        assert_eq!(rows[1].value, Shown::Inline("{}".into()));
        assert!(rows[2].is_multiline());
        assert_eq!(display_value(&json!({})), "{}");
        assert_eq!(display_value(&json!([1])), "[\n  1\n]");
    }

    #[test]
    fn summaries_are_one_line_and_shortened() {
        let args = map(json!({"name": "web-1", "value": 42}));
        assert_eq!(args_summary(&args, 80), "name: web-1, value: 42");
        assert_eq!(args_summary(&args, 10), "name: web…");
        assert_eq!(shorten("héllo", 5), "héllo");
    }
}
