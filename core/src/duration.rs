//! Durations in the configuration: a whole number and a unit, `90s`,
//! `30m`, `24h`, `7d` (strict: no spaces inside, no fractions, no
//! compound forms, at least one second, at most 365 days).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Longest duration accepted.
const MAX_SECS: u64 = 365 * 86_400;

/// A duration written as `<number><s|m|h|d>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigDuration(Duration);

impl ConfigDuration {
    /// Parses `90s`, `30m`, `24h`, `7d`; the error says what is expected.
    pub fn parse(text: &str) -> Result<ConfigDuration, String> {
        let bad = || {
            format!(
                "invalid duration {text:?}: expected a whole number and a unit (s, m, h or d), \
                 e.g. 90s, 30m, 24h, 7d"
            )
        };
        let text = text.trim();
        let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let (number, unit) = text.split_at(split);
        if number.is_empty() {
            return Err(bad());
        }
        let unit_secs = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3_600,
            "d" => 86_400,
            _ => return Err(bad()),
        };
        let secs = number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(unit_secs))
            .filter(|secs| *secs <= MAX_SECS)
            .ok_or_else(|| format!("duration {text:?} is too long; at most 365d"))?;
        if secs == 0 {
            return Err(format!("duration {text:?} must be at least 1s"));
        }
        Ok(ConfigDuration(Duration::from_secs(secs)))
    }

    /// From whole seconds (tests, defaults).
    pub fn from_secs(secs: u64) -> ConfigDuration {
        ConfigDuration(Duration::from_secs(secs))
    }

    /// The duration.
    pub fn get(self) -> Duration {
        self.0
    }
}

/// Whole seconds in the largest unit that divides them: `90s`, `30m`,
/// `24h`, `7d`.
pub fn format_secs(secs: u64) -> String {
    match secs {
        0 => "0s".to_string(),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

impl fmt::Display for ConfigDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_secs(self.0.as_secs()))
    }
}

impl<'de> Deserialize<'de> for ConfigDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ConfigDuration::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_with_a_unit_parse() {
        for (text, secs) in [
            ("90s", 90),
            ("30m", 1_800),
            ("24h", 86_400),
            ("7d", 604_800),
            (" 2s ", 2),
            ("365d", MAX_SECS),
        ] {
            assert_eq!(ConfigDuration::parse(text).unwrap().get().as_secs(), secs);
        }
    }

    #[test]
    fn anything_else_is_refused_with_the_expected_form() {
        for text in [
            "", "24", "h", "24 h", "1.5h", "-1h", "1h30m", "24H", "1w", "1 day", "soon", "+5s",
        ] {
            let error = ConfigDuration::parse(text).unwrap_err();
            assert!(
                error.contains("e.g. 90s, 30m, 24h, 7d"),
                "{text:?}: {error}"
            );
        }
        assert!(
            ConfigDuration::parse("0s")
                .unwrap_err()
                .contains("at least 1s")
        );
        assert!(
            ConfigDuration::parse("366d")
                .unwrap_err()
                .contains("at most 365d")
        );
        let huge = format!("{}d", u64::MAX);
        assert!(
            ConfigDuration::parse(&huge)
                .unwrap_err()
                .contains("at most")
        );
    }

    #[test]
    fn durations_show_in_the_largest_exact_unit() {
        assert_eq!(ConfigDuration::parse("90s").unwrap().to_string(), "90s");
        assert_eq!(ConfigDuration::parse("120s").unwrap().to_string(), "2m");
        assert_eq!(ConfigDuration::parse("1440m").unwrap().to_string(), "1d");
        assert_eq!(format_secs(5_400), "90m");
        assert_eq!(format_secs(0), "0s");
    }
}
