//! The requests an episode's pages make, kept for a task's `request` check: the newest
//! `REQUESTS_KEPT`, each URL and body cut, since a page decides how many there are and how big.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use base64::Engine;
use browserenv_collect::tasks::SeenRequest;
use chromiumoxide::cdp::browser_protocol::network::Request;

use crate::browser::{first_chars, REQUESTS_KEPT, REQUEST_BODY_BYTES};

/// The most characters of a request's URL kept (`data:` URLs run to megabytes).
const URL_CHARS: usize = 4096;
/// The most characters of a method kept (a page can send any token as one).
const METHOD_CHARS: usize = 16;

/// Shared by the watchers of an episode's tabs (each one's `requestWillBeSent`) and the episode.
/// Only the main frame's requests are kept (its documents' and their scripts'): a frame of
/// another site inside the page is not the site the task is about.
#[derive(Debug, Clone, Default)]
pub(in crate::chromium) struct RequestLog(Arc<Mutex<VecDeque<(String, SeenRequest)>>>);

impl RequestLog {
    /// A request leaving, by DevTools' id.
    pub(in crate::chromium) fn push(&self, id: &str, request: &Request) {
        let seen = SeenRequest {
            method: first_chars(&request.method, METHOD_CHARS),
            url: first_chars(&request.url, URL_CHARS),
            body: body(request),
            failed: false,
        };
        if let Ok(mut log) = self.0.lock() {
            if log.len() >= REQUESTS_KEPT {
                log.pop_front();
            }
            log.push_back((id.to_string(), seen));
        }
    }

    /// The request never reached a server (refused, unreachable, too big): no check counts it.
    pub(in crate::chromium) fn failed(&self, id: &str) {
        if let Ok(mut log) = self.0.lock() {
            // A redirect reuses the id: the newest is the one that failed.
            if let Some((_, seen)) = log.iter_mut().rev().find(|(kept, _)| kept == id) {
                seen.failed = true;
            }
        }
    }

    /// Every request kept, oldest first.
    pub(in crate::chromium) fn all(&self) -> Vec<SeenRequest> {
        self.0
            .lock()
            .map(|log| log.iter().map(|(_, seen)| seen.clone()).collect())
            .unwrap_or_default()
    }
}

/// The first `REQUEST_BODY_BYTES` of the body DevTools reports (base64 entries), as text. Only
/// as much is decoded as is kept.
fn body(request: &Request) -> String {
    let mut bytes = Vec::new();
    for entry in request.post_data_entries.iter().flatten() {
        let left = REQUEST_BODY_BYTES.saturating_sub(bytes.len());
        if left == 0 {
            break;
        }
        let Some(encoded) = entry.bytes.as_ref().map(|b| b.as_ref() as &str) else {
            continue;
        };
        // Four base64 characters are three bytes: a whole number of groups covering `left`.
        let take = left.div_ceil(3).saturating_mul(4).min(encoded.len());
        let Some(start) = encoded.get(..take) else {
            continue;
        };
        if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(start) {
            bytes.extend_from_slice(&decoded[..decoded.len().min(left)]);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chromiumoxide::cdp::browser_protocol::network::PostDataEntry;

    fn request(method: &str, url: &str, entries: &[&[u8]]) -> Request {
        let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut value = serde_json::json!({
            "url": url, "method": method, "headers": {}, "initialPriority": "High",
            "referrerPolicy": "no-referrer",
        });
        if !entries.is_empty() {
            value["hasPostData"] = true.into();
            value["postDataEntries"] = entries
                .iter()
                .map(|bytes| {
                    serde_json::json!(PostDataEntry {
                        bytes: Some(encode(bytes).into())
                    })
                })
                .collect();
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_newest_requests_are_kept_with_their_bodies_cut_and_failures_marked() {
        let log = RequestLog::default();
        let thanks = request("POST", "http://h/thanks.html", &[b"name=Ada", b"+Lovelace"]);
        log.push("1", &thanks);
        log.push("2", &request("POST", "http://h/upload", &[b"big"]));
        log.failed("2");
        let seen = |url: &str, body: &str, failed| SeenRequest {
            method: "POST".into(),
            url: url.into(),
            body: body.into(),
            failed,
        };
        assert_eq!(
            log.all(),
            [
                seen("http://h/thanks.html", "name=Ada+Lovelace", false),
                seen("http://h/upload", "big", true),
            ]
        );
        let huge = vec![b'x'; 3 * REQUEST_BODY_BYTES + 1];
        let long_url = format!("http://h/{}", "u".repeat(2 * URL_CHARS));
        log.push("3", &request("PUT", &long_url, &[&huge, b"more"]));
        let last = log.all().pop().unwrap();
        assert_eq!(last.body.len(), REQUEST_BODY_BYTES);
        assert_eq!(last.url.chars().count(), URL_CHARS);
        for n in 0..REQUESTS_KEPT {
            log.push(
                &n.to_string(),
                &request("GET", &format!("http://h/{n}"), &[]),
            );
        }
        let all = log.all();
        assert_eq!(all.len(), REQUESTS_KEPT);
        assert_eq!(all[0].url, "http://h/0");
        assert_eq!(all[0].body, "");
    }
}
