//! Tool schemas as each provider wants them: the conversion of an MCP tool's
//! JSON Schema to the OpenAPI 3.0 subset that Gemini's `parameters` accepts,
//! and the object-schema guarantee that Claude and OpenAI need.
//!
//! Gemini rejects a whole request with HTTP 400 when a single tool carries a
//! keyword it does not know, so the conversion keeps an allow-list of
//! keywords rather than a deny-list.

use serde_json::{Map, Value, json};

/// How deep `$ref`s are inlined; deeper (or cyclic) references are replaced
/// by a plain object so that a recursive schema cannot loop forever.
const MAX_REF_DEPTH: usize = 8;

/// Converts a JSON Schema to the subset Gemini's `parameters` accepts.
pub fn to_gemini_schema(schema: &Value) -> Value {
    convert(schema, schema, &mut Vec::new())
}

/// The `parameters` of a Gemini function declaration, or `None` when the
/// tool takes no arguments: Gemini answers 400 to an object schema with an
/// empty `properties`, so such a declaration must omit `parameters`.
pub fn gemini_parameters(schema: &Value) -> Option<Value> {
    let converted = to_gemini_schema(schema);
    let has_properties = converted
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    has_properties.then_some(converted)
}

/// The schema unchanged when it already describes an object, otherwise an
/// object schema: Claude and OpenAI insist on `"type": "object"` with
/// `properties` even when the MCP tool declared no arguments.
pub fn object_schema(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return json!({"type": "object", "properties": {}});
    };
    let mut map = map.clone();
    match map.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None if map.contains_key("properties") => {
            map.insert("type".into(), json!("object"));
        }
        _ => return json!({"type": "object", "properties": {}}),
    }
    if !map.get("properties").is_some_and(Value::is_object) {
        map.insert("properties".into(), json!({}));
    }
    Value::Object(map)
}

fn convert(node: &Value, root: &Value, refs: &mut Vec<String>) -> Value {
    let Some(map) = node.as_object() else {
        // `true` and other non-object schemas mean "anything"; Gemini has no
        // way to say that, so an unconstrained string is the closest.
        return json!({"type": "string"});
    };

    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        return inline_ref(reference, map, root, refs);
    }

    let mut out = Map::new();
    let mut nullable = map.get("nullable") == Some(&Value::Bool(true));

    add_type(&mut out, map.get("type"), &mut nullable);

    if let Some(description) = map.get("description").and_then(Value::as_str) {
        out.insert("description".into(), json!(description));
    }

    if let Some(values) = enum_values(map) {
        add_enum(&mut out, values, &mut nullable);
    }

    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        add_properties(&mut out, properties, map.get("required"), root, refs);
    }

    if let Some(items) = map.get("items") {
        out.insert("items".into(), convert(items, root, refs));
    }

    for key in ["minItems", "maxItems", "minimum", "maximum"] {
        if let Some(value) = map.get(key).filter(|v| v.is_number()) {
            out.insert(key.into(), value.clone());
        }
    }

    add_combinators(&mut out, map, root, refs, &mut nullable);

    infer_type(&mut out);
    add_format(&mut out, map.get("format").and_then(Value::as_str));
    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    Value::Object(out)
}

/// Copies `type`: `"null"` (alone or in a list) becomes `nullable`, one
/// remaining type stays a `type`, several become an `anyOf`.
fn add_type(out: &mut Map<String, Value>, kind: Option<&Value>, nullable: &mut bool) {
    match kind {
        Some(Value::String(t)) if t == "null" => *nullable = true,
        Some(Value::String(t)) => {
            out.insert("type".into(), json!(t));
        }
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            *nullable |= names.contains(&"null");
            let real: Vec<&str> = names.into_iter().filter(|t| *t != "null").collect();
            match real.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                many => {
                    let variants: Vec<Value> = many.iter().map(|t| json!({"type": t})).collect();
                    out.insert("anyOf".into(), Value::Array(variants));
                }
            }
        }
        _ => {}
    }
}

/// The allowed values: `enum`, or `const` as a one-value enum; both go
/// through the same filter in [`add_enum`].
fn enum_values(map: &Map<String, Value>) -> Option<Vec<Value>> {
    match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    }
}

/// Converts each property and keeps the `required` entries that name one.
fn add_properties(
    out: &mut Map<String, Value>,
    properties: &Map<String, Value>,
    required: Option<&Value>,
    root: &Value,
    refs: &mut Vec<String>,
) {
    let converted: Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| (name.clone(), convert(schema, root, refs)))
        .collect();
    // Gemini rejects a `required` entry that names no property.
    let required: Vec<Value> = required
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|name| name.as_str().is_some_and(|n| converted.contains_key(n)))
        .cloned()
        .collect();
    out.insert("properties".into(), Value::Object(converted));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
}

