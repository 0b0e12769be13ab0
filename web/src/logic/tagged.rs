//! Reading the live events' JSON (`{"type": "...", ...}`, the internally
//! tagged enums of `asg_shared::events`) in two passes: the `type` first,
//! then the variant's fields straight from the same text.
//!
//! serde's derived `Deserialize` for an internally tagged enum buffers the
//! whole object into a generic content tree and reads the variant from
//! that, which compiles every nested type's deserializer (conversation,
//! message, approval, ...) a second time. Here every type is read only by
//! `serde_json`'s own deserializer, the one the REST answers use too: the
//! largest single saving in the wasm bundle (web/README.md, "Bundle size").

use serde::Deserialize;
use serde::de::{DeserializeOwned, Error as _};

use crate::logic::objects;

/// The tag of an event; the other fields are skipped.
#[derive(Deserialize)]
struct Tag {
    #[serde(rename = "type")]
    kind: String,
}

/// The `type` of the event in `data`.
pub fn tag(data: &str) -> Result<String, serde_json::Error> {
    objects::from_str::<Tag>(data).map(|tag| tag.kind)
}

/// The variant's fields, read from the whole event (`type` is ignored).
pub fn fields<T: DeserializeOwned>(data: &str) -> Result<T, serde_json::Error> {
    objects::from_str(data)
}

/// The error for a `type` that is none of `expected`.
pub fn unknown(kind: &str, expected: &'static [&'static str]) -> serde_json::Error {
    serde_json::Error::unknown_variant(kind, expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_is_read_whatever_comes_around_it() {
        let data = r#"{"message":{"a":[1,{"type":"inner"}]},"type":"message","x":null}"#;
        assert_eq!(tag(data).unwrap(), "message");
        assert!(tag(r#"{"message":{}}"#).is_err());
        assert!(tag("nope").is_err());
    }

    #[test]
    fn an_unknown_type_names_the_expected_ones() {
        let error = unknown("party", &["snapshot", "status"]).to_string();
        assert!(
            error.contains("party") && error.contains("snapshot"),
            "{error}"
        );
    }
}
