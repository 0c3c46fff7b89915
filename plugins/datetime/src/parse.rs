//! Reading time zones, timestamps and durations from what a model writes.

use jiff::civil::DateTime;
use jiff::fmt::temporal::{Pieces, PiecesOffset};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, Zoned};
use quiver_sdk::ToolError;

/// The time zone named `name`: an IANA name (`Europe/Paris`), `UTC`, or a fixed offset
/// (`+05:30`, `-08`).
pub fn time_zone(name: &str) -> Result<TimeZone, ToolError> {
    let name = name.trim();
    if name.eq_ignore_ascii_case("utc") || name.eq_ignore_ascii_case("z") {
        return Ok(TimeZone::UTC);
    }
    if name.starts_with(['+', '-']) {
        // An offset alone, parsed by jiff's RFC 3339 machinery.
        let text = format!("1970-01-01T00:00:00{name}");
        if let Ok(pieces) = Pieces::parse(text.as_str())
            && let Some(PiecesOffset::Numeric(n)) = pieces.offset()
        {
            return Ok(TimeZone::fixed(n.offset()));
        }
        return Err(ToolError::invalid_input(format!(
            "`{name}` is not a UTC offset; write it like `+05:30` or `-08:00`"
        )));
    }
    TimeZone::get(name).map_err(|e| {
        ToolError::invalid_input(format!(
            "unknown time zone `{name}` ({e}); use an IANA name such as `America/New_York`, `UTC` or an offset like `+02:00`"
        ))
    })
}

