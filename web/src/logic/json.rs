//! JSON found in tool results, tool arguments and answers: short values
//! stay on one line, longer ones become a collapsed, pretty-printed block
//! with a one-line summary, instead of a wall of escaped text.

use serde_json::Value;

use crate::logic::args::{pretty_json, shorten};

/// Longest JSON (compact, in characters) still shown on one line.
pub const INLINE_MAX: usize = 60;

/// Length of the preview in a collapsed block's summary.
const PREVIEW_MAX: usize = 60;

/// How a text or value is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// Not JSON (or a plain scalar): the text as is.
    Text(String),
    /// Short JSON, compact on one line.
    Inline(String),
    /// Longer JSON: a collapsed block.
    Collapsed {
        /// The one-line summary, e.g. `object · 2 keys · {"count":2,…`.
        summary: String,
        /// The whole value, pretty-printed.
        pretty: String,
    },
}

/// A text that may be JSON (a tool's output, an answer): an object or an
/// array is shown as JSON; anything else is [`Shown::Text`] unchanged.
pub fn show_text(text: &str) -> Shown {
    match parse_structured(text) {
        Some(value) => show_value(&value),
        None => Shown::Text(text.to_string()),
    }
}

/// A JSON value: objects and arrays inline or collapsed by size; a string
/// that itself holds an object or an array is shown as that JSON.
pub fn show_value(value: &Value) -> Shown {
    match value {
        Value::Object(_) | Value::Array(_) => {
            let compact = value.to_string();
            if compact.chars().count() <= INLINE_MAX {
                Shown::Inline(compact)
            } else {
                Shown::Collapsed {
                    summary: summary(value, &compact),
                    pretty: pretty_json(value),
                }
            }
        }
        Value::String(text) => show_text(text),
        other => Shown::Text(other.to_string()),
    }
}

/// `text` parsed when it is a JSON object or array (surrounding blanks
/// allowed); `None` otherwise.
pub fn parse_structured(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    let (first, last) = (trimmed.chars().next()?, trimmed.chars().last()?);
    if !matches!((first, last), ('{', '}') | ('[', ']')) {
        return None;
    }
    crate::logic::objects::from_str::<Value>(trimmed)
        .ok()
        .filter(|value| value.is_object() || value.is_array())
}

/// An answer that is prose followed by JSON (`Created the resource:
/// {"created": …}`): the prose, and the JSON shown as a block (short
/// ones inline). `None` when no object or array ends the text.
pub fn split_trailing_json(text: &str) -> Option<(String, Shown)> {
    let trimmed = text.trim_end();
    if !(trimmed.ends_with('}') || trimmed.ends_with(']')) {
        return None;
    }
    trimmed
        .char_indices()
        .filter(|(i, c)| matches!(c, '{' | '[') && *i > 0)
        .find_map(|(i, _)| {
            let value = parse_structured(&trimmed[i..])?;
            let prose = trimmed[..i].trim_end();
            (!prose.is_empty()).then(|| (prose.to_string(), show_value(&value)))
        })
}

/// What a collapsed block says: the kind, its size and the start of it.
fn summary(value: &Value, compact: &str) -> String {
    let size = match value {
        Value::Object(map) => format!("object · {} {}", map.len(), plural(map.len(), "key")),
        Value::Array(items) => format!("array · {} {}", items.len(), plural(items.len(), "item")),
        _ => "value".to_string(),
    };
    format!("{size} · {}", shorten(compact, PREVIEW_MAX))
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn long_list() -> String {
        json!({
            "count": 2,
            "resources": [
                {"id": "res_1", "name": "web-1", "value": 42},
                {"id": "res_2", "name": "web-2", "value": 7}
            ]
        })
        .to_string()
    }

    #[test]
    fn long_json_text_is_collapsed_and_pretty_printed() {
        let Shown::Collapsed { summary, pretty } = show_text(&long_list()) else {
            panic!("not collapsed");
        };
        assert!(
            summary.starts_with("object · 2 keys · {\"count\":2,"),
            "{summary}"
        );
        assert!(summary.ends_with('…'), "{summary}");
        assert!(pretty.contains("\n  \"resources\": [\n    {\n"), "{pretty}");
    }

    #[test]
    fn short_json_stays_inline_and_compact() {
        assert_eq!(
            show_text(" {\"id\": \"res_1\"}\n"),
            Shown::Inline("{\"id\":\"res_1\"}".into())
        );
        assert_eq!(show_text("[1, 2]"), Shown::Inline("[1,2]".into()));
    }

    #[test]
    fn text_that_is_not_structured_json_is_unchanged() {
        for text in [
            "Found 2 resources",
            "{not json",
            "42",
            "\"a string\"",
            "{\"a\":1} and more",
            "",
        ] {
            assert_eq!(show_text(text), Shown::Text(text.into()), "{text}");
        }
    }

    #[test]
    fn prose_that_ends_in_json_is_split_from_it() {
        let text = format!("Created the resource: {}", long_list());
        let Some((prose, Shown::Collapsed { pretty, .. })) = split_trailing_json(&text) else {
            panic!("not split: {text}");
        };
        assert_eq!(prose, "Created the resource:");
        assert!(pretty.contains("\"resources\": ["), "{pretty}");
        assert_eq!(
            split_trailing_json("Going on with: {\"a\": [1]}\n"),
            Some(("Going on with:".into(), Shown::Inline("{\"a\":[1]}".into())))
        );
        for text in ["plain", "{\"a\":1}", "a {broken}", "ends with ] only"] {
            assert_eq!(split_trailing_json(text), None, "{text}");
        }
    }

    #[test]
    fn values_and_json_inside_strings() {
        assert_eq!(show_value(&json!(42)), Shown::Text("42".into()));
        assert_eq!(show_value(&json!("web-1")), Shown::Text("web-1".into()));
        assert_eq!(
            show_value(&json!(["a", "b"])),
            Shown::Inline("[\"a\",\"b\"]".into())
        );
        let nested = Value::String(long_list());
        assert!(matches!(show_value(&nested), Shown::Collapsed { .. }));
        let Shown::Collapsed { summary, .. } = show_value(&json!(vec![0; 40])) else {
            panic!("not collapsed");
        };
        assert!(summary.starts_with("array · 40 items · [0,0,"), "{summary}");
        let one = json!({"only": "x".repeat(80)});
        let Shown::Collapsed { summary, .. } = show_value(&one) else {
            panic!("not collapsed");
        };
        assert!(summary.starts_with("object · 1 key · "), "{summary}");
    }
}
