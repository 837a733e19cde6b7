//! Microsecond timestamps and UTC calendar buckets, without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

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

/// The start of the `unit` bucket holding `us`.
pub fn bucket_start(us: i64, unit: Unit) -> i64 {
    match unit {
        Unit::Minute => us.div_euclid(MINUTE_US) * MINUTE_US,
        Unit::Hour => us.div_euclid(HOUR_US) * HOUR_US,
        Unit::Day => us.div_euclid(DAY_US) * DAY_US,
        Unit::Week => {
            // 1970-01-01 was a Thursday: Monday-based weeks start 3 days before it.
            let days = us.div_euclid(DAY_US);
            (days - (days + 3).rem_euclid(7)) * DAY_US
        }
        Unit::Month => {
            let (y, m, _) = civil_from_days(us.div_euclid(DAY_US));
            days_from_civil(y, m, 1) * DAY_US
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC.
pub fn format_utc(us: i64) -> String {
    let days = us.div_euclid(DAY_US);
    let secs = us.rem_euclid(DAY_US) / 1_000_000;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
/// Reads `YYYY-MM-DD`, `YYYY-MM-DD HH:MM` or `YYYY-MM-DD HH:MM:SS` (a `T` may separate the
/// date and time), in UTC, as µs since the epoch.
pub fn parse_utc(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((date, time)) => (date, Some(time.trim_end_matches('Z'))),
        None => (text, None),
    };
    let number = |s: &str| s.parse::<i64>().ok();
    let mut ymd = date.split('-');
    let (y, m, d) = (
        number(ymd.next()?)?,
        number(ymd.next()?)?,
        number(ymd.next()?)?,
    );
    if ymd.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut seconds = 0;
    if let Some(time) = time {
        let parts: Vec<i64> = time.split(':').map(number).collect::<Option<_>>()?;
        let (h, min, s) = match parts.as_slice() {
            [h, min] => (*h, *min, 0),
            [h, min, s] => (*h, *min, *s),
            _ => return None,
        };
        if !(0..24).contains(&h) || !(0..60).contains(&min) || !(0..60).contains(&s) {
            return None;
        }
        seconds = h * 3600 + min * 60 + s;
    }
    Some(days_from_civil(y, m, d) * DAY_US + seconds * 1_000_000)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
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
    fn calendar_round_trips() {
        for days in [-800_000, -1, 0, 59, 60, 11_016, 19_782, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn parses_what_it_formats() {
        assert_eq!(parse_utc("2024-02-29 13:45:30"), Some(T - 500_000));
        assert_eq!(parse_utc("2024-02-29T13:45:30Z"), Some(T - 500_000));
        assert_eq!(parse_utc("2024-02-29 13:45"), Some(T - 30_500_000));
        assert_eq!(parse_utc("1970-01-01"), Some(0));
        for bad in [
            "2024-13-01",
            "2024-02",
            "yesterday",
            "2024-02-29 25:00",
            "2024-02-29 1:2:3:4",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }
}