/// The current time in whole seconds: sub-second digits are noise for a model.
pub fn now() -> Timestamp {
    let now = Timestamp::now();
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// Why a timestamp could not be read, with the forms that are accepted.
fn unreadable(text: &str) -> ToolError {
    ToolError::invalid_input(format!(
        "cannot read `{text}` as a timestamp; use ISO 8601 such as `2024-06-01T14:30:00Z`, \
         `2024-06-01T14:30:00+02:00`, `2024-06-01 14:30` (local to the time zone), \
         `2024-06-01T14:30:00+02:00[Europe/Paris]`, RFC 2822, Unix seconds, `now` or `today`"
    ))
}

/// Read `text` as a moment.
///
/// A timestamp that names its zone (`[Europe/Paris]`) or offset keeps it, unless `zone` is
/// given, in which case it is converted to `zone`. A timestamp without either is a local
/// time in `zone` (UTC by default). `now` and `today` (midnight) are in `zone`.
pub fn moment(text: &str, zone: Option<&TimeZone>) -> Result<Zoned, ToolError> {
    let text = text.trim();
    let convert = |z: Zoned| match zone {
        Some(tz) => z.with_time_zone(tz.clone()),
        None => z,
    };
    let local_zone = || zone.cloned().unwrap_or(TimeZone::UTC);
    let local = |dt: DateTime| dt.to_zoned(local_zone()).map_err(|e| ToolError::invalid_input(e.to_string()));

    match text.to_ascii_lowercase().as_str() {
        "now" => return Ok(now().to_zoned(local_zone())),
        "today" => return now().to_zoned(local_zone()).start_of_day().map_err(ToolError::failed),
        _ => {}
    }
    if let Ok(seconds) = text.parse::<i64>() {
        let ts = Timestamp::from_second(seconds).map_err(|e| ToolError::invalid_input(format!("`{text}`: {e}")))?;
        return Ok(ts.to_zoned(local_zone()));
    }
    if let Ok(zoned) = text.parse::<Zoned>() {
        return Ok(convert(zoned));
    }
    if let Ok(ts) = text.parse::<Timestamp>() {
        // Keep the offset that was written, e.g. `+02:00`, when no zone is asked for.
        let written = match Pieces::parse(text).ok().and_then(|p| p.offset()) {
            Some(PiecesOffset::Numeric(n)) if zone.is_none() => TimeZone::fixed(n.offset()),
            _ => local_zone(),
        };
        return Ok(ts.to_zoned(written));
    }
    if let Ok(dt) = text.parse::<DateTime>() {
        return local(dt);
    }
    if let Ok(zoned) = jiff::fmt::rfc2822::parse(text) {
        return Ok(convert(zoned));
    }
    Err(unreadable(text))
}

/// Read `text` with a strptime-style `format`, then as [`moment`] does with zones.
pub fn moment_with_format(text: &str, format: &str, zone: Option<&TimeZone>) -> Result<Zoned, ToolError> {
    let tm = jiff::fmt::strtime::parse(format, text)
        .map_err(|e| ToolError::invalid_input(format!("`{text}` does not match the format `{format}`: {e}")))?;
    let bad = |e: jiff::Error| ToolError::invalid_input(format!("`{text}` with format `{format}`: {e}"));
    if tm.offset().is_some() || tm.iana_time_zone().is_some() || tm.timestamp().is_some() {
        let zoned = tm.to_zoned().map_err(bad)?;
        let unnamed = tm.offset().is_none() && tm.iana_time_zone().is_none();
        return Ok(match zone {
            Some(tz) => zoned.with_time_zone(tz.clone()),
            None if unnamed => zoned.with_time_zone(TimeZone::UTC),
            None => zoned,
        });
    }
    let dt = tm.to_datetime().map_err(bad)?;
    dt.to_zoned(zone.cloned().unwrap_or(TimeZone::UTC)).map_err(bad)
}

/// Read a duration: friendly (`2 days 3 hours`, `1h30m`, `-1 week`, `3 days ago`) or
/// ISO 8601 (`P1DT2H`, `-PT90M`).
pub fn duration(text: &str) -> Result<Span, ToolError> {
    text.trim().parse::<Span>().map_err(|e| {
        ToolError::invalid_input(format!(
            "cannot read `{text}` as a duration ({e}); write it like `2 days 3 hours`, `1h 30m`, \
             `-1 week` or ISO 8601 `P1DT2H`"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tz(name: &str) -> TimeZone {
        time_zone(name).unwrap()
    }

    #[test]
    fn reads_timestamps() {
        let m = moment("2024-06-01T12:00:00Z", None).unwrap();
        assert_eq!(m.to_string(), "2024-06-01T12:00:00+00:00[UTC]");
        let m = moment("2024-06-01T12:00:00+02:00", None).unwrap();
        assert_eq!(m.offset().seconds(), 7200);
        let m = moment("2024-06-01 12:00", Some(&tz("America/New_York"))).unwrap();
        assert_eq!(m.timestamp().to_string(), "2024-06-01T16:00:00Z");
        let m = moment("2024-06-01T12:00:00Z", Some(&tz("Asia/Kolkata"))).unwrap();
        assert_eq!(m.datetime().to_string(), "2024-06-01T17:30:00");
        let m = moment("Sat, 1 Jun 2024 12:00:00 +0000", None).unwrap();
        assert_eq!(m.timestamp().as_second(), 1_717_243_200);
        assert_eq!(moment("1717243200", None).unwrap().timestamp().as_second(), 1_717_243_200);
        assert!(moment("next tuesday", None).is_err());
    }

    #[test]
    fn reads_zones_and_offsets() {
        assert_eq!(tz("+05:30").to_fixed_offset().unwrap().seconds(), 19800);
        assert!(time_zone("Mars/Olympus").is_err());
        assert!(time_zone("+5 hours").is_err());
    }

    #[test]
    fn reads_durations() {
        assert_eq!(duration("2 days 3 hours").unwrap().fieldwise(), Span::new().days(2).hours(3).fieldwise());
        assert_eq!(duration("P1DT2H").unwrap().fieldwise(), Span::new().days(1).hours(2).fieldwise());
        assert!(duration("soon").is_err());
    }

    #[test]
    fn reads_with_format() {
        let m = moment_with_format("06/01/2024 3:05 PM", "%m/%d/%Y %I:%M %p", None).unwrap();
        assert_eq!(m.datetime().to_string(), "2024-06-01T15:05:00");
    }
}
