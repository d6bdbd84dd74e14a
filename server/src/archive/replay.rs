//! Replaying an episode from an archive: every request a page makes is answered from it
//! (`server/src/chromium/intercept/archive.rs` intercepts them), none reaches the network. A request the archive lacks
//! gets a 404 and is listed in the next observation (`metadata.archive_misses`), as is one whose
//! record cannot be read (with why). Bodies are read from the file when first asked for, within
//! the episode's budget (`BROWSER_ARCHIVE_EPISODE_MB`), and kept for the episode. Recorded cookies
//! are made fit to replay (`replayed_set_cookie`), and nothing recorded can send the page to the
//! server's own address. With a `seed`, the page's clock and `Math.random` are fixed
//! (`clock.js`), so the same actions on the same archive give the same pixels.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use browserenv_archive::{
    is_transfer_header, replayed_set_cookie, Budget, Catalog, Header, ReplayIndex, Response,
};
use serde_json::{json, Map, Value};

use crate::capped::{clip, Capped};

/// The page's clock in a replay (see the file).
const CLOCK_JS: &str = include_str!("clock.js");

/// The page clock of `clock.js`, for every new document of an episode: it reads `start` (ms
/// since the epoch) when the document starts; without a seed it runs with the machine's clock,
/// `offset` ms from it; with one it is the page's own and `Math.random` is seeded (see the file).
/// Replays use it, and so do MiniWoB++ episodes (`miniwob/`), which need the same
/// pixels from the same seed and actions.
pub fn clock_script(start: i64, offset: i64, seed: Option<u64>) -> String {
    let seed = match seed {
        Some(seed) => ((seed ^ (seed >> 32)) & 0xffff_ffff).to_string(),
        None => "null".into(),
    };
    CLOCK_JS
        .replace("__START__", &start.to_string())
        .replace("__OFFSET__", &offset.to_string())
        .replace("__SEED__", &seed)
}

/// How a paused request is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Fulfill {
        status: u16,
        phrase: String,
        headers: Vec<Header>,
        body: Vec<u8>,
    },
    /// Failed as if blocked: never the network, never the server itself.
    Refuse,
}

/// What the archive has for a request, decided in the order the page asks (a URL asked again
/// gets the next recorded response): an answer now, or an entry whose record is to be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    Now(Answer),
    Load(usize),
}

/// One episode being answered from an archive.
pub struct Replaying {
    /// The archive as the reset named it.
    name: String,
    index: Mutex<ReplayIndex>,
    archive: Arc<Catalog>,
    /// What this episode may decode of the archive.
    budget: Budget,
    /// Responses read so far: each record is read once an episode.
    loaded: Mutex<HashMap<usize, Arc<Response>>>,
    /// When the archive was recorded: the page's clock starts there.
    recorded: SystemTime,
    seed: Option<u64>,
    server_port: Option<u16>,
    /// Requests the archive lacked since the last observation.
    misses: Mutex<Capped<String>>,
    answered: AtomicU64,
    missed: AtomicU64,
}

impl Replaying {
    pub(super) fn new(
        name: String,
        archive: Arc<Catalog>,
        seed: Option<u64>,
        server_port: Option<u16>,
    ) -> Replaying {
        let recorded = archive.info.recorded.unwrap_or_else(SystemTime::now);
        Replaying {
            name,
            index: Mutex::new(ReplayIndex::new(archive.clone())),
            budget: Budget::new(archive.limits().archive_bytes),
            archive,
            loaded: Mutex::new(HashMap::new()),
            recorded,
            seed,
            server_port,
            misses: Mutex::new(Capped::default()),
            answered: AtomicU64::new(0),
            missed: AtomicU64::new(0),
        }
    }

    /// The answer to a request the page makes, read at once (the fake browser; Chromium's
    /// interception picks, then loads off its event loop).
    pub fn answer(
        &self,
        method: &str,
        url: &str,
        body: &[u8],
        preflight: Option<&Header>,
    ) -> Answer {
        match self.pick(method, url, body, preflight) {
            Pick::Now(answer) => answer,
            Pick::Load(index) => self.load(index, url),
        }
    }

