//! Quiver built-in tool plugin: current time, time zones, calendar arithmetic and
//! formatting, with jiff and its bundled time zone database.

mod parse;

use jiff::fmt::friendly::{Designator, Spacing, SpanPrinter};
use jiff::tz::TimeZone;
use jiff::{RoundMode, Span, Unit, Zoned, ZonedDifference};
use quiver_sdk::prelude::*;

/// Input of `now`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Now {
    /// IANA time zone such as `Europe/Paris` or `America/New_York`, `UTC`, or an offset like
    /// `+05:30`.
    #[serde(default = "utc")]
    pub time_zone: String,
}

/// Input of `convert`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Convert {
    /// The time: ISO 8601 (`2024-06-01T14:30:00Z`, `2024-06-01T14:30+02:00`, `2024-06-01 14:30`),
    /// with a zone (`2024-06-01T14:30[Europe/Paris]`), RFC 2822, Unix seconds, `now` or `today`.
    pub timestamp: String,
    /// Time zone to convert to: IANA name (`Asia/Tokyo`), `UTC` or an offset (`-05:00`).
    pub to_time_zone: String,
    /// Zone of a `timestamp` written without an offset or zone. Default `UTC`.
    pub from_time_zone: Option<String>,
    /// strftime-style format of `timestamp` when it is not ISO 8601, e.g. `%m/%d/%Y %I:%M %p`
    /// or `%d %B %Y`.
    pub input_format: Option<String>,
}

/// Input of `add`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Add {
    /// The starting time: ISO 8601 (`2024-01-31T09:00:00Z`, `2024-01-31 09:00`), with a zone
    /// (`...[Europe/Paris]`), RFC 2822, Unix seconds, `now` or `today`.
    pub timestamp: String,
    /// Duration to add: `2 days 3 hours`, `1 month`, `1h30m`, `-2 weeks` (negative subtracts)
    /// or ISO 8601 `P1DT2H`. Months and years keep the day of month (clamped at month end).
    pub duration: String,
    /// Subtract the duration instead of adding it.
    #[serde(default)]
    pub subtract: bool,
    /// Time zone whose calendar and daylight-saving rules apply (`1 day` across a DST change
    /// keeps the wall-clock time). The result is in it. Default: the zone or offset of
    /// `timestamp`, else `UTC`.
    pub time_zone: Option<String>,
}

/// The biggest or smallest unit of a span.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum SpanUnit {
    /// Calendar years.
    Years,
    /// Calendar months.
    Months,
    /// Weeks of 7 days.
    Weeks,
    /// Calendar days (23 or 25 hours across a DST change).
    Days,
    /// Hours.
    Hours,
    /// Minutes.
    Minutes,
    /// Seconds.
    Seconds,
}

impl SpanUnit {
    fn unit(self) -> Unit {
        match self {
            SpanUnit::Years => Unit::Year,
            SpanUnit::Months => Unit::Month,
            SpanUnit::Weeks => Unit::Week,
            SpanUnit::Days => Unit::Day,
            SpanUnit::Hours => Unit::Hour,
            SpanUnit::Minutes => Unit::Minute,
            SpanUnit::Seconds => Unit::Second,
        }
    }
}

/// Input of `difference`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Difference {
    /// The earlier time (same forms as `end`).
    pub start: String,
    /// The later time: ISO 8601 (`2024-12-25T00:00:00Z`, `2024-12-25`), with a zone, RFC 2822,
    /// Unix seconds, `now` or `today`. If it is before `start` the span is negative.
    pub end: String,
    /// Largest unit of the span, e.g. `days` gives `40 days 3 hours`, `months` gives
    /// `1 month 9 days 3 hours`.
    #[serde(default = "days")]
    pub largest_unit: SpanUnit,
    /// Smallest unit; the rest is truncated.
    #[serde(default = "seconds")]
    pub smallest_unit: SpanUnit,
    /// Time zone for times without an offset and for calendar units. Default: the zone of
    /// `start`, else `UTC`.
    pub time_zone: Option<String>,
}

/// Input of `format`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Format {
    /// The time: ISO 8601, with a zone, RFC 2822, Unix seconds, `now` or `today`.
    pub timestamp: String,
    /// strftime-style format, e.g. `%A %d %B %Y, %H:%M %Z` gives `Saturday 01 June 2024, 14:30
    /// CEST`. Also `%Y-%m-%d`, `%I:%M %p`, `%z` (+0200), `%:z` (+02:00), `%Q` (IANA zone),
    /// `%V` (ISO week), `%j` (day of year), `%s` (Unix seconds), `%b`/`%a` (short names).
    pub format: String,
    /// Time zone to show the time in. Default: the zone or offset of `timestamp`, else `UTC`.
    pub time_zone: Option<String>,
}

