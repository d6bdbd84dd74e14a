//! Recording an episode's archive (`--archive`). The browser's interception hands each response
//! over with its request (`server/src/chromium/intercept/archive.rs`); they wait in memory until the session has seen
//! the step that made them, so that a secret the person typed in that step is known, and are then
//! handed to the server's archive writer thread with every secret hidden (`store`): the disk is
//! never on a step's path. Bounded: a body longer than `BROWSER_ARCHIVE_BODY_MB` is left out, a
//! response past `BROWSER_ARCHIVE_EPISODE_MB` is not kept, and both are counted
//! (`ArchiveRef::left_out`, in the episode line). Requests to the server's own address are never
//! kept.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Mutex;

use browserenv_archive::{ArchiveInfo, ArchiveWriter, Exchange, Header};
use browserenv_collect::trajectory::{ArchiveLeftOut, ArchiveRef};

use super::{ArchiveLimits, TypedSecrets};
use browserenv::secrets::Secrets;

/// What to do about a response's body, before it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyPlan {
    /// Read it (DevTools hands it over whole).
    Read,
    /// Keep the response without it: too long, or a stream that never ends.
    LeaveOut,
    /// There is none (a redirect, 204, 304).
    None,
    /// Do not keep this response at all: the episode's archive is full.
    Skip,
}

/// One episode's archive being recorded.
pub struct Recording {
    reference: String,
    path: PathBuf,
    limits: ArchiveLimits,
    /// The port the server listens on: loopback requests to it are the server's own routes.
    server_port: Option<u16>,
    files: ArchiveFiles,
    typed: TypedSecrets,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Exchanges waiting for `store`, with the browser's id of their request.
    pending: Vec<(Option<String>, Exchange)>,
    /// The `Set-Cookie` headers of responses by the browser's request id, in the order the
    /// responses came (a redirect's hops share an id), each with its status (`saw_cookies`).
    cookies: HashMap<String, std::collections::VecDeque<(u16, Vec<String>)>>,
    cookie_entries: usize,
    kept_bytes: u64,
    responses: u64,
    left_out: ArchiveLeftOut,
    ended: bool,
    /// Cookies set in answer to a request that carried a secret (`SessionCookies`).
    session_cookies: SessionCookies,
}

/// Cookies a secret bought: set in answer to a request that carried one (a sign-in), they are as
/// good as the secret. Stored with their values replaced, in the `Set-Cookie` that set them and
/// every `Cookie` that sends them back (a replay answers with the recorded value replaced), and a
/// value long enough to be no common word (`SESSION_COOKIE_TEXT`) hidden in any text too.
#[derive(Default)]
struct SessionCookies {
    pairs: Vec<(String, String)>,
    texts: Secrets,
}

/// A session cookie's value this long is hidden wherever an archive holds it, not only in
/// cookie headers.
const SESSION_COOKIE_TEXT: usize = 8;

/// The most session cookies remembered per episode.
const SESSION_COOKIES_KEPT: usize = 256;

impl SessionCookies {
    /// Take the cookies `exchange`'s response sets when its request `carried` a secret, and
    /// hide every session cookie in it.
    fn hide(&mut self, exchange: &mut Exchange, carried: bool) {
        if carried {
            for (name, value) in exchange.response.headers.iter() {
                if !name.eq_ignore_ascii_case("set-cookie")
                    || self.pairs.len() >= SESSION_COOKIES_KEPT
                {
                    continue;
                }
                let pair = value.split(';').next().unwrap_or_default();
                if let Some((cookie, held)) = pair.split_once('=') {
                    let (cookie, held) = (cookie.trim(), held.trim());
                    // A value that holds a secret is hidden already, as the secret.
                    let fresh = !held.is_empty()
                        && !held.contains("<redacted:")
                        && !self.pairs.iter().any(|(c, v)| c == cookie && v == held);
                    if fresh {
                        self.pairs.push((cookie.to_string(), held.to_string()));
                        if held.chars().count() >= SESSION_COOKIE_TEXT {
                            self.texts.add(held);
                        }
                    }
                }
            }
        }
        if self.pairs.is_empty() {
            return;
        }
        for (name, value) in exchange.response.headers.iter_mut() {
            if name.eq_ignore_ascii_case("set-cookie") {
                *value = self.replaced(value, ';');
            }
        }
        for (name, value) in exchange.request.headers.iter_mut() {
            if name.eq_ignore_ascii_case("cookie") {
                *value = self.replaced(value, ';');
            }
        }
        hide_secrets(exchange, &self.texts);
    }