    /// What answers a request the page makes (in the order it asks).
    pub fn pick(&self, method: &str, url: &str, body: &[u8], preflight: Option<&Header>) -> Pick {
        if self.is_the_server(url) {
            self.missed(url.to_string());
            return Pick::Now(Answer::Refuse);
        }
        let found = self
            .index
            .lock()
            .ok()
            .and_then(|mut index| index.answer(method, url, body));
        match found {
            Some(index) => Pick::Load(index),
            // A CORS preflight the recording did not see (Chromium sends them itself): allowed,
            // so the request it precedes can be answered or missed on its own.
            None => match preflight {
                Some((_, origin)) => Pick::Now(Answer::Fulfill {
                    status: 204,
                    phrase: "No Content".into(),
                    headers: vec![
                        ("Access-Control-Allow-Origin".into(), origin.clone()),
                        ("Access-Control-Allow-Credentials".into(), "true".into()),
                        ("Access-Control-Allow-Methods".into(), "*".into()),
                        ("Access-Control-Allow-Headers".into(), "*".into()),
                    ],
                    body: Vec::new(),
                }),
                None => {
                    self.missed(url.to_string());
                    Pick::Now(not_found("Not in the archive"))
                }
            },
        }
    }

    /// The recorded response of entry `index` as the answer to `url` (blocking: the record may
    /// be read from the file). One that cannot be read is a miss, with why.
    pub fn load(&self, index: usize, url: &str) -> Answer {
        let cached = self
            .loaded
            .lock()
            .ok()
            .and_then(|loaded| loaded.get(&index).cloned());
        let response = match cached {
            Some(response) => response,
            None => match self.archive.load(index, &self.budget) {
                Ok(response) => {
                    let response = Arc::new(response);
                    if let Ok(mut loaded) = self.loaded.lock() {
                        loaded.insert(index, response.clone());
                    }
                    response
                }
                Err(why) => {
                    tracing::warn!("the archive {}: {why}", self.name);
                    self.missed(format!("{url} ({why})"));
                    return not_found("The archive's record cannot be read");
                }
            },
        };
        let date = self.archive.entries[index].date;
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        let mut headers = Vec::with_capacity(response.headers.len());
        for (name, value) in &response.headers {
            if is_transfer_header(name) {
                continue;
            }
            if name.eq_ignore_ascii_case("set-cookie") {
                if let Some(cookie) = replayed_set_cookie(value, &host, date) {
                    headers.push((name.clone(), cookie));
                }
                continue;
            }
            headers.push((name.clone(), value.clone()));
        }
        // A recorded redirect may lead anywhere but to this server.
        if let Some(location) = response.redirect() {
            let target = url::Url::parse(url).and_then(|base| base.join(location));
            if target.is_ok_and(|target| self.is_the_server(target.as_str())) {
                self.missed(url.to_string());
                return Answer::Refuse;
            }
        }
        self.answered.fetch_add(1, Ordering::Relaxed);
        Answer::Fulfill {
            status: response.status,
            phrase: response.reason_phrase().to_string(),
            headers,
            body: response.body.clone(),
        }
    }

    /// A request that never goes to the network in a replay (a WebSocket): listed as missed.
    pub fn unanswerable(&self, url: &str, kind: &str) {
        self.missed(format!("{url} ({kind}: not replayed)"));
    }

    fn is_the_server(&self, url: &str) -> bool {
        url::Url::parse(url)
            .is_ok_and(|url| crate::operations::access::names_this_server(&url, self.server_port))
    }

    fn missed(&self, what: String) {
        self.missed.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut misses) = self.misses.lock() {
            misses.push(clip(&what));
        }
    }

    /// The script that sets the page's clock (and with a seed `Math.random`), for every new
    /// document of the episode.
    pub fn clock_script(&self) -> String {
        let millis = |at: SystemTime| {
            at.duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis()
        };
        let start = millis(self.recorded) as i64;
        let offset = start - millis(SystemTime::now()) as i64;
        clock_script(start, offset, self.seed)
    }

    /// What the observation says of the replay: the archive, how many requests it answered and
    /// missed, and this step's misses.
    pub fn describe(&self, metadata: &mut Map<String, Value>) {
        metadata.insert(
            "archive".into(),
            json!({
                "replay": self.name,
                "answered": self.answered.load(Ordering::Relaxed),
                "missed": self.missed.load(Ordering::Relaxed),
            }),
        );
        let misses = self
            .misses
            .lock()
            .map(|mut misses| std::mem::take(&mut *misses))
            .unwrap_or_default();
        if !misses.is_empty() {
            metadata.insert("archive_misses".into(), json!(misses.kept));
        }
        if misses.more > 0 {
            metadata.insert("archive_misses_more".into(), json!(misses.more));
        }
    }
}