fn utc() -> String {
    "UTC".to_owned()
}

fn days() -> SpanUnit {
    SpanUnit::Days
}

fn seconds() -> SpanUnit {
    SpanUnit::Seconds
}

/// A moment in a time zone.
#[derive(Serialize, JsonSchema)]
pub struct Moment {
    /// RFC 3339 with the UTC offset, e.g. `2024-06-01T14:30:00+02:00`.
    pub rfc3339: String,
    /// RFC 9557: RFC 3339 plus the zone, e.g. `2024-06-01T14:30:00+02:00[Europe/Paris]`.
    pub zoned: String,
    /// The same moment in UTC, e.g. `2024-06-01T12:30:00Z`.
    pub utc: String,
    /// IANA time zone name, or the fixed offset.
    pub time_zone: String,
    /// Offset from UTC, e.g. `+02:00`.
    pub offset: String,
    /// Zone abbreviation, e.g. `CEST`, `EST` or `UTC`.
    pub abbreviation: String,
    /// True while daylight-saving time is in effect.
    pub dst: bool,
    /// Day of the week in English, e.g. `Saturday`.
    pub weekday: String,
    /// Seconds since 1970-01-01T00:00:00Z.
    pub unix_seconds: i64,
}

/// The span between two moments.
#[derive(Serialize, JsonSchema)]
pub struct Elapsed {
    /// Human-readable, e.g. `1 month 9 days 3 hours`; `0 seconds` when equal.
    pub text: String,
    /// ISO 8601 duration, e.g. `P1M9DT3H`.
    pub iso8601: String,
    /// Parts of the span; all have the sign of the span.
    pub years: i64,
    /// Months part.
    pub months: i64,
    /// Weeks part.
    pub weeks: i64,
    /// Days part.
    pub days: i64,
    /// Hours part.
    pub hours: i64,
    /// Minutes part.
    pub minutes: i64,
    /// Seconds part.
    pub seconds: i64,
    /// The whole span in `largest_unit`, with a fraction, e.g. 40.125 days.
    pub total: f64,
    /// The exact elapsed time in seconds (end minus start, ignoring calendars).
    pub total_seconds: f64,
}

/// A formatted time.
#[derive(Serialize, JsonSchema)]
pub struct Formatted {
    /// The formatted text.
    pub text: String,
}

fn zone_opt(name: Option<&str>) -> Result<Option<TimeZone>, ToolError> {
    name.map(parse::time_zone).transpose()
}

/// Describe `z` for a model.
pub fn moment_of(z: &Zoned) -> Moment {
    let info = z.time_zone().to_offset_info(z.timestamp());
    // `%:z` always has minutes (`+02:00`); `Offset`'s own display drops zero minutes.
    let offset = z.strftime("%:z").to_string();
    Moment {
        rfc3339: z.timestamp().display_with_offset(z.offset()).to_string(),
        zoned: z.to_string(),
        utc: z.timestamp().to_string(),
        time_zone: z.time_zone().iana_name().map_or_else(|| offset.clone(), str::to_owned),
        offset,
        abbreviation: info.abbreviation().to_owned(),
        dst: info.dst().is_dst(),
        weekday: z.strftime("%A").to_string(),
        unix_seconds: z.timestamp().as_second(),
    }
}

/// The span from `start` to `end` (taken to `start`'s zone), in `largest`..`smallest` units.
pub fn elapsed(start: &Zoned, end: &Zoned, largest: Unit, smallest: Unit) -> Result<Elapsed, ToolError> {
    if smallest > largest {
        return Err(ToolError::invalid_input("smallest_unit must not be larger than largest_unit"));
    }
    let end = end.with_time_zone(start.time_zone().clone());
    let span: Span = start
        .until(ZonedDifference::new(&end).largest(largest).smallest(smallest).mode(RoundMode::Trunc))
        .map_err(|e| ToolError::invalid_input(format!("cannot compute the span: {e}")))?;
    let total = span.total((largest, start)).map_err(ToolError::failed)?;
    let exact = end.timestamp().duration_since(start.timestamp());
    let printer = SpanPrinter::new().spacing(Spacing::BetweenUnitsAndDesignators).designator(Designator::Verbose);
    Ok(Elapsed {
        text: printer.span_to_string(&span),
        iso8601: span.to_string(),
        years: span.get_years().into(),
        months: span.get_months().into(),
        weeks: span.get_weeks().into(),
        days: span.get_days().into(),
        hours: span.get_hours().into(),
        minutes: span.get_minutes(),
        seconds: span.get_seconds(),
        total,
        total_seconds: exact.as_secs_f64(),
    })
}

