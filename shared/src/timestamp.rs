//! Timestamps read as RFC 3339 (`2026-11-30T12:00:00.123Z`), what chrono
//! writes them as: chrono's own reader takes any of its formats through
//! its general parser, which is most of what chrono adds to the web
//! chat's bundle; `DateTime::parse_from_rfc3339` is its dedicated one.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::de::{Error, Visitor};
use serde::{Deserialize, Deserializer};

/// Reads a timestamp (`#[serde(deserialize_with = ...)]`).
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DateTime<Utc>, D::Error> {
    deserializer.deserialize_str(Rfc3339)
}

/// Reads an optional timestamp (`null`: `None`; with `#[serde(default)]`
/// for an absent one).
pub fn deserialize_option<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<DateTime<Utc>>, D::Error> {
    #[derive(Deserialize)]
    struct Timestamp(#[serde(deserialize_with = "deserialize")] DateTime<Utc>);
    Ok(Option::<Timestamp>::deserialize(deserializer)?.map(|Timestamp(time)| time))
}

struct Rfc3339;

impl<'de> Visitor<'de> for Rfc3339 {
    type Value = DateTime<Utc>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an RFC 3339 timestamp")
    }

    fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
        DateTime::parse_from_rfc3339(text)
            .map(|time| time.with_timezone(&Utc))
            .map_err(|error| E::custom(format!("{error}: {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct At {
        #[serde(deserialize_with = "deserialize")]
        at: DateTime<Utc>,
        #[serde(default, deserialize_with = "deserialize_option")]
        until: Option<DateTime<Utc>>,
    }

    fn read(json: &str) -> Result<At, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn what_chrono_writes_reads_back_exactly() {
        let time = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 1).unwrap()
            + chrono::TimeDelta::nanoseconds(123_456_789);
        let written = serde_json::to_string(&time).unwrap();
        let at = read(&format!(r#"{{"at": {written}, "until": {written}}}"#)).unwrap();
        assert_eq!(at.at, time);
        assert_eq!(at.until, Some(time));
    }

    #[test]
    fn offsets_become_utc_and_null_or_absent_is_none() {
        // As Go's encoding/json writes a time (the reference's files).
        let at = read(r#"{"at": "2026-11-30T13:00:00.5+01:00", "until": null}"#).unwrap();
        assert_eq!(
            at.at,
            Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap()
                + chrono::TimeDelta::milliseconds(500)
        );
        assert_eq!(at.until, None);
        assert_eq!(
            read(r#"{"at": "0001-01-01T00:00:00Z"}"#).unwrap().until,
            None
        );
    }

    #[test]
    fn a_bad_timestamp_is_refused_by_name() {
        for bad in [
            r#""yesterday""#,
            r#""2026-11-30""#,
            r#""2026-13-01T00:00:00Z""#,
            "17",
        ] {
            let error = read(&format!(r#"{{"at": {bad}}}"#))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("RFC 3339") || error.contains(bad.trim_matches('"')),
                "{bad}: {error}"
            );
        }
    }
}
