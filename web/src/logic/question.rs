//! A question's form, as plain data: the fields a flat JSON schema asks
//! for (text, number, integer, boolean, enum), and the answer the typed
//! values make (each value converted to its field's type; an empty
//! optional field left out). The agent checks the answer again; this
//! only catches what the person can fix before sending.

use std::collections::BTreeMap;

use asg_shared::Question;
use serde_json::{Map, Value};

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Free text.
    Text,
    /// A number (`integer`: whole numbers only).
    Number {
        /// Whole numbers only.
        integer: bool,
    },
    /// Yes or no (a checkbox).
    Boolean,
    /// One of these (buttons).
    Choice(Vec<String>),
}

/// One field of a question's form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property's name (the answer's key).
    pub name: String,
    /// What the person reads: the property's `title`, else its name.
    pub label: String,
    /// The property's `description`.
    pub hint: Option<String>,
    /// What it takes.
    pub kind: FieldKind,
    /// It must be given.
    pub required: bool,
}

/// How a question is answered in the chat.
#[derive(Debug, Clone, PartialEq)]
pub enum Form {
    /// One button per choice.
    Choices(Vec<String>),
    /// A form of fields (a schema).
    Fields(Vec<Field>),
    /// A link the person opens, then "Done".
    Url(String),
    /// One line of text.
    Text,
}

/// The form of `question`.
pub fn form(question: &Question) -> Form {
    if let Some(url) = &question.url {
        return Form::Url(url.clone());
    }
    if !question.choices.is_empty() {
        return Form::Choices(question.choices.clone());
    }
    match &question.schema {
        Some(schema) => Form::Fields(fields(schema)),
        None => Form::Text,
    }
}

/// The fields of a flat object schema, in the schema's order.
pub fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| Field {
            name: name.clone(),
            label: property["title"].as_str().unwrap_or(name).to_string(),
            hint: property["description"].as_str().map(str::to_string),
            kind: kind(property),
            required: required.contains(&name.as_str()),
        })
        .collect()
}

fn kind(property: &Value) -> FieldKind {
    if let Some(options) = property["enum"].as_array() {
        return FieldKind::Choice(
            options
                .iter()
                .filter_map(|o| o.as_str().map(str::to_string))
                .collect(),
        );
    }
    match property["type"].as_str() {
        Some("integer") => FieldKind::Number { integer: true },
        Some("number") => FieldKind::Number { integer: false },
        Some("boolean") => FieldKind::Boolean,
        _ => FieldKind::Text,
    }
}

/// The answer object the typed `values` make (by field name; a boolean
/// is `"true"` or `"false"`), or what to fix, naming the field.
pub fn answer(fields: &[Field], values: &BTreeMap<String, String>) -> Result<Value, String> {
    let mut answer = Map::new();
    for field in fields {
        let text = values
            .get(&field.name)
            .map(|v| v.trim())
            .unwrap_or_default();
        if text.is_empty() && field.kind != FieldKind::Boolean {
            if field.required {
                return Err(format!("{} is required", field.label));
            }
            continue;
        }
        let value = match &field.kind {
            FieldKind::Text | FieldKind::Choice(_) => Value::from(text),
            FieldKind::Boolean => Value::Bool(text == "true"),
            FieldKind::Number { integer: true } => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{} must be a whole number", field.label))?,
            // serde_json's own number reader: no second float parser in
            // the bundle.
            FieldKind::Number { integer: false } => crate::logic::objects::from_str::<Value>(text)
                .ok()
                .filter(Value::is_number)
                .ok_or_else(|| format!("{} must be a number", field.label))?,
        };
        answer.insert(field.name.clone(), value);
    }
    Ok(Value::Object(answer))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question(extra: Value) -> Question {
        let mut base = json!({"text": "Which?"});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "title": "Replicas"},
            "ratio": {"type": "number"},
            "environment": {"type": "string", "enum": ["staging", "prod"]},
            "confirm": {"type": "boolean", "description": "Really?"},
            "note": {"type": "string"}},
            "required": ["replicas", "environment"]})
    }

    #[test]
    fn each_question_gets_its_form() {
        assert_eq!(form(&question(json!({}))), Form::Text);
        assert_eq!(
            form(&question(json!({"choices": ["a", "b"]}))),
            Form::Choices(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            form(&question(json!({"url": "https://x.test/c"}))),
            Form::Url("https://x.test/c".into())
        );
        let Form::Fields(fields) = form(&question(json!({"schema": schema()}))) else {
            panic!("a form of fields")
        };
        let kinds: Vec<(&str, &FieldKind, bool)> = fields
            .iter()
            .map(|f| (f.label.as_str(), &f.kind, f.required))
            .collect();
        assert_eq!(
            kinds,
            [
                ("confirm", &FieldKind::Boolean, false),
                (
                    "environment",
                    &FieldKind::Choice(vec!["staging".into(), "prod".into()]),
                    true
                ),
                ("note", &FieldKind::Text, false),
                ("ratio", &FieldKind::Number { integer: false }, false),
                ("Replicas", &FieldKind::Number { integer: true }, true),
            ]
        );
        assert_eq!(fields[0].hint.as_deref(), Some("Really?"));
    }

    #[test]
    fn typed_values_become_the_answer_or_say_what_to_fix() {
        let fields = fields(&schema());
        let values = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        let good = values(&[
            ("replicas", " 3 "),
            ("ratio", "0.5"),
            ("environment", "prod"),
            ("confirm", "true"),
        ]);
        assert_eq!(
            answer(&fields, &good),
            Ok(json!({"replicas": 3, "ratio": 0.5, "environment": "prod", "confirm": true}))
        );
        let table = [
            (values(&[("environment", "prod")]), "Replicas is required"),
            (
                values(&[("replicas", "two"), ("environment", "prod")]),
                "Replicas must be a whole number",
            ),
            (
                values(&[("replicas", "2"), ("environment", "prod"), ("ratio", "x")]),
                "ratio must be a number",
            ),
        ];
        for (typed, expected) in table {
            assert_eq!(answer(&fields, &typed), Err(expected.to_string()));
        }
        let unchecked = values(&[("replicas", "1"), ("environment", "staging")]);
        assert_eq!(
            answer(&fields, &unchecked).unwrap()["confirm"],
            json!(false),
            "an unticked box is false"
        );
    }
}
