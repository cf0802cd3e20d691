//! Wall-clock time as text: the one timestamp format every mcp-host file and table uses
//! (UTC, RFC 3339, milliseconds), so that text order is time order.

use std::time::{SystemTime, UNIX_EPOCH};

/// UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ` (civil-from-days, proleptic Gregorian).
pub fn rfc3339(t: SystemTime) -> String {
    let mut out = String::with_capacity(24);
    push_rfc3339(t, &mut out);
    out
}

/// A UTC instant's calendar date (year, month, day), its second of the day and its
/// milliseconds (civil-from-days, proleptic Gregorian).
fn civil(t: SystemTime) -> (i64, i64, i64, i64, u32) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rem, d.subsec_millis())
}

/// `civil`'s fields as `format!` writes them: the slow way, for a clock outside 0..=65535.
fn formatted((year, month, day, rem, millis): (i64, i64, i64, i64, u32)) -> String {
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
    )
}

/// [`rfc3339`] appended to `out`. Digits are written by hand: `format!` was a tenth of an
/// audit line's cost, and every call writes one.
pub fn push_rfc3339(t: SystemTime, out: &mut String) {
    let fields = civil(t);
    let (year, month, day, rem, millis) = fields;
    let Ok(year4) = u16::try_from(year) else {
        // Before year 0 or past 65535: a broken clock.
        out.push_str(&formatted(fields));
        return;
    };
    let digits = |out: &mut String, value: u64, width: u32| {
        for place in (0..width).rev() {
            // A decimal digit, 0..=9: one ASCII byte.
            let digit = ((value / 10u64.pow(place)) % 10) as u8;
            out.push(char::from(b'0' + digit));
        }
    };
    // `rem` is in 0..86,400, `month` 1..=12, `day` 1..=31: each fits its width.
    let rem = rem.unsigned_abs();
    let year_width = if year4 > 9999 { 5 } else { 4 };
    digits(out, u64::from(year4), year_width);
    let fields = [
        ('-', month.unsigned_abs(), 2),
        ('-', day.unsigned_abs(), 2),
        ('T', rem / 3600, 2),
        (':', rem % 3600 / 60, 2),
        (':', rem % 60, 2),
        ('.', u64::from(millis), 3),
    ];
    for (separator, value, width) in fields {
        out.push(separator);
        digits(out, value, width);
    }
    out.push('Z');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_996_800_123); // 2026-11-30T00:00:00.123Z
        assert_eq!(rfc3339(t), "2026-11-30T00:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
        let late = UNIX_EPOCH + Duration::from_millis(253_402_300_799_999); // the last of 9999
        assert_eq!(rfc3339(late), "9999-12-31T23:59:59.999Z");
        let later = late + Duration::from_millis(1);
        assert_eq!(rfc3339(later), "10000-01-01T00:00:00.000Z");
    }

    /// The digits written by hand say what `format!` says of the same fields, across a
    /// spread of instants.
    #[test]
    fn hand_written_digits_match_the_formatter() {
        let mut t = 0u64;
        while t < 400 * 366 * 86_400_000 {
            let at = UNIX_EPOCH + Duration::from_millis(t);
            assert_eq!(rfc3339(at), formatted(civil(at)), "{t}");
            t += 7_919_999_977; // about 92 days and a prime number of milliseconds
        }
    }
}
