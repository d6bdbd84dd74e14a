//! Which recorded response answers a request a page makes in replay. Pages do not ask exactly what
//! they asked when recorded: they ask for the same URL several times (each gets the next response
//! recorded for it, the last one again once they run out), add a timestamp or a random number to
//! defeat caches, send a body (a form, a search). The rules, most exact first:
//!
//! 1. the same method, URL and body;
//! 2. the same method and URL;
//! 3. the same method and URL once cache-busting parameters are taken out of both
//!    (`is_cache_buster`);
//! 4. the same method, origin, path and query parameter names: the response whose parameter values
//!    agree most.
//!
//! Nothing else answers: a request the rules find nothing for is a miss.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::Catalog;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Body(String, String, [u8; 32]),
    Exact(String, String),
    Loose(String, String),
    Names(String, String, Vec<String>),
}

/// An archive ready to answer requests, with what it has answered so far.
pub struct ReplayIndex {
    archive: Arc<Catalog>,
    keys: HashMap<Key, Vec<usize>>,
    served: HashMap<Key, usize>,
}

impl ReplayIndex {
    pub fn new(archive: Arc<Catalog>) -> Self {
        let mut keys: HashMap<Key, Vec<usize>> = HashMap::new();
        for (index, entry) in archive.entries.iter().enumerate() {
            for key in keys_of(&entry.method, &entry.url, entry.request_digest) {
                keys.entry(key).or_default().push(index);
            }
        }
        ReplayIndex {
            archive,
            keys,
            served: HashMap::new(),
        }
    }

    pub fn archive(&self) -> &Arc<Catalog> {
        &self.archive
    }

    /// The recorded entry that answers this request, by the rules above; None is a miss.
    pub fn answer(&mut self, method: &str, url: &str, body: &[u8]) -> Option<usize> {
        let digest = (!body.is_empty()).then(|| Sha256::digest(body).into());
        let asked = keys_of(method, url, digest);
        let mut found = None;
        for key in asked {
            let Some(candidates) = self.keys.get(&key) else {
                continue;
            };
            let candidates = match &key {
                Key::Names(..) => closest(&self.archive, candidates, url),
                _ => candidates.clone(),
            };
            let served = self.served.entry(key).or_insert(0);
            let index = candidates[(*served).min(candidates.len() - 1)];
            *served += 1;
            found = Some(index);
            break;
        }
        found
    }
}

/// The keys a request is known by, most exact first.
fn keys_of(method: &str, url: &str, body: Option<[u8; 32]>) -> Vec<Key> {
    let method = method.to_ascii_uppercase();
    let Ok(mut parsed) = url::Url::parse(url) else {
        return Vec::new();
    };
    parsed.set_fragment(None);
    let exact = parsed.to_string();
    let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
    let kept: Vec<&(String, String)> = pairs
        .iter()
        .filter(|(n, v)| !is_cache_buster(n, v))
        .collect();
    let mut loose = parsed.clone();
    if kept.is_empty() {
        loose.set_query(None);
    } else {
        loose
            .query_pairs_mut()
            .clear()
            .extend_pairs(kept.iter().map(|(n, v)| (n, v)));
    }
    let mut names: Vec<String> = kept.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    names.dedup();
    let mut place = parsed.clone();
    place.set_query(None);
    let mut keys = Vec::with_capacity(4);
    if let Some(body) = body {
        keys.push(Key::Body(method.clone(), exact.clone(), body));
    }
    keys.push(Key::Exact(method.clone(), exact));
    keys.push(Key::Loose(method.clone(), loose.to_string()));
    keys.push(Key::Names(method, place.to_string(), names));
    keys
}

/// Of the candidates (the same path and parameter names), those whose parameter values agree most
/// with `url`'s, in recorded order.
fn closest(archive: &Catalog, candidates: &[usize], url: &str) -> Vec<usize> {
    let values = |url: &str| -> Vec<(String, String)> {
        url::Url::parse(url)
            .map(|u| {
                u.query_pairs()
                    .into_owned()
                    .filter(|(n, v)| !is_cache_buster(n, v))
                    .collect()
            })
            .unwrap_or_default()
    };
    let asked = values(url);
    let score = |index: &usize| {
        values(&archive.entries[*index].url)
            .iter()
            .filter(|pair| asked.contains(pair))
            .count()
    };
    let best = candidates.iter().map(score).max().unwrap_or(0);
    candidates
        .iter()
        .copied()
        .filter(|i| score(i) == best)
        .collect()
}

