//! Reading the agent's JSON with every struct read from an object only.
//!
//! serde's derived `Deserialize` for a struct takes it either as a JSON
//! object (`{"id": ...}`) or as an array of its fields in order
//! (`[...]`), and `serde_json` compiles both readers for every struct it
//! reads. The agent only ever writes objects, so the chat reads through
//! [`from_str`]: a thin layer over `serde_json`'s deserializer that asks
//! for a map wherever a struct is wanted. The array reader of each struct
//! is then never called, and so never compiled into the bundle: about
//! 38 KB of the .wasm, 10 KiB gzipped (web/README.md, "Bundle size").
//! An array where a struct belongs is an error naming the struct, as an
//! object with a missing field is.
//!
//! Everything else passes through unchanged: each layer below forwards
//! to `serde_json` and wraps only what hands out more to read (the
//! accesses of maps, sequences and enums, and the seeds given to them),
//! so nested structs are read the same way.

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// `T` read from `text`, its structs from objects only; trailing
/// characters other than whitespace are an error, as in
/// `serde_json::from_str`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let mut json = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Objects(&mut json))?;
    json.end()?;
    Ok(value)
}

/// A deserializer whose structs are read from maps.
struct Objects<D>(D);

/// A visitor whose nested reads go through [`Objects`] too.
struct Nested<V>(V);

/// A struct's visitor, offered a map only.
struct MapOnly<V>(V);

/// A seed (map key or value, sequence element, enum variant) read
/// through [`Objects`].
struct Seed<S>(S);

/// Map, sequence, enum and variant accesses whose seeds are [`Seed`]s.
struct Access<A>(A);

macro_rules! forward_nested {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(Nested(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Objects<D> {
    type Error = D::Error;

    forward_nested! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Nested(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Nested(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Nested(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Nested(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(MapOnly(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Nested(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_values {
    ($($method:ident($ty:ty))*) => {
        $(
            fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
                self.0.$method(value)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Nested<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.0.expecting(formatter)
    }

    forward_values! {
        visit_bool(bool) visit_i64(i64) visit_i128(i128) visit_u64(u64) visit_u128(u128)
        visit_f64(f64) visit_char(char) visit_str(&str) visit_borrowed_str(&'de str)
        visit_string(String) visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8])
        visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, value: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Objects(value))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, value: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Objects(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Access(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Access(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Access(data))
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for MapOnly<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.0.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Access(map))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Objects(deserializer))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Access<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Access<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Access<A> {
    type Error = A::Error;
    type Variant = Access<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Seed(seed))?;
        Ok((value, Access(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Access<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Nested(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        // serde_json reads a struct variant's fields from a map or an
        // array, like a struct's; only the map is offered.
        self.0.struct_variant(fields, MapOnly(visitor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asg_shared::rest::ConversationResponse;
    use asg_shared::{ApprovalState, Role, ToolCall, fixtures};
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Point {
        x: i32,
        label: Option<String>,
    }

    /// A conversation with a message calling a tool, a question on an
    /// approval and arguments of every JSON kind.
    fn full_response() -> ConversationResponse {
        let mut conversation = fixtures::conversation();
        let mut asking = fixtures::message(Role::Assistant, "checking");
        asking.tool_call = Some(Box::new(ToolCall {
            id: "call_1".into(),
            name: "resources_delete".into(),
            arguments: serde_json::from_str(r#"{"id": [1, 2.5, {"deep": null}], "ok": true}"#)
                .unwrap(),
            needs_approval: true,
            approval_uuid: Some(fixtures::uuid()),
            provider_signature: None,
        }));
        conversation.messages = vec![fixtures::message(Role::User, "hi").into(), asking.into()];
        let mut approval = fixtures::pending_approval("resources_delete");
        approval.state = ApprovalState::Executing;
        approval.approvers = vec!["ops".into()];
        approval.expires_at = Some(fixtures::at(60));
        conversation.pending_approvals = vec![approval];
        ConversationResponse {
            conversation,
            result: None,
        }
    }

    #[test]
    fn nested_structs_read_as_serde_json_reads_them() {
        let sent = full_response();
        let text = serde_json::to_string(&sent).unwrap();
        assert_eq!(from_str::<ConversationResponse>(&text).unwrap(), sent);
        let list = serde_json::to_string(&sent.conversation.pending_approvals).unwrap();
        assert_eq!(
            from_str::<Vec<asg_shared::PendingApproval>>(&list).unwrap(),
            sent.conversation.pending_approvals
        );
    }

    #[test]
    fn a_struct_written_as_an_array_is_refused_by_name() {
        assert!(serde_json::from_str::<Point>(r#"[1, null]"#).is_ok());
        let error = from_str::<Point>(r#"[1, null]"#).unwrap_err().to_string();
        assert!(error.contains("struct Point"), "{error}");
        let nested = from_str::<Vec<Option<Point>>>(r#"[{"x": 1}, [2, null]]"#).unwrap_err();
        assert!(nested.to_string().contains("struct Point"), "{nested}");
    }

    #[test]
    fn nesting_past_serde_jsons_limit_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let error = from_str::<serde_json::Value>(&deep).unwrap_err();
        assert!(error.to_string().contains("recursion limit"), "{error}");
        let objects = format!("{}1{}", r#"{"x":"#.repeat(100_000), "}".repeat(100_000));
        let error = from_str::<serde_json::Value>(&objects).unwrap_err();
        assert!(error.to_string().contains("recursion limit"), "{error}");
    }

    #[test]
    fn values_options_and_trailing_text_behave_as_in_serde_json() {
        let points: Vec<Option<Point>> =
            from_str(r#"[{"x": 1, "label": "a", "extra": [1, {"y": 2}]}, null]"#).unwrap();
        assert_eq!(
            points,
            vec![
                Some(Point {
                    x: 1,
                    label: Some("a".into())
                }),
                None
            ]
        );
        let value: serde_json::Value = from_str(r#"{"a": [1, 2.5, "x", null, true]}"#).unwrap();
        assert_eq!(value["a"][1], 2.5);
        assert!(from_str::<Point>(r#"{"x": 1} x"#).is_err());
        let missing = from_str::<Point>(r#"{"label": "no x"}"#).unwrap_err();
        assert!(
            missing.to_string().contains("missing field `x`"),
            "{missing}"
        );
    }
}