    /// A cookie header (`a=1; b=2`, or a `Set-Cookie` and its attributes) with the session
    /// cookies' values replaced.
    fn replaced(&self, header: &str, separator: char) -> String {
        header
            .split(separator)
            .map(|part| {
                let Some((name, value)) = part.split_once('=') else {
                    return part.to_string();
                };
                let secret = self
                    .pairs
                    .iter()
                    .any(|(c, v)| c == name.trim() && v == value.trim());
                if secret {
                    format!("{name}={}", browserenv::secrets::redacted(value.trim()))
                } else {
                    part.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(&separator.to_string())
    }
}

impl Recording {
    /// Start the archive `reference` (relative to the recording folder) at `path`: the writer
    /// thread creates it with its `warcinfo`.
    pub(super) fn start(
        reference: String,
        path: PathBuf,
        info: ArchiveInfo,
        limits: ArchiveLimits,
        server_port: Option<u16>,
        files: ArchiveFiles,
        typed: TypedSecrets,
    ) -> Recording {
        files.send(FileJob::Create {
            path: path.clone(),
            info,
        });
        Recording {
            reference,
            path,
            limits,
            server_port,
            files,
            typed,
            state: Mutex::new(State::default()),
        }
    }

    /// Whether a request to `url` is kept: a web page's, not the server's own routes.
    pub fn keeps(&self, url: &str) -> bool {
        url::Url::parse(url).is_ok_and(|url| {
            matches!(url.scheme(), "http" | "https")
                && !crate::operations::access::names_this_server(&url, self.server_port)
        })
    }

    /// What to do about the body of a response with this status and these headers.
    pub fn body_plan(&self, status: u16, headers: &[Header]) -> BodyPlan {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_ascii_lowercase())
        };
        let declared = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
        let redirect = (300..400).contains(&status) && header("location").is_some();
        // A stream has no end to wait for: DevTools would hold the response until it has one.
        let content_type = header("content-type").unwrap_or_default();
        let stream = content_type.starts_with("text/event-stream")
            || content_type.starts_with("multipart/x-mixed-replace");
        let too_long = declared.is_some_and(|length| length > self.limits.body_bytes);
        let body_kept = !(too_long || stream);
        let Ok(state) = self.state.lock() else {
            return BodyPlan::Skip;
        };
        let adds = if body_kept { declared.unwrap_or(0) } else { 0 };
        if state.ended || state.kept_bytes + adds > self.limits.episode_bytes {
            return BodyPlan::Skip;
        }
        if matches!(status, 101 | 204 | 304) || redirect {
            return BodyPlan::None;
        }
        if !body_kept {
            return BodyPlan::LeaveOut;
        }
        BodyPlan::Read
    }

    /// The most of a body kept.
    pub fn body_limit(&self) -> u64 {
        self.limits.body_bytes
    }

    /// The `Set-Cookie` headers of a response (`network_id`: the browser's request id), which
    /// DevTools leaves out of an intercepted response's headers and reports apart: they join
    /// their exchange when it is stored.
    pub fn saw_cookies(&self, network_id: &str, status: u16, set_cookies: Vec<String>) {
        /// Responses whose cookies wait for their exchange; older ones are let go.
        const MOST: usize = 10_000;
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.ended || state.cookie_entries >= MOST {
            return;
        }
        state.cookie_entries += 1;
        state
            .cookies
            .entry(network_id.to_string())
            .or_default()
            .push_back((status, set_cookies));
    }

    /// Keep an exchange (the archive full, it is only counted); `network_id` is the browser's
    /// id of its request, for its cookies (`saw_cookies`).
    pub fn keep(&self, exchange: Exchange, network_id: Option<String>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.ended {
            return;
        }
        let size = exchange.response.body.len() as u64
            + exchange.request.body.len() as u64
            + exchange.request.url.len() as u64;
        if state.kept_bytes + size > self.limits.episode_bytes {
            state.left_out.responses += 1;
            return;
        }
        if exchange.response.body_left_out {
            state.left_out.bodies += 1;
        }
        state.kept_bytes += size;
        state.responses += 1;
        state.pending.push((network_id, exchange));
    }

    /// Count a response not kept at all (`BodyPlan::Skip`).
    pub fn skipped(&self) {
        if let Ok(mut state) = self.state.lock() {
            if !state.ended {
                state.left_out.responses += 1;
            }
        }
    }

    /// Hand what is kept so far to the writer, every secret of `secrets` (the session's) and of
    /// the embedding program hidden.
    pub fn store(&self, secrets: &Secrets) {
        let pending = match self.state.lock() {
            Ok(mut state) => {
                let pending = std::mem::take(&mut state.pending);
                pending
                    .into_iter()
                    .map(|(id, mut exchange)| {
                        let found = id.and_then(|id| {
                            let hops = state.cookies.get_mut(&id)?;
                            let status = exchange.response.status;
                            let at = hops.iter().position(|(s, _)| *s == status)?;
                            hops.remove(at).map(|(_, cookies)| cookies)
                        });
                        if let Some(cookies) = found {
                            state.cookie_entries = state.cookie_entries.saturating_sub(1);
                            exchange
                                .response
                                .headers
                                .extend(cookies.into_iter().map(|c| ("Set-Cookie".to_string(), c)));
                        }
                        exchange
                    })
                    .collect::<Vec<_>>()
            }
            Err(_) => return,
        };
        if pending.is_empty() {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let hidden: Vec<Exchange> = pending
            .into_iter()
            .map(|mut exchange| {
                let mut carried = hide_secrets(&mut exchange, secrets);
                carried |= self
                    .typed
                    .with(|typed| hide_secrets(&mut exchange, typed))
                    .unwrap_or(false);
                state.session_cookies.hide(&mut exchange, carried);
                exchange
            })
            .collect();
        drop(state);
        self.files.send(FileJob::Append {
            path: self.path.clone(),
            exchanges: hidden,
        });
    }

    /// The episode is over: store the rest and close the file; later responses are not kept.
    pub fn end(&self, secrets: &Secrets) {
        self.store(secrets);
        let first = self
            .state
            .lock()
            .map(|mut state| !std::mem::replace(&mut state.ended, true))
            .unwrap_or(false);
        if first {
            self.files.send(FileJob::Finish {
                path: self.path.clone(),
            });
        }
    }

    /// The archive as the episode line names it.
    pub fn reference(&self) -> ArchiveRef {
        let state = self.state.lock().ok();
        ArchiveRef {
            file: self.reference.clone(),
            responses: state.as_ref().map_or(0, |s| s.responses),
            left_out: state.map(|s| s.left_out).unwrap_or_default(),
        }
    }
}

/// The one point where a person's secrets are hidden in what an archive keeps: the URL, every
/// header (a `Referer`, a `Location`, a cookie, `Authorization: Basic`) and every body but
/// pictures, fonts, audio and video, in whatever spelling a page may have carried them
/// (`Secrets::hidden`). Whether the request carried one (its response's cookies are then as good
/// as the secret: `SessionCookies`).
pub fn hide_secrets(exchange: &mut Exchange, secrets: &Secrets) -> bool {
    if secrets.is_empty() {
        return false;
    }
    let request = &mut exchange.request;
    let mut carried = hide(&mut request.url, secrets);
    for (_, value) in request.headers.iter_mut() {
        carried |= hide(value, secrets);
    }
    let request_type = request.header("content-type").unwrap_or("").to_string();
    carried |= hide_in_body(&mut request.body, &request_type, secrets);
    let response = &mut exchange.response;
    for (_, value) in response.headers.iter_mut() {
        hide(value, secrets);
    }
    let response_type = response.header("content-type").unwrap_or("").to_string();
    hide_in_body(&mut response.body, &response_type, secrets);
    carried
}

/// Hide the secrets in `text`; whether there were any.
fn hide(text: &mut String, secrets: &Secrets) -> bool {
    match secrets.hidden(text) {
        std::borrow::Cow::Owned(shown) => {
            *text = shown;
            true
        }
        std::borrow::Cow::Borrowed(_) => false,
    }
}

fn hide_in_body(body: &mut Vec<u8>, content_type: &str, secrets: &Secrets) -> bool {
    let media = ["image/", "font/", "audio/", "video/"];
    if body.is_empty() || media.iter().any(|m| content_type.starts_with(m)) {
        return false;
    }
    let text = String::from_utf8_lossy(body);
    match secrets.hidden(&text) {
        std::borrow::Cow::Owned(shown) => {
            *body = shown.into_bytes();
            true
        }
        std::borrow::Cow::Borrowed(_) => false,
    }
}

/// The server's archive writer: one thread, so the disk is never on a step's path and each
/// archive's records go in the order they were handed over.
#[derive(Clone)]
pub struct ArchiveFiles(Sender<FileJob>);

pub(super) enum FileJob {
    Create {
        path: PathBuf,
        info: ArchiveInfo,
    },
    Append {
        path: PathBuf,
        exchanges: Vec<Exchange>,
    },
    Finish {
        path: PathBuf,
    },
    /// Everything handed over before is written: stop.
    Stop,
}

impl ArchiveFiles {
    /// Start the writer thread; it ends when every handle is gone, finishing what is open.
    pub fn start() -> std::io::Result<(ArchiveFiles, std::thread::JoinHandle<()>)> {
        let (jobs, inbox) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("archive-writer".into())
            .spawn(move || write_archives(inbox))?;
        Ok((ArchiveFiles(jobs), thread))
    }

    fn send(&self, job: FileJob) {
        let _ = self.0.send(job);
    }

    /// Ask the thread to stop once it has written everything handed to it so far.
    pub fn stop(&self) {
        self.send(FileJob::Stop);
    }
}

fn write_archives(inbox: Receiver<FileJob>) {
    let mut open: HashMap<PathBuf, ArchiveWriter> = HashMap::new();
    for job in inbox {
        match job {
            FileJob::Create { path, info } => match ArchiveWriter::create(&path, &info) {
                Ok(writer) => {
                    open.insert(path, writer);
                }
                Err(err) => tracing::error!("cannot write the archive {}: {err}", path.display()),
            },
            FileJob::Append { path, exchanges } => {
                let Some(writer) = open.get_mut(&path) else {
                    continue;
                };
                for exchange in &exchanges {
                    if let Err(err) = writer.append(exchange) {
                        tracing::error!(
                            "the archive {} lost a response ({}): {err}",
                            path.display(),
                            exchange.request.url
                        );
                    }
                }
            }
            FileJob::Finish { path } => {
                if let Some(writer) = open.remove(&path) {
                    if let Err(err) = writer.finish() {
                        tracing::error!("the archive {} was not synced: {err}", path.display());
                    }
                }
            }
            FileJob::Stop => break,
        }
    }
    for (path, writer) in open {
        if let Err(err) = writer.finish() {
            tracing::error!("the archive {} was not synced: {err}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use browserenv_archive::{Request, Response};

    fn exchange(url: &str, body: &str, content_type: &str) -> Exchange {
        Exchange {
            request: Request {
                method: "POST".into(),
                url: url.into(),
                headers: vec![("Referer".into(), format!("{url}#from"))],
                body: body.as_bytes().to_vec(),
            },
            response: Response {
                status: 200,
                reason: "OK".into(),
                headers: vec![("Content-Type".into(), content_type.into())],
                body: format!("welcome {body}").into_bytes(),
                body_left_out: false,
            },
            date: std::time::SystemTime::now(),
        }
    }

    #[test]
    fn secrets_are_hidden_in_urls_headers_and_text_bodies_however_encoded() {
        let mut secrets = Secrets::default();
        secrets.add("hunter2 p@ss");
        let mut sent = exchange(
            "http://a.example/login?pw=hunter2+p%40ss",
            "pw=hunter2+p%40ss",
            "text/html",
        );
        hide_secrets(&mut sent, &secrets);
        let shown = format!("{sent:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("p%40ss"),
            "{shown}"
        );
        assert!(shown.contains("<redacted:12 characters>"), "{shown}");
        // A picture is not text: its bytes stay as they are.
        let mut picture = exchange("http://a.example/x.png", "hunter2 p@ss", "image/png");
        hide_secrets(&mut picture, &secrets);
        assert_eq!(picture.response.body, b"welcome hunter2 p@ss");
    }

    /// A cookie set in answer to a request that carried a secret is stored with its value
    /// replaced, where it is set and where it is sent back; other cookies stay as they are.
    #[test]
    fn cookies_a_secret_bought_are_stored_replaced() {
        let mut secrets = Secrets::default();
        secrets.add("hunter2pass");
        let mut cookies = SessionCookies::default();
        let mut sign_in = exchange("http://a/login", "pw=hunter2pass", "text/html");
        sign_in.response.headers.extend([
            (
                "Set-Cookie".into(),
                "sid=0123456789abcdef; Path=/; HttpOnly".into(),
            ),
            ("Set-Cookie".into(), "n=7; Path=/".into()),
        ]);
        let carried = hide_secrets(&mut sign_in, &secrets);
        assert!(carried);
        cookies.hide(&mut sign_in, carried);
        let set: Vec<&str> = sign_in
            .response
            .headers
            .iter()
            .filter(|(n, _)| n == "Set-Cookie")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(
            set,
            [
                "sid=<redacted:16 characters>; Path=/; HttpOnly",
                "n=<redacted:1 characters>; Path=/"
            ]
        );
        let mut later = exchange("http://a/account?s=0123456789abcdef", "", "text/html");
        later
            .request
            .headers
            .push(("Cookie".into(), "lang=en; sid=0123456789abcdef; n=7".into()));
        later
            .response
            .headers
            .push(("Set-Cookie".into(), "lang=fr; Path=/".into()));
        let carried = hide_secrets(&mut later, &secrets);
        assert!(!carried);
        cookies.hide(&mut later, carried);
        assert_eq!(
            later.request.header("cookie"),
            Some("lang=en; sid=<redacted:16 characters>; n=<redacted:1 characters>")
        );
        assert_eq!(
            later.request.url,
            "http://a/account?s=<redacted:16 characters>"
        );
        assert_eq!(later.response.header("set-cookie"), Some("lang=fr; Path=/"));
    }

    #[test]
    fn bodies_and_responses_past_the_bounds_are_left_out_and_counted() {
        let (files, _thread) = ArchiveFiles::start().unwrap();
        let dir = std::env::temp_dir().join(format!("browserenv-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let limits = ArchiveLimits {
            body_bytes: 100,
            episode_bytes: 300,
        };
        let recording = Recording::start(
            "archives/e.warc.gz".into(),
            dir.join("e.warc.gz"),
            ArchiveInfo::default(),
            limits,
            Some(8000),
            files,
            TypedSecrets::default(),
        );
        let length = |n: u64| vec![("Content-Length".to_string(), n.to_string())];
        assert_eq!(recording.body_plan(200, &length(10)), BodyPlan::Read);
        assert_eq!(recording.body_plan(200, &length(101)), BodyPlan::LeaveOut);
        assert_eq!(recording.body_plan(200, &length(1000)), BodyPlan::LeaveOut);
        assert_eq!(recording.body_plan(200, &length(99)), BodyPlan::Read);
        let stream = vec![("content-type".to_string(), "text/event-stream".to_string())];
        assert_eq!(recording.body_plan(200, &stream), BodyPlan::LeaveOut);
        let moved = vec![("Location".to_string(), "/b".to_string())];
        assert_eq!(recording.body_plan(302, &moved), BodyPlan::None);
        assert!(recording.keeps("http://example.com/"));
        assert!(!recording.keeps("http://127.0.0.1:8000/sessions"));
        assert!(!recording.keeps("data:text/plain,x"));

        let mut left_out = exchange("http://a/big", "", "text/html");
        left_out.response.body = Vec::new();
        left_out.response.body_left_out = true;
        recording.keep(left_out, None);
        for n in 0..5 {
            recording.keep(
                exchange(&format!("http://a/{n}"), &"x".repeat(60), "text/html"),
                None,
            );
        }
        let reference = recording.reference();
        assert_eq!(reference.file, "archives/e.warc.gz");
        assert_eq!(
            (reference.responses, reference.left_out),
            (
                3,
                ArchiveLeftOut {
                    bodies: 1,
                    responses: 3
                }
            )
        );
        recording.end(&Secrets::default());
        recording.keep(exchange("http://a/late", "", "text/html"), None);
        assert_eq!(
            recording.reference().responses,
            3,
            "nothing is kept once it ended"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn cookies_devtools_reports_apart_join_their_response_hop_by_hop() {
        let (files, writer) = ArchiveFiles::start().unwrap();
        let dir = std::env::temp_dir().join(format!("browserenv-cookies-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let recording = Recording::start(
            "archives/c.warc.gz".into(),
            dir.join("c.warc.gz"),
            ArchiveInfo::default(),
            ArchiveLimits::default(),
            None,
            files,
            TypedSecrets::default(),
        );
        let mut moved = exchange("http://a/go", "", "text/html");
        moved.response.status = 302;
        let landed = exchange("http://a/landed", "", "text/html");
        recording.saw_cookies("7", 302, vec!["a=1; Path=/".into()]);
        recording.saw_cookies("7", 200, vec![]);
        recording.keep(moved, Some("7".into()));
        recording.keep(landed, Some("7".into()));
        recording.end(&Secrets::default());
        drop(recording);
        writer.join().unwrap();
        let archive =
            browserenv_archive::read(&dir.join("c.warc.gz"), &Default::default()).unwrap();
        let cookies = |n: usize| archive.exchanges[n].response.header("set-cookie");
        assert_eq!((cookies(0), cookies(1)), (Some("a=1; Path=/"), None));
        std::fs::remove_dir_all(&dir).ok();
    }
}
