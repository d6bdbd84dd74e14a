//! Recorded `Set-Cookie` headers, made fit to replay. Chromium applies them itself (they come with
//! the fulfilled response), but two things about them are the recording's, not the replay's:
//!
//! - an expiry date: a cookie that lived a day when recorded in December is long expired in March,
//!   and Chromium would drop it. A date after the recording becomes the same lifetime
//!   (`Max-Age`), counted from now; a date before it (a deletion) stays.
//! - a `Domain` the response's host does not belong to: an archive is untrusted, and a record
//!   could try to set a cookie for another site. Chromium refuses those too; they are dropped
//!   before they get there.

use std::time::SystemTime;

/// `value` (one `Set-Cookie` header of a response recorded at `recorded` for `host`) as it may be
/// applied now, or None when it must be dropped.
pub fn replayed_set_cookie(value: &str, host: &str, recorded: SystemTime) -> Option<String> {
    let mut parts = value.split(';').map(str::trim);
    let pair = parts.next().filter(|pair| !pair.is_empty())?;
    let attributes: Vec<(&str, &str)> = parts
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.split_once('=')
                .map_or((part, ""), |(n, v)| (n.trim(), v.trim()))
        })
        .collect();
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let has_max_age = attributes
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("max-age"));
    let mut kept = vec![pair.to_string()];
    for (name, value) in attributes {
        if name.eq_ignore_ascii_case("domain") {
            let domain = value
                .trim_start_matches('.')
                .trim_end_matches('.')
                .to_ascii_lowercase();
            let ours = host == domain || host.ends_with(&format!(".{domain}"));
            if domain.is_empty() || !ours {
                return None;
            }
        }
        if name.eq_ignore_ascii_case("expires") {
            // Max-Age wins over Expires (RFC 6265 5.3): a lifetime is already there.
            if has_max_age {
                continue;
            }
            // A date before the recording is a deletion, which stays one; an unreadable one
            // stays as written.
            if let Some(Ok(lifetime)) = cookie_date(value).map(|at| at.duration_since(recorded)) {
                kept.push(format!("Max-Age={}", lifetime.as_secs().max(1)));
                continue;
            }
        }
        kept.push(
            if value.is_empty() && !name.eq_ignore_ascii_case("expires") {
                name.to_string()
            } else {
                format!("{name}={value}")
            },
        );
    }
    Some(kept.join("; "))
}

/// A cookie's date, read the lenient way browsers do (RFC 6265 5.1.1): a time, a day of the
/// month, a month's name and a year, in any order among other words.
fn cookie_date(text: &str) -> Option<SystemTime> {
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    let tokens = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == ':'))
        .filter(|t| !t.is_empty());
    for token in tokens {
        let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if time.is_none() && token.contains(':') {
            let parts: Vec<u32> = token.split(':').filter_map(|p| p.parse().ok()).collect();
            if let [h, m, s] = parts[..] {
                time = Some((h, m, s));
                continue;
            }
        }
        if day.is_none() && digits(token) && (1..=2).contains(&token.len()) {
            day = token.parse::<u32>().ok();
            continue;
        }
        if month.is_none() && token.len() >= 3 {
            const MONTHS: [&str; 12] = [
                "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
            ];
            let start = token[..3].to_ascii_lowercase();
            if let Some(index) = MONTHS.iter().position(|m| *m == start) {
                month = Some(index as u32 + 1);
                continue;
            }
        }
        if year.is_none() && digits(token) && (2..=4).contains(&token.len()) {
            let value = token.parse::<i32>().ok()?;
            year = Some(match value {
                0..=69 => value + 2000,
                70..=99 => value + 1900,
                _ => value,
            });
        }
    }
    let (h, m, s) = time?;
    let date = chrono::NaiveDate::from_ymd_opt(year?, month?, day?)?;
    let at = date.and_hms_opt(h, m, s)?.and_utc();
    Some(SystemTime::from(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(text: &str) -> SystemTime {
        SystemTime::from(chrono::DateTime::parse_from_rfc3339(text).unwrap())
    }

    #[test]
    fn an_expiry_after_the_recording_becomes_the_same_lifetime_from_now() {
        let recorded = at("2025-12-01T10:00:00Z");
        assert_eq!(
            replayed_set_cookie(
                "sid=abc; Expires=Tue, 02 Dec 2025 10:00:00 GMT; Path=/; HttpOnly",
                "shop.example",
                recorded
            )
            .as_deref(),
            Some("sid=abc; Max-Age=86400; Path=/; HttpOnly")
        );
        // The other formats browsers accept.
        for date in [
            "Tuesday, 02-Dec-25 10:00:00 GMT",
            "Tue Dec  2 10:00:00 2025",
            "Tue, 02-Dec-2025 10:00:00 GMT",
        ] {
            assert_eq!(
                cookie_date(date),
                Some(recorded + Duration::from_secs(86_400)),
                "{date}"
            );
        }
        // A deletion (a date before the recording) stays a deletion; Max-Age stays as it is.
        let deletion = "sid=; Expires=Thu, 01 Jan 1970 00:00:00 GMT";
        assert_eq!(
            replayed_set_cookie(deletion, "shop.example", recorded).as_deref(),
            Some(deletion)
        );
        assert_eq!(
            replayed_set_cookie(
                "a=1; Max-Age=60; Expires=Tue, 02 Dec 2025 10:00:00 GMT",
                "h",
                recorded
            )
            .as_deref(),
            Some("a=1; Max-Age=60")
        );
    }

    #[test]
    fn a_cookie_for_another_site_is_dropped() {
        let now = SystemTime::now();
        assert!(replayed_set_cookie("a=1; Domain=.example.com", "www.example.com", now).is_some());
        assert!(replayed_set_cookie("a=1; Domain=example.com", "example.com", now).is_some());
        for domain in ["bank.example", "ample.com", "", "com.example.com.evil"] {
            let value = format!("a=1; Domain={domain}");
            assert_eq!(
                replayed_set_cookie(&value, "example.com", now),
                None,
                "{value}"
            );
        }
        assert_eq!(replayed_set_cookie("", "example.com", now), None);
    }
}
