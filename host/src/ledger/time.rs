//! Microsecond timestamps and UTC calendar buckets, on the `time` crate's calendar.

use std::time::{SystemTime, UNIX_EPOCH};

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

/// A calendar bucket of `/usage/models`, in UTC. Weeks start on Monday.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
}

impl Unit {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "minute" => Self::Minute,
            "hour" => Self::Hour,
            "day" => Self::Day,
            "week" => Self::Week,
            "month" => Self::Month,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }
}

pub const MINUTE_US: i64 = 60_000_000;
pub const HOUR_US: i64 = 60 * MINUTE_US;
pub const DAY_US: i64 = 24 * HOUR_US;

/// Now, in µs since the Unix epoch.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The UTC date and time of `us`. Every `i64` of µs is a date the calendar holds (the
/// `large-dates` feature reaches ±999,999 years; µs since 1970 reach ±292,277).
fn utc(us: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1_000).unwrap_or(if us < 0 {
        MIN_UTC
    } else {
        MAX_UTC
    })
}

const MIN_UTC: OffsetDateTime = PrimitiveDateTime::MIN.assume_utc();
const MAX_UTC: OffsetDateTime = PrimitiveDateTime::MAX.assume_utc();

/// µs since the epoch of midnight (UTC) starting `date`; the first bucket's start, before
/// the earliest µs, saturates.
fn midnight_us(date: Date) -> i64 {
    (date.midnight().assume_utc().unix_timestamp()).saturating_mul(1_000_000)
}

/// The start of the `unit` bucket holding `us`.
pub fn bucket_start(us: i64, unit: Unit) -> i64 {
    match unit {
        Unit::Minute => us.div_euclid(MINUTE_US) * MINUTE_US,
        Unit::Hour => us.div_euclid(HOUR_US) * HOUR_US,
        Unit::Day => us.div_euclid(DAY_US) * DAY_US,
        Unit::Week => {
            let date = utc(us).date();
            let monday = i64::from(date.weekday().number_days_from_monday());
            midnight_us(date).saturating_sub(monday * DAY_US)
        }
        Unit::Month => {
            let date = utc(us).date();
            midnight_us(date.replace_day(1).unwrap_or(date))
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC.
pub fn format_utc(us: i64) -> String {
    let at = utc(us);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// Reads `YYYY-MM-DD`, `YYYY-MM-DD HH:MM` or `YYYY-MM-DD HH:MM:SS` (a `T` may separate the
/// date and time, a `Z` may end it; fields need no leading zeros), in UTC, as µs since the
/// epoch. A date the calendar does not have (`2024-02-30`) is refused.
pub fn parse_utc(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((date, time)) => (date, Some(time.trim_end_matches('Z'))),
        None => (text, None),
    };
    let mut ymd = date.split('-').map(|s| s.parse::<i32>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    if ymd.next().is_some() {
        return None;
    }
    let month = Month::try_from(u8::try_from(m).ok()?).ok()?;
    let date = Date::from_calendar_date(y, month, u8::try_from(d).ok()?).ok()?;
    let time = match time {
        None => Time::MIDNIGHT,
        Some(time) => {
            let parts: Vec<u8> = time
                .split(':')
                .map(|s| s.parse().ok())
                .collect::<Option<_>>()?;
            let (h, min, s) = match parts.as_slice() {
                [h, min] => (*h, *min, 0),
                [h, min, s] => (*h, *min, *s),
                _ => return None,
            };
            Time::from_hms(h, min, s).ok()?
        }
    };
    Some(
        PrimitiveDateTime::new(date, time)
            .assume_utc()
            .unix_timestamp()
            * 1_000_000,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2024-02-29 13:45:30.5 UTC, a Thursday.
    const T: i64 = 1_709_214_330_500_000;

    #[test]
    fn formats_in_utc() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00");
        assert_eq!(format_utc(T), "2024-02-29 13:45:30");
    }

    #[test]
    fn buckets_start_where_the_calendar_says() {
        let at = |unit| format_utc(bucket_start(T, unit));
        assert_eq!(at(Unit::Minute), "2024-02-29 13:45:00");
        assert_eq!(at(Unit::Hour), "2024-02-29 13:00:00");
        assert_eq!(at(Unit::Day), "2024-02-29 00:00:00");
        assert_eq!(at(Unit::Week), "2024-02-26 00:00:00");
        assert_eq!(at(Unit::Month), "2024-02-01 00:00:00");
        assert_eq!(
            format_utc(bucket_start(0, Unit::Week)),
            "1969-12-29 00:00:00"
        );
    }

    #[test]
    fn the_whole_range_of_microseconds_has_a_date() {
        assert_eq!(format_utc(i64::MAX), "294247-01-10 04:00:54");
        assert_eq!(format_utc(-1), "1969-12-31 23:59:59");
        assert_eq!(bucket_start(i64::MIN, Unit::Month), i64::MIN);
        assert_eq!(parse_utc("1969-12-31 23:59:59"), Some(-1_000_000));
        assert_eq!(
            format_utc(bucket_start(T, Unit::Week) + 7 * DAY_US),
            "2024-03-04 00:00:00"
        );
    }

    #[test]
    fn parses_what_it_formats() {
        assert_eq!(parse_utc("2024-02-29 13:45:30"), Some(T - 500_000));
        assert_eq!(parse_utc("2024-02-29T13:45:30Z"), Some(T - 500_000));
        assert_eq!(parse_utc("2024-02-29 13:45"), Some(T - 30_500_000));
        assert_eq!(parse_utc("1970-01-01"), Some(0));
        assert_eq!(parse_utc(" 2024-2-29 13:45:30Z "), Some(T - 500_000));
        for bad in [
            "2024-13-01",
            "2024-02",
            "yesterday",
            "2024-02-29 25:00",
            "2024-02-29 1:2:3:4",
            "2023-02-29",
            "2024-04-31",
            "2024-00-10",
            "2024-02-29 13:60",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }
}