/// Dates and times in any IANA time zone: current time, conversion, calendar arithmetic, spans, formatting.
#[quiver_sdk::plugin(categories = ["time"])]
mod datetime {
    use super::*;

    /// The current date and time in a time zone (default UTC).
    pub fn now(input: Now) -> Result<Moment, ToolError> {
        let zone = parse::time_zone(&input.time_zone)?;
        Ok(moment_of(&parse::now().to_zoned(zone)))
    }

    /// Convert a timestamp to another time zone; also parses custom formats with `input_format`.
    pub fn convert(input: Convert) -> Result<Moment, ToolError> {
        let from = zone_opt(input.from_time_zone.as_deref())?;
        let to = parse::time_zone(&input.to_time_zone)?;
        let zoned = match &input.input_format {
            Some(format) => parse::moment_with_format(&input.timestamp, format, from.as_ref())?,
            None => parse::moment(&input.timestamp, from.as_ref())?,
        };
        Ok(moment_of(&zoned.with_time_zone(to)))
    }

    /// Add or subtract a duration such as `2 days 3 hours` or `P1M` to a timestamp, calendar-aware.
    pub fn add(input: Add) -> Result<Moment, ToolError> {
        let zone = zone_opt(input.time_zone.as_deref())?;
        let start = parse::moment(&input.timestamp, zone.as_ref())?;
        let span = parse::duration(&input.duration)?;
        let span = if input.subtract { span.negate() } else { span };
        let result = start
            .checked_add(span)
            .map_err(|e| ToolError::invalid_input(format!("cannot add `{}`: {e}", input.duration)))?;
        Ok(moment_of(&result))
    }

    /// How long between two dates or times (days until, time elapsed, an age), in calendar units up to a largest unit.
    pub fn difference(input: Difference) -> Result<Elapsed, ToolError> {
        let zone = zone_opt(input.time_zone.as_deref())?;
        let start = parse::moment(&input.start, zone.as_ref())?;
        let end = parse::moment(&input.end, zone.as_ref())?;
        let (largest, smallest) = (input.largest_unit.unit(), input.smallest_unit.unit());
        elapsed(&start, &end, largest, smallest)
    }

    /// Format a timestamp with a strftime-style pattern such as `%A %d %B %Y %H:%M %Z`.
    pub fn format(input: Format) -> Result<Formatted, ToolError> {
        let zone = zone_opt(input.time_zone.as_deref())?;
        let zoned = parse::moment(&input.timestamp, zone.as_ref())?;
        let text = jiff::fmt::strtime::format(input.format.as_str(), &zoned)
            .map_err(|e| ToolError::invalid_input(format!("cannot format with `{}`: {e}", input.format)))?;
        Ok(Formatted { text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Zoned {
        parse::moment(text, None).unwrap()
    }

    #[test]
    fn describes_a_moment() {
        let m = moment_of(&at("2024-06-01T14:30:00+02:00[Europe/Paris]"));
        assert_eq!(m.rfc3339, "2024-06-01T14:30:00+02:00");
        assert_eq!(m.utc, "2024-06-01T12:30:00Z");
        assert_eq!(m.offset, "+02:00");
        assert_eq!((m.abbreviation.as_str(), m.dst, m.weekday.as_str()), ("CEST", true, "Saturday"));
    }

    #[test]
    fn spans_in_calendar_units() {
        let e = elapsed(&at("2024-01-31T00:00:00Z"), &at("2024-03-01T06:00:00Z"), Unit::Month, Unit::Second).unwrap();
        assert_eq!((e.months, e.days, e.hours), (1, 1, 6));
        assert_eq!(e.iso8601, "P1M1DT6H");
        let e = elapsed(&at("2024-01-02T00:00:00Z"), &at("2024-01-01T12:00:00Z"), Unit::Day, Unit::Second).unwrap();
        assert_eq!((e.hours, e.total), (-12, -0.5));
        assert!(elapsed(&at("now"), &at("now"), Unit::Hour, Unit::Day).is_err());
    }
}