/// Folds `anyOf` (or `oneOf`) and `allOf` into the converted schema.
fn add_combinators(
    out: &mut Map<String, Value>,
    map: &Map<String, Value>,
    root: &Value,
    refs: &mut Vec<String>,
    nullable: &mut bool,
) {
    let variants = map
        .get("anyOf")
        .or_else(|| map.get("oneOf"))
        .and_then(Value::as_array);
    if let Some(variants) = variants {
        merge_variants(out, variants, root, refs, nullable);
    }
    if let Some(parts) = map.get("allOf").and_then(Value::as_array) {
        for part in parts {
            merge_missing(out, convert(part, root, refs));
        }
    }
}

/// Inlines a local `$ref` (`#/$defs/X`, `#/definitions/X`), keeping the
/// referring schema's own description, which is usually the more specific.
fn inline_ref(
    reference: &str,
    map: &Map<String, Value>,
    root: &Value,
    refs: &mut Vec<String>,
) -> Value {
    let target = reference
        .strip_prefix('#')
        .and_then(|pointer| root.pointer(pointer));
    let mut out = match target {
        Some(target) if refs.len() < MAX_REF_DEPTH && !refs.iter().any(|r| r == reference) => {
            refs.push(reference.to_string());
            let converted = convert(target, root, refs);
            refs.pop();
            converted
        }
        // A cycle or an unresolvable reference: nearly always a nested
        // object in practice, so say that much and nothing more.
        _ => json!({"type": "object"}),
    };
    if let (Some(description), Some(obj)) = (map.get("description"), out.as_object_mut()) {
        obj.insert("description".into(), description.clone());
    }
    out
}

/// Gemini only accepts string enums; for other types the allowed values go
/// into the description instead, so the model still learns them.
fn add_enum(out: &mut Map<String, Value>, values: Vec<Value>, nullable: &mut bool) {
    if values.iter().any(Value::is_null) {
        *nullable = true;
    }
    let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    if values.is_empty() {
        return;
    }
    let is_string = out.get("type").is_none_or(|t| t == "string");
    if is_string && values.iter().all(Value::is_string) {
        out.insert("type".into(), json!("string"));
        out.insert("enum".into(), Value::Array(values));
        return;
    }
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    let note = format!("Allowed values: {}.", listed.join(", "));
    let description = match out.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing} {note}"),
        _ => note,
    };
    out.insert("description".into(), json!(description));
}

/// `anyOf`/`oneOf`: a `null` variant becomes `nullable`, a single remaining
/// variant is merged into the parent, several stay an `anyOf`.
fn merge_variants(
    out: &mut Map<String, Value>,
    variants: &[Value],
    root: &Value,
    refs: &mut Vec<String>,
    nullable: &mut bool,
) {
    let mut kept = Vec::new();
    for variant in variants {
        if variant.get("type").and_then(Value::as_str) == Some("null") {
            *nullable = true;
            continue;
        }
        let mut converted = convert(variant, root, refs);
        if let Some(obj) = converted.as_object_mut()
            && obj.remove("nullable").is_some()
        {
            *nullable = true;
        }
        kept.push(converted);
    }
    match kept.len() {
        0 => {}
        1 => {
            if let Some(only) = kept.pop() {
                merge_missing(out, only);
            }
        }
        _ => {
            out.insert("anyOf".into(), Value::Array(kept));
        }
    }
}

/// Copies the keys of `from` that `out` lacks; `properties` and `required`
/// are unioned so that `allOf` of several objects keeps every field.
fn merge_missing(out: &mut Map<String, Value>, from: Value) {
    let Value::Object(from) = from else { return };
    for (key, value) in from {
        match (out.get_mut(&key), value) {
            (Some(Value::Object(mine)), Value::Object(theirs)) if key == "properties" => {
                for (name, schema) in theirs {
                    mine.entry(name).or_insert(schema);
                }
            }
            (Some(Value::Array(mine)), Value::Array(theirs)) if key == "required" => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (Some(_), _) => {}
            (None, value) => {
                out.insert(key, value);
            }
        }
    }
}

/// Gemini needs a `type` on most nodes and an `items` on every array; both
/// are inferred from the schema's shape when the tool left them out.
fn infer_type(out: &mut Map<String, Value>) {
    if !out.contains_key("type") && !out.contains_key("anyOf") {
        let inferred = if out.contains_key("properties") {
            Some("object")
        } else if out.contains_key("items") {
            Some("array")
        } else if out.contains_key("enum") {
            Some("string")
        } else {
            None
        };
        if let Some(t) = inferred {
            out.insert("type".into(), json!(t));
        }
    }
    if out.get("type").is_some_and(|t| t == "array") && !out.contains_key("items") {
        // An array of anything cannot be said; strings are the common case
        // (tags, paths, URLs) and Gemini answers 400 without `items`.
        out.insert("items".into(), json!({"type": "string"}));
    }
}

/// Keeps only the formats Gemini knows for the node's type.
fn add_format(out: &mut Map<String, Value>, format: Option<&str>) {
    let Some(format) = format else { return };
    let allowed: &[&str] = match out.get("type").and_then(Value::as_str) {
        Some("integer") => &["int32", "int64"],
        Some("number") => &["float", "double"],
        Some("string") => &["date-time", "enum"],
        _ => &[],
    };
    if allowed.contains(&format) {
        out.insert("format".into(), json!(format));
    }
}

#[cfg(test)]
mod tests;
