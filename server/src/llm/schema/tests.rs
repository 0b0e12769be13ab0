//! Unit tests of the schema conversion: one keyword family per test.

use serde_json::json;

use super::*;

#[test]
fn drops_keywords_gemini_does_not_know() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Args",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "name": {"type": "string", "title": "Name", "default": "x", "examples": ["a"]}
        },
        "required": ["name"]
    });
    assert_eq!(
        to_gemini_schema(&schema),
        json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        })
    );
}

#[test]
fn keeps_the_supported_subset() {
    let schema = json!({
        "type": "array",
        "description": "ids",
        "minItems": 1,
        "maxItems": 5,
        "items": {"type": "integer", "format": "int64", "minimum": 0, "maximum": 9}
    });
    assert_eq!(to_gemini_schema(&schema), schema);
}

#[test]
fn type_with_null_becomes_nullable() {
    let schema = json!({"type": ["string", "null"], "description": "d"});
    assert_eq!(
        to_gemini_schema(&schema),
        json!({"type": "string", "description": "d", "nullable": true})
    );
}

#[test]
fn several_types_become_any_of() {
    let schema = json!({"type": ["string", "integer"]});
    assert_eq!(
        to_gemini_schema(&schema),
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
}

#[test]
fn const_becomes_a_single_value_enum() {
    assert_eq!(
        to_gemini_schema(&json!({"const": "fixed"})),
        json!({"type": "string", "enum": ["fixed"]})
    );
}

#[test]
fn non_string_enum_moves_into_the_description() {
    let schema = json!({"type": "integer", "enum": [1, 2], "description": "Level."});
    assert_eq!(
        to_gemini_schema(&schema),
        json!({"type": "integer", "description": "Level. Allowed values: 1, 2."})
    );
}

#[test]
fn integer_formats_other_than_int32_int64_are_dropped() {
    assert_eq!(
        to_gemini_schema(&json!({"type": "integer", "format": "uint32"})),
        json!({"type": "integer"})
    );
    assert_eq!(
        to_gemini_schema(&json!({"type": "integer", "format": "int32"})),
        json!({"type": "integer", "format": "int32"})
    );
    assert_eq!(
        to_gemini_schema(&json!({"type": "string", "format": "uri"})),
        json!({"type": "string"})
    );
}

#[test]
fn refs_are_inlined() {
    let schema = json!({
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "properties": {"p": {"$ref": "#/$defs/Point", "description": "where"}}
    });
    assert_eq!(
        to_gemini_schema(&schema),
        json!({
            "type": "object",
            "properties": {"p": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "description": "where"
            }}
        })
    );
}

#[test]
fn recursive_and_unresolvable_refs_are_dropped() {
    let schema = json!({
        "type": "object",
        "definitions": {"Node": {
            "type": "object",
            "properties": {"child": {"$ref": "#/definitions/Node"}}
        }},
        "properties": {
            "tree": {"$ref": "#/definitions/Node"},
            "other": {"$ref": "https://example.com/schema.json"}
        }
    });
    assert_eq!(
        to_gemini_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "tree": {"type": "object", "properties": {"child": {"type": "object"}}},
                "other": {"type": "object"}
            }
        })
    );
}

#[test]
fn any_of_with_null_collapses() {
    let schema = json!({"anyOf": [{"type": "string"}, {"type": "null"}], "description": "d"});
    assert_eq!(
        to_gemini_schema(&schema),
        json!({"description": "d", "type": "string", "nullable": true})
    );
    let schema = json!({"oneOf": [{"type": "string"}, {"type": "number"}]});
    assert_eq!(
        to_gemini_schema(&schema),
        json!({"anyOf": [{"type": "string"}, {"type": "number"}]})
    );
}

#[test]
fn all_of_objects_are_merged() {
    let schema = json!({"allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"properties": {"b": {"type": "number"}}, "required": ["b"]}
    ]});
    assert_eq!(
        to_gemini_schema(&schema),
        json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        })
    );
}

#[test]
fn required_names_only_declared_properties() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost"]});
    assert_eq!(to_gemini_schema(&schema)["required"], json!(["a"]));
}

#[test]
fn missing_types_and_items_are_inferred() {
    assert_eq!(
        to_gemini_schema(&json!({"properties": {"t": {"type": "array"}}})),
        json!({
            "type": "object",
            "properties": {"t": {"type": "array", "items": {"type": "string"}}}
        })
    );
    assert_eq!(
        to_gemini_schema(&json!({"enum": ["a", "b"]})),
        json!({"type": "string", "enum": ["a", "b"]})
    );
}

#[test]
fn parameters_are_omitted_for_tools_without_properties() {
    assert_eq!(gemini_parameters(&json!({"type": "object"})), None);
    assert_eq!(
        gemini_parameters(&json!({"type": "object", "properties": {}})),
        None
    );
    assert_eq!(
        gemini_parameters(&json!({"type": "object", "properties": {"a": {"type": "string"}}})),
        Some(json!({"type": "object", "properties": {"a": {"type": "string"}}}))
    );
}

#[test]
fn object_schema_is_guaranteed() {
    assert_eq!(
        object_schema(&json!(null)),
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        object_schema(&json!({"type": "object"})),
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        object_schema(&json!({"properties": {"a": {"type": "string"}}})),
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    );
    let kept =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    assert_eq!(object_schema(&kept), kept);
}