/// A query parameter that only keeps caches from answering: named so by convention (jQuery's `_`,
/// ExtJS's `_dc`, `cb`, `nocache`, ...), or whose value is a clock reading (10 to 19 digits: epoch
/// seconds to nanoseconds) or a `Math.random()` (`0.` and many digits).
pub fn is_cache_buster(name: &str, value: &str) -> bool {
    const NAMES: &[&str] = &[
        "_",
        "__",
        "_dc",
        "cb",
        "cachebust",
        "cachebuster",
        "cache_bust",
        "cache-bust",
        "nocache",
        "no_cache",
        "bust",
        "rnd",
        "rand",
        "random",
    ];
    let name = name.to_ascii_lowercase();
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    NAMES.contains(&name.as_str())
        || (digits(value) && (10..=19).contains(&value.len()))
        || value
            .strip_prefix("0.")
            .is_some_and(|rest| rest.len() >= 8 && digits(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArchiveInfo, Entry, ReadLimits};

    /// An entry whose mime says what answers it (the tests look at which one answers).
    fn exchange(method: &str, url: &str, body: &str, answer: &str) -> Entry {
        Entry {
            url: url.into(),
            method: method.into(),
            request_digest: (!body.is_empty()).then(|| Sha256::digest(body.as_bytes()).into()),
            date: std::time::SystemTime::UNIX_EPOCH,
            revisit: false,
            status: 200,
            mime: answer.into(),
            digest: None,
            file: 0,
            at: Default::default(),
            request: None,
        }
    }

    fn index(entries: Vec<Entry>) -> ReplayIndex {
        ReplayIndex::new(Arc::new(Catalog::new(
            "test",
            ArchiveInfo::default(),
            entries,
            Vec::new(),
            ReadLimits::default(),
        )))
    }

    fn answer(index: &mut ReplayIndex, method: &str, url: &str, body: &str) -> Option<String> {
        let found = index.answer(method, url, body.as_bytes())?;
        Some(index.archive().entries[found].mime.clone())
    }

    #[test]
    fn the_same_url_asked_again_gets_the_next_response_then_the_last_again() {
        let mut index = index(vec![
            exchange("GET", "http://a/poll", "", "first"),
            exchange("GET", "http://a/other", "", "other"),
            exchange("GET", "http://a/poll", "", "second"),
        ]);
        let got: Vec<_> = (0..4)
            .map(|_| answer(&mut index, "get", "http://a/poll#top", ""))
            .collect();
        assert_eq!(
            got,
            ["first", "second", "second", "second"].map(|s| Some(s.to_string()))
        );
        assert_eq!(answer(&mut index, "GET", "http://a/missing", ""), None);
        assert_eq!(
            answer(&mut index, "POST", "http://a/other", ""),
            None,
            "the method counts"
        );
    }

    #[test]
    fn cache_busters_are_ignored_and_bodies_tell_posts_apart() {
        let mut index = index(vec![
            exchange("GET", "http://a/data.json?id=3&_=1712345678901", "", "data"),
            exchange("GET", "http://a/pixel?r=0.8273648172&page=a", "", "pixel"),
            exchange("POST", "http://a/search", "q=hammer", "hammers"),
            exchange("POST", "http://a/search", "q=clamp", "clamps"),
        ]);
        assert_eq!(
            answer(
                &mut index,
                "GET",
                "http://a/data.json?id=3&_=1800000000000",
                ""
            )
            .as_deref(),
            Some("data")
        );
        assert_eq!(
            answer(
                &mut index,
                "GET",
                "http://a/pixel?r=0.1111111111&page=a",
                ""
            )
            .as_deref(),
            Some("pixel")
        );
        assert_eq!(
            answer(&mut index, "POST", "http://a/search", "q=clamp").as_deref(),
            Some("clamps")
        );
        assert_eq!(
            answer(&mut index, "POST", "http://a/search", "q=hammer").as_deref(),
            Some("hammers")
        );
        // A body the archive never saw (hidden as a secret, say): the URL's responses in order.
        assert_eq!(
            answer(&mut index, "POST", "http://a/search", "q=saw").as_deref(),
            Some("hammers")
        );
    }

    #[test]
    fn other_parameter_values_get_the_closest_recorded_one() {
        let mut index = index(vec![
            exchange("GET", "http://a/product.html?id=1&lang=en", "", "one"),
            exchange("GET", "http://a/product.html?id=9&lang=en", "", "nine"),
        ]);
        assert_eq!(
            answer(&mut index, "GET", "http://a/product.html?lang=en&id=9", "").as_deref(),
            Some("nine")
        );
        assert_eq!(
            answer(&mut index, "GET", "http://a/product.html?id=1&lang=fr", "").as_deref(),
            Some("one")
        );
        assert_eq!(
            answer(&mut index, "GET", "http://a/product.html?id=2", ""),
            None,
            "other names"
        );
        assert_eq!(
            answer(&mut index, "GET", "http://b/product.html?id=1&lang=en", ""),
            None,
            "another origin"
        );
    }

    #[test]
    fn what_counts_as_a_cache_buster() {
        for (name, value) in [
            ("_", "1"),
            ("_dc", "x"),
            ("t", "1712345678"),
            ("x", "1712345678901"),
            ("r", "0.123456789"),
        ] {
            assert!(is_cache_buster(name, value), "{name}={value}");
        }
        for (name, value) in [
            ("id", "42"),
            ("t", "abc"),
            ("page", "2"),
            ("v", "1.2.3"),
            ("zip", "123456789"),
        ] {
            assert!(!is_cache_buster(name, value), "{name}={value}");
        }
    }
}
