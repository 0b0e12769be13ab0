//! The countdown on an approval card whose approval expires
//! (`approval.expires_after`): "expires in 23 h 59 min", by the second
//! in its last two minutes, then "expired".

use std::time::Duration;

use chrono::{DateTime, Utc};

/// Below this many seconds left, the countdown shows (and ticks) seconds.
const SECONDS_SHOWN_BELOW: i64 = 120;

/// What the card shows about an approval's expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expiry {
    /// "expires in 1 h 5 min", "expires in 1 min 30 s", "expired".
    pub text: String,
    /// Less than two minutes left, or expired.
    pub urgent: bool,
    /// Past the deadline.
    pub expired: bool,
}

/// The countdown to `expires_at`, seen at `now`. Minutes are counted
/// down (59 min 59 s left reads "59 min"); days show from 48 hours on.
pub fn expiry(expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Expiry {
    let left = (expires_at - now).num_seconds();
    if left <= 0 {
        return Expiry {
            text: "expired".to_string(),
            urgent: true,
            expired: true,
        };
    }
    let (days, hours, minutes, seconds) =
        (left / 86_400, left / 3600 % 24, left / 60 % 60, left % 60);
    let span = if left < SECONDS_SHOWN_BELOW {
        match minutes {
            0 => format!("{seconds} s"),
            _ => format!("{minutes} min {seconds} s"),
        }
    } else if left >= 48 * 3600 {
        format!("{days} d {hours} h")
    } else if left >= 3600 {
        format!("{} h {minutes} min", left / 3600)
    } else {
        format!("{minutes} min")
    };
    Expiry {
        text: format!("expires in {span}"),
        urgent: left < SECONDS_SHOWN_BELOW,
        expired: false,
    }
}

/// How long until the countdown's text changes: the next second in the
/// last two minutes, else the next whole minute (or hour, with days
/// shown) counted down; `None` once expired.
pub fn next_tick(expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Option<Duration> {
    let left_ms = (expires_at - now).num_milliseconds();
    // Under a second left already reads "expired".
    if left_ms < 1000 {
        return None;
    }
    let step_ms = if left_ms <= SECONDS_SHOWN_BELOW * 1000 {
        1000
    } else if left_ms > 48 * 3_600_000 {
        3_600_000
    } else {
        60_000
    };
    // Until the time left drops below the next whole step (the minutes
    // mark includes the two-minute one), and a little past it.
    u64::try_from(left_ms % step_ms + 5)
        .ok()
        .map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::at;
    use chrono::TimeDelta;

    fn left(seconds: i64) -> String {
        expiry(at(seconds), at(0)).text
    }

    #[test]
    fn the_countdown_reads_naturally() {
        assert_eq!(left(24 * 3600 - 1), "expires in 23 h 59 min");
        assert_eq!(left(24 * 3600), "expires in 24 h 0 min");
        assert_eq!(left(3600), "expires in 1 h 0 min");
        assert_eq!(left(3599), "expires in 59 min");
        assert_eq!(left(120), "expires in 2 min");
        assert_eq!(left(119), "expires in 1 min 59 s");
        assert_eq!(left(60), "expires in 1 min 0 s");
        assert_eq!(left(45), "expires in 45 s");
        assert_eq!(left(1), "expires in 1 s");
        assert_eq!(left(3 * 86_400 + 5 * 3600 + 59), "expires in 3 d 5 h");
        assert_eq!(left(48 * 3600 - 60), "expires in 47 h 59 min");
    }

    #[test]
    fn past_the_deadline_it_is_expired_and_urgent() {
        for seconds in [0, -1, -86_400] {
            let shown = expiry(at(seconds), at(0));
            assert_eq!(shown.text, "expired");
            assert!(shown.expired && shown.urgent);
        }
        assert!(expiry(at(119), at(0)).urgent);
        assert!(!expiry(at(120), at(0)).urgent);
        assert!(!expiry(at(120), at(0)).expired);
    }

    #[test]
    fn it_ticks_when_the_text_would_change() {
        let now = at(0);
        let tick = |left: TimeDelta| next_tick(now + left, now).map(|d| d.as_millis());
        // 1 h 0 min 30 s left: "1 h 0 min" until 30 s from now.
        assert_eq!(tick(TimeDelta::seconds(3630)), Some(30_005));
        // Exactly on a minute: "10 min" turns "9 min" right after.
        assert_eq!(tick(TimeDelta::seconds(600)), Some(5));
        // 2 min 20 s left: at the two-minute mark, seconds begin.
        assert_eq!(tick(TimeDelta::seconds(140)), Some(20_005));
        // In the last two minutes, every second.
        assert_eq!(tick(TimeDelta::seconds(90)), Some(5));
        assert_eq!(tick(TimeDelta::milliseconds(89_999)), Some(1_004));
        assert_eq!(tick(TimeDelta::milliseconds(90_400)), Some(405));
        // Days shown: the next hour.
        assert_eq!(tick(TimeDelta::seconds(3 * 86_400 + 1800)), Some(1_800_005));
        assert_eq!(tick(TimeDelta::milliseconds(1500)), Some(505));
        assert_eq!(tick(TimeDelta::milliseconds(999)), None, "reads expired");
        assert_eq!(tick(TimeDelta::zero()), None);
        assert_eq!(tick(TimeDelta::seconds(-5)), None);
    }

    #[test]
    fn the_text_changes_after_each_tick() {
        let expires = at(3 * 86_400 + 7);
        let mut now = at(0);
        let mut text = expiry(expires, now).text;
        let mut ticks = 0;
        while let Some(wait) = next_tick(expires, now) {
            now += TimeDelta::milliseconds(wait.as_millis() as i64);
            let next = expiry(expires, now).text;
            assert_ne!(next, text, "a tick with no change at {now}");
            text = next;
            ticks += 1;
            assert!(ticks < 5000, "too many ticks");
        }
        assert_eq!(text, "expired");
        // 25 hours down to 47 h 59 min, minutes down to 1 min 59 s, then
        // each second to "expired": no tick wasted.
        assert_eq!(ticks, 25 + (48 * 60 - 2) + 119);
    }
}
