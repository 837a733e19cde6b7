//! UTC-aligned fixed windows (minute, hour, day, calendar month) and the clock they are read
//! from.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::plugins::Period;

/// Wall-clock milliseconds, read as an offset from one reading of the system clock, so that a
/// step of the system clock does not move a window.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base_unix_ms: i64,
    base: tokio::time::Instant,
}

impl Clock {
    pub fn new() -> Self {
        let base_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self {
            base_unix_ms,
            base: tokio::time::Instant::now(),
        }
    }

    /// A clock that reads `unix_ms` now (tests: a window's end a few milliseconds away).
    #[cfg(test)]
    pub fn at(unix_ms: i64) -> Self {
        Self {
            base_unix_ms: unix_ms,
            base: tokio::time::Instant::now(),
        }
    }

    pub fn now_ms(&self) -> i64 {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.base);
        self.base_unix_ms + i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// The window of `period` that contains `now_ms`: (start, end) in Unix milliseconds.
/// `total` is one window with no end.
pub fn window(period: Period, now_ms: i64) -> (i64, Option<i64>) {
    let fixed = |len: i64| {
        let start = now_ms.div_euclid(len) * len;
        (start, Some(start + len))
    };
    match period {
        Period::Minute => fixed(60_000),
        Period::Hour => fixed(3_600_000),
        Period::Day => fixed(86_400_000),
        Period::Month => {
            let day = now_ms.div_euclid(86_400_000);
            let (y, m, _) = civil_from_days(day);
            let start = days_from_civil(y, m, 1) * 86_400_000;
            let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
            (start, Some(days_from_civil(ny, nm, 1) * 86_400_000))
        }
        Period::Total => (0, None),
    }
}

// Howard Hinnant's algorithms for the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-11-22T10:15:30.250Z
    const NOW: i64 = 1_795_342_530_250;

    #[test]
    fn fixed_windows_are_aligned_to_utc() {
        assert_eq!(
            window(Period::Minute, NOW),
            (1_795_342_500_000, Some(1_795_342_560_000))
        );
        assert_eq!(
            window(Period::Hour, NOW),
            (1_795_341_600_000, Some(1_795_345_200_000))
        );
        assert_eq!(
            window(Period::Day, NOW),
            (1_795_305_600_000, Some(1_795_392_000_000))
        );
        assert_eq!(window(Period::Total, NOW), (0, None));
    }

    #[test]
    fn months_are_calendar_months() {
        // November 2026: 2026-11-01T00:00Z to 2026-12-01T00:00Z.
        assert_eq!(
            window(Period::Month, NOW),
            (1_793_491_200_000, Some(1_796_083_200_000))
        );
        // December rolls into January of the next year.
        let (_, end) = window(Period::Month, 1_796_083_200_000 + 1);
        assert_eq!(end, Some(1_798_761_600_000));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    }
}