fn not_found(text: &str) -> Answer {
    Answer::Fulfill {
        status: 404,
        phrase: "Not Found".into(),
        headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
        body: text.as_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use browserenv_archive::{ArchiveInfo, ArchiveWriter, Exchange, Request};

    fn replaying(responses: Vec<(&str, u16, Vec<Header>)>) -> Replaying {
        let exchanges: Vec<Exchange> = responses
            .into_iter()
            .map(|(url, status, headers)| Exchange {
                request: Request {
                    method: "GET".into(),
                    url: url.into(),
                    headers: Vec::new(),
                    body: Vec::new(),
                },
                response: Response {
                    status,
                    reason: String::new(),
                    headers,
                    body: b"body".to_vec(),
                    body_left_out: false,
                },
                date: UNIX_EPOCH + std::time::Duration::from_secs(1_764_583_200),
            })
            .collect();
        let dir = super::super::tests::folder("replay");
        let path = dir.join("a.warc.gz");
        let info = ArchiveInfo {
            recorded: Some(UNIX_EPOCH + std::time::Duration::from_secs(1_764_583_200)),
            ..ArchiveInfo::default()
        };
        let mut writer = ArchiveWriter::create(&path, &info).unwrap();
        for exchange in &exchanges {
            writer.append(exchange).unwrap();
        }
        writer.finish().unwrap();
        let archive = browserenv_archive::open(&path, "a.warc.gz", &Default::default()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        Replaying::new("a.warc.gz".into(), Arc::new(archive), Some(7), Some(8000))
    }

    #[test]
    fn answers_come_from_the_archive_and_misses_are_listed() {
        let header = |n: &str, v: &str| (n.to_string(), v.to_string());
        let replay = replaying(vec![
            (
                "http://a.example/",
                200,
                vec![
                    header("Content-Type", "text/html"),
                    header("Content-Length", "4"),
                    header("Set-Cookie", "sid=1; Expires=Tue, 02 Dec 2025 10:00:00 GMT"),
                    header("Set-Cookie", "evil=1; Domain=bank.example"),
                ],
            ),
            (
                "http://a.example/go",
                302,
                vec![header("Location", "http://127.0.0.1:8000/sessions")],
            ),
        ]);
        let Answer::Fulfill {
            status,
            phrase,
            headers,
            body,
        } = replay.answer("GET", "http://a.example/", b"", None)
        else {
            panic!("answered")
        };
        assert_eq!(
            (status, phrase.as_str(), body.as_slice()),
            (200, "OK", &b"body"[..])
        );
        assert_eq!(
            headers,
            vec![
                header("Content-Type", "text/html"),
                header("Set-Cookie", "sid=1; Max-Age=86400")
            ]
        );
        // To the server itself: never, directly or by a recorded redirect.
        assert_eq!(
            replay.answer("GET", "http://localhost:8000/sessions", b"", None),
            Answer::Refuse
        );
        assert_eq!(
            replay.answer("GET", "http://a.example/go", b"", None),
            Answer::Refuse
        );
        let missing = replay.answer("GET", "http://a.example/missing.css", b"", None);
        assert!(matches!(missing, Answer::Fulfill { status: 404, .. }));
        let origin = header("Origin", "http://a.example");
        let preflight = replay.answer("OPTIONS", "http://api.example/x", b"", Some(&origin));
        assert!(matches!(preflight, Answer::Fulfill { status: 204, .. }));

        let mut metadata = Map::new();
        replay.describe(&mut metadata);
        assert_eq!(
            metadata["archive"],
            json!({"replay": "a.warc.gz", "answered": 1, "missed": 3})
        );
        assert_eq!(
            metadata["archive_misses"],
            json!([
                "http://localhost:8000/sessions",
                "http://a.example/go",
                "http://a.example/missing.css"
            ])
        );
        let mut next = Map::new();
        replay.describe(&mut next);
        assert!(
            next.get("archive_misses").is_none(),
            "each step lists its own misses"
        );
    }

    #[test]
    fn the_clock_starts_at_the_recorded_time() {
        let script = replaying(vec![("http://a.example/", 200, Vec::new())]).clock_script();
        assert!(script.contains("const START = 1764583200000;"), "{script}");
        assert!(script.contains("const SEED = 7;"));
        for placeholder in ["__START__", "__OFFSET__", "__SEED__"] {
            assert!(!script.contains(placeholder), "{placeholder}");
        }
    }
}
