//! One exchange: a request a page made and the response it got, as an archive keeps them.

use std::time::SystemTime;

/// A header as it went: name and value, in the order they were sent.
pub type Header = (String, String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// Absolute, without its fragment (the fragment never leaves the browser).
    pub url: String,
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The reason phrase (HTTP/2 has none: then the standard one is written).
    pub reason: String,
    /// Without the headers that describe the transfer rather than the body
    /// (`is_transfer_header`): the body is kept as the page received it, decoded and whole.
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
    /// The body was longer than the archive keeps (`BROWSER_ARCHIVE_BODY_MB`): `body` is empty,
    /// and the record says it was cut (`WARC-Truncated: length`).
    pub body_left_out: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub request: Request,
    pub response: Response,
    /// When the response came.
    pub date: SystemTime,
}

impl Response {
    /// The first header of this name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// A redirect, and where it leads (as written: resolve it against the request's URL).
    pub fn redirect(&self) -> Option<&str> {
        if (300..400).contains(&self.status) && self.status != 304 {
            self.header("location")
        } else {
            None
        }
    }

    /// The reason phrase to send: the recorded one, else the status's standard one.
    pub fn reason_phrase(&self) -> &str {
        match self.reason.trim() {
            "" => standard_reason(self.status),
            reason => reason,
        }
    }

    /// Statuses whose responses have no body (a redirect's is never shown).
    pub fn has_no_body(&self) -> bool {
        matches!(self.status, 101 | 204 | 304) || self.redirect().is_some()
    }
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

fn header<'a>(headers: &'a [Header], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Headers about how a body travelled, not what it is: an archive keeps the body decoded and
/// whole, so these would lie about it (a reader would unzip plain bytes, or wait for more).
pub fn is_transfer_header(name: &str) -> bool {
    ["content-encoding", "transfer-encoding", "content-length"]
        .iter()
        .any(|transfer| name.eq_ignore_ascii_case(transfer))
}

/// A header fit to write into an HTTP message: a token for a name, a value without control
/// characters (a tab aside). A header that is not fit is left out, never written half (a line
/// break in a value would start a header, or a body, of the writer's choosing). HTTP/2's pseudo
/// headers (`:status`) are not headers of the message.
pub fn clean_header(name: &str, value: &str) -> Option<Header> {
    let name_fit = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    let value_fit = value.chars().all(|c| c == '\t' || !c.is_control());
    (name_fit && value_fit).then(|| (name.to_string(), value.trim().to_string()))
}

/// The standard reason phrase of a status, for responses that came without one (HTTP/2).
pub(crate) fn standard_reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        410 => "Gone",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_with_control_characters_or_bad_names_are_left_out() {
        assert_eq!(
            clean_header("Content-Type", " text/html; charset=utf-8 "),
            Some(("Content-Type".into(), "text/html; charset=utf-8".into()))
        );
        assert_eq!(
            clean_header("X-Note", "a\tb"),
            Some(("X-Note".into(), "a\tb".into()))
        );
        for (name, value) in [
            ("X-Split", "a\r\nSet-Cookie: evil=1"),
            ("X-Nul", "a\0b"),
            ("X-Bell", "\u{7}"),
            ("Bad Name", "v"),
            (":status", "200"),
            ("", "v"),
        ] {
            assert_eq!(clean_header(name, value), None, "{name:?}: {value:?}");
        }
    }

    #[test]
    fn redirects_and_bodiless_statuses_are_told_apart() {
        let response = |status, location: Option<&str>| Response {
            status,
            reason: String::new(),
            headers: location
                .map(|l| vec![("Location".to_string(), l.to_string())])
                .unwrap_or_default(),
            body: Vec::new(),
            body_left_out: false,
        };
        assert_eq!(response(302, Some("/b")).redirect(), Some("/b"));
        assert_eq!(response(304, Some("/b")).redirect(), None);
        assert_eq!(response(200, Some("/b")).redirect(), None);
        assert!(response(204, None).has_no_body());
        assert!(response(301, Some("/")).has_no_body());
        assert!(!response(200, None).has_no_body());
        assert!(is_transfer_header("Content-Encoding") && !is_transfer_header("Content-Type"));
    }
}
