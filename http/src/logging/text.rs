//! The text format: tracing-subscriber's own full format for every
//! line, and the same line written directly for the one line a request
//! logs ([`REQUEST_TARGET`]).
//!
//! Under a cached `GET` load the default formatter was about a tenth of
//! the agent's CPU: the timestamp's calendar arithmetic and a dozen
//! `write!` calls for it, and every field name passed through the
//! (disabled) ANSI styling. Here a request line's timestamp reuses the
//! second's formatted prefix (`thread_local`) and its fields are written
//! as `name=value` straight away. The bytes are the default format's
//! (`tests` compares the two); a request line inside a span shown in
//! text lines, or with ANSI colours on, is left to the default.

use std::cell::RefCell;
use std::fmt::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::REQUEST_TARGET;

/// The text lines' format (see the module).
#[derive(Default)]
pub(super) struct TextLines {
    full: Format<Full>,
}

impl<S, N> FormatEvent<S, N> for TextLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let in_shown_span = || {
            ctx.event_scope()
                .is_some_and(|mut spans| spans.next().is_some())
        };
        if meta.target() != REQUEST_TARGET || writer.has_ansi_escapes() || in_shown_span() {
            return self.full.format_event(ctx, writer, event);
        }
        write_timestamp(&mut writer, SystemTime::now())?;
        write!(writer, "{:>5} {}: ", meta.level().as_str(), meta.target())?;
        let mut fields = PlainFields {
            sanitize: writer.sanitizes_ansi_escapes(),
            writer: &mut writer,
            first: true,
            result: Ok(()),
        };
        event.record(&mut fields);
        fields.result?;
        writeln!(writer)
    }
}

thread_local! {
    /// The last second formatted on this thread: its Unix time and
    /// `YYYY-MM-DDTHH:MM:SS.`.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// `now` as tracing-subscriber writes it (RFC 3339, microseconds, `Z`),
/// then a space.
fn write_timestamp(writer: &mut impl Write, now: SystemTime) -> fmt::Result {
    let Ok(since) = now.duration_since(UNIX_EPOCH) else {
        return writer.write_str("<unknown time> ");
    };
    let secs = since.as_secs();
    SECOND.with_borrow_mut(|(second, prefix)| {
        if *second != secs {
            prefix.clear();
            let Some(time) = i64::try_from(secs)
                .ok()
                .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            else {
                return writer.write_str("<unknown time> ");
            };
            write!(prefix, "{}.", time.format("%Y-%m-%dT%H:%M:%S"))?;
            *second = secs;
        }
        writer.write_str(prefix)?;
        let mut micros = *b"000000Z ";
        let mut rest = since.subsec_micros();
        for digit in micros[..6].iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        // Only ASCII digits and "Z ".
        writer.write_str(std::str::from_utf8(&micros).map_err(|_| fmt::Error)?)
    })
}

/// An event's fields as the default format writes them: the message
/// first as it is, then ` name=value` with each value's `Debug`.
struct PlainFields<'a, W> {
    /// Whether a message's terminal controls are escaped.
    sanitize: bool,
    writer: &'a mut W,
    first: bool,
    result: fmt::Result,
}

impl<W: Write> Visit for PlainFields<'_, W> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.record_debug(field, &format_args!("{value}"))
        } else {
            self.record_debug(field, &value)
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let name = field.name();
        if self.result.is_err() || name.starts_with("log.") {
            return;
        }
        if !std::mem::take(&mut self.first) {
            self.result = self.writer.write_char(' ');
        }
        self.result = self.result.and_then(|()| match name {
            "message" if self.sanitize => write!(Escaping(&mut *self.writer), "{value:?}"),
            "message" => write!(self.writer, "{value:?}"),
            name => {
                let name = name.strip_prefix("r#").unwrap_or(name);
                write!(self.writer, "{name}={value:?}")
            }
        });
    }
}

/// Writes through, escaping what could drive a terminal (as the
/// default format does for a message): ESC, BEL, BS, FF, DEL and the
/// C1 controls.
struct Escaping<'a, W>(&'a mut W);

impl<W: Write> Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for ch in s.chars() {
            match ch {
                '\x1b' => self.0.write_str("\\x1b")?,
                '\x07' => self.0.write_str("\\x07")?,
                '\x08' => self.0.write_str("\\x08")?,
                '\x0c' => self.0.write_str("\\x0c")?,
                '\x7f' => self.0.write_str("\\x7f")?,
                '\u{80}'..='\u{9f}' => write!(self.0, "\\u{{{:x}}}", ch as u32)?,
                ch => self.0.write_char(ch)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
