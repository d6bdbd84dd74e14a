//! The DevTools connection to a browser we launch: a pair of pipes (`--remote-debugging-pipe`:
//! Chromium reads commands on its fd 3 and writes answers and events on its fd 4, each message
//! ending in a NUL byte), never a TCP port. A port on 127.0.0.1 with no authentication would let
//! any local user, or a sidecar, drive every session and read its cookies, around the server's
//! token; a pipe is open to the server alone.
//!
//! chromiumoxide speaks only WebSocket, so the server offers it the pipe as a WebSocket of its own:
//! a loopback port, a path of 256 random bits that never leaves this process, one connection
//! accepted (a wrong path is refused and looked for no further), then the listener is closed.
//! Nobody else can name the path, and once the server is connected nobody else can connect at all.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

/// The most one DevTools message may hold: far above a screenshot's base64 (800x600: 2 MiB at
/// most) and what the probe returns (bounded, `probe.js`). A page can make an answer as big as it
/// likes (a script's value, a probe it replaced in a tab opened before the probe was in): such an
/// answer is not passed on but replaced by an error for its call, so the page costs the server
/// nothing and its step fails (`Oversize`).
const MESSAGE_LIMIT: usize = 32 * 1024 * 1024;

/// The most one event the server never reads may hold: a page that logs strings of 30 MiB in a
/// loop would otherwise have each one (and its copy in `Log.entryAdded`) parsed on the handler
/// every session shares. Such events over this size are dropped as they come.
const UNUSED_EVENT_LIMIT: usize = 1024 * 1024;

/// Events the server never subscribes to for itself but a page can fill at will: how each one
/// starts (Chromium writes an event's method first: `{"method":"Runtime.consoleAPICalled",…`).
const UNUSED_EVENTS: &[&[u8]] = &[
    b"{\"method\":\"Runtime.consoleAPICalled\"",
    b"{\"method\":\"Log.entryAdded\"",
    b"{\"method\":\"Runtime.exceptionThrown\"",
];

/// How long one connection to the bridge may take to say which path it wants.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);

/// The browser's ends of the pipes, given to it as fds 3 and 4.
pub struct BrowserEnds {
    commands: OwnedFd,
    answers: OwnedFd,
}

/// The server's ends: where commands go, where answers and events come from.
pub struct ServerEnds {
    commands: OwnedFd,
    answers: OwnedFd,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two fds it was given room for.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds are new and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Two pipes: commands (server to browser) and answers (browser to server).
pub fn pipes() -> io::Result<(ServerEnds, BrowserEnds)> {
    let (command_read, command_write) = pipe()?;
    let (answer_read, answer_write) = pipe()?;
    Ok((
        ServerEnds {
            commands: command_write,
            answers: answer_read,
        },
        BrowserEnds {
            commands: command_read,
            answers: answer_write,
        },
    ))
}

impl BrowserEnds {
    /// The raw fds, for `install` in the child (they stay open in the parent until `close`).
    pub fn raw(&self) -> (RawFd, RawFd) {
        (self.commands.as_raw_fd(), self.answers.as_raw_fd())
    }

    /// Where commands come from and where answers go: for a stand-in browser in a test.
    pub fn into_fds(self) -> (OwnedFd, OwnedFd) {
        (self.commands, self.answers)
    }
}

/// In the forked child, before exec: the browser's ends become its fds 3 and 4 (`dup2` clears
/// close-on-exec on the copies; every other pipe fd closes at exec). Async-signal-safe.
pub fn install(commands: RawFd, answers: RawFd) -> io::Result<()> {
    // SAFETY: fcntl and dup2 on fds this process holds; both async-signal-safe.
    unsafe {
        // Copies above 4 first (closed at exec): either end may itself be 3 or 4, which the other
        // dup2 would close.
        let commands = libc::fcntl(commands, libc::F_DUPFD_CLOEXEC, 5);
        let answers = libc::fcntl(answers, libc::F_DUPFD_CLOEXEC, 5);
        if commands < 0 || answers < 0 || libc::dup2(commands, 3) < 0 || libc::dup2(answers, 4) < 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl ServerEnds {
    /// Where commands go and where answers come from: for reading the pipe without the bridge
    /// (the bench's `transport` part).
    pub fn into_fds(self) -> (OwnedFd, OwnedFd) {
        (self.commands, self.answers)
    }

    /// Ask the browser for its version and wait for the answer: the browser is up and speaks
    /// DevTools on the pipe. An early exit (the pipe closes) or silence past `timeout` is an error.
    /// Blocking.
    pub fn wait_ready(&self, timeout: Duration) -> io::Result<String> {
        let deadline = Instant::now() + timeout;
        let mut commands = std::fs::File::from(self.commands.try_clone()?);
        commands.write_all(b"{\"id\":0,\"method\":\"Browser.getVersion\"}\0")?;
        let mut answers = std::fs::File::from(self.answers.try_clone()?);
        let mut message = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !readable(answers.as_raw_fd(), left)? {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer"));
            }
            // Up to the answer's NUL and not a byte further: what follows is the relay's.
            let read = answers.read(&mut byte)?;
            if read == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the browser closed its pipe",
                ));
            }
            if byte[0] == 0 {
                break;
            }
            message.push(byte[0]);
            if message.len() > 64 * 1024 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "an answer without end",
                ));
            }
        }
        let answer: serde_json::Value = serde_json::from_slice(&message)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
        Ok(answer["result"]["product"]
            .as_str()
            .unwrap_or("")
            .to_string())
    }

    /// Offer the pipe to chromiumoxide as a WebSocket (see the module's documentation); returns
    /// its URL. The relay ends when either side does.
    pub async fn serve(self) -> io::Result<String> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let path = format!(
            "/devtools/browser/{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let url = format!("ws://{}{path}", listener.local_addr()?);
        tokio::spawn(async move {
            let Some(socket) = accept_once(listener, &path).await else {
                return;
            };
            relay(socket, self).await;
        });
        Ok(url)
    }
}

/// Whether `fd` has something to read within `wait`.
fn readable(fd: RawFd, wait: Duration) -> io::Result<bool> {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = wait.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd, ours.
    match unsafe { libc::poll(&mut poll, 1, millis) } {
        n if n < 0 => Err(io::Error::last_os_error()),
        0 => Ok(false),
        _ => Ok(true),
    }
}

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// One message from the browser being read, up to `MESSAGE_LIMIT` bytes. Past that only its head
/// is kept (for the id of the call it answers) and the rest is dropped as it comes.
#[derive(Default)]
struct Oversize {
    bytes: Vec<u8>,
    dropped: usize,
}

impl Oversize {
    /// How much of an oversize message's head is kept: `{"id":` and an id of any length.
    const HEAD: usize = 64;

    fn take(&mut self, part: &[u8]) {
        let total = self.bytes.len() + part.len();
        if self.dropped > 0 {
            self.dropped += part.len();
        } else if total > MESSAGE_LIMIT
            || (self.bytes.len() <= UNUSED_EVENT_LIMIT
                && total > UNUSED_EVENT_LIMIT
                && self.is_unused_event(part))
        {
            self.dropped = self.bytes.len() + part.len();
            self.bytes.truncate(Self::HEAD);
            let room = Self::HEAD.saturating_sub(self.bytes.len());
            self.bytes.extend_from_slice(&part[..room.min(part.len())]);
        } else {
            self.bytes.extend_from_slice(part);
        }
    }

    /// Whether the message being read, whose next part is `part`, is one of `UNUSED_EVENTS`.
    fn is_unused_event(&self, part: &[u8]) -> bool {
        let mut head = self.bytes[..self.bytes.len().min(Self::HEAD)].to_vec();
        let room = Self::HEAD.saturating_sub(head.len());
        head.extend_from_slice(&part[..room.min(part.len())]);
        UNUSED_EVENTS.iter().any(|start| head.starts_with(start))
    }

    /// The message is complete: it as it came (lone surrogates replaced, `valid_surrogates`), or
    /// for one over the limit, an error answer to its call (an event over the limit is dropped:
    /// `None`).
    fn finish(&mut self) -> Option<Vec<u8>> {
        let bytes = std::mem::take(&mut self.bytes);
        let dropped = std::mem::take(&mut self.dropped);
        if dropped == 0 {
            return Some(valid_surrogates(bytes));
        }
        // Chromium writes an answer's id first: `{"id":12,"result":…}`.
        let id = bytes.strip_prefix(b"{\"id\":").and_then(|rest| {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            std::str::from_utf8(&rest[..digits])
                .ok()?
                .parse::<u64>()
                .ok()
        });
        tracing::warn!(
            "the browser sent {dropped} bytes in one message ({}), over the limit: {}",
            id.map_or("an event".to_string(), |id| format!(
                "the answer to call {id}"
            )),
            if id.is_some() {
                "the call fails instead"
            } else {
                "dropped"
            }
        );
        let id = id?;
        Some(
            serde_json::json!({
                "id": id,
                "error": {
                    "code": -32000,
                    "message": format!("the page's answer was {dropped} bytes, over the {MESSAGE_LIMIT} bytes allowed"),
                },
            })
            .to_string()
            .into_bytes(),
        )
    }
}

/// A message with every lone UTF-16 surrogate escape (`\ud800`-`\udfff` not in a high-low pair)
/// replaced by `\ufffd`. Chromium writes a string holding one (a page's title cut inside an
/// emoji, a label a page made so on purpose) as such an escape, which is not valid JSON to
/// serde_json: chromiumoxide would drop the whole message, and its call would wait for its
/// timeout (the element under the cursor unknown, a password field not seen as one).
fn valid_surrogates(message: Vec<u8>) -> Vec<u8> {
    if !message
        .windows(3)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && matches!(w[2], b'd' | b'D'))
    {
        return message;
    }
    // The code unit of the `\uXXXX` escape at `at`, if there is one.
    let unit = |at: usize| -> Option<u16> {
        let escape = message.get(at..at + 6)?;
        if escape[0] != b'\\' || escape[1] != b'u' || !escape[2..].iter().all(u8::is_ascii_hexdigit)
        {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&escape[2..]).ok()?, 16).ok()
    };
    let high = |unit: u16| (0xD800..0xDC00).contains(&unit);
    let low = |unit: u16| (0xDC00..0xE000).contains(&unit);
    let mut out = Vec::with_capacity(message.len());
    let mut at = 0;
    while at < message.len() {
        if message[at] != b'\\' {
            out.push(message[at]);
            at += 1;
            continue;
        }
        // Every backslash starts an escape (there are none outside strings): `\\ud800` is an
        // escaped backslash, then text.
        match unit(at) {
            Some(first) if high(first) && unit(at + 6).is_some_and(low) => {
                out.extend_from_slice(&message[at..at + 12]);
                at += 12;
            }
            Some(first) if high(first) || low(first) => {
                out.extend_from_slice(b"\\ufffd");
                at += 6;
            }
            _ => {
                let end = (at + 2).min(message.len());
                out.extend_from_slice(&message[at..end]);
                at = end;
            }
        }
    }
    out
}

/// The one connection that names the path. Anything else is refused; the listener closes when
/// the right one is in (or after a minute: the launch that wanted it is long over). Handshakes
/// run side by side, each given `HANDSHAKE_TIMEOUT`: another local user who connects first and
/// says nothing (or something slowly) cannot hold the server's own connection back.
// The refusal's type is the one tungstenite's handshake callback takes.
#[allow(clippy::result_large_err)]
async fn accept_once(listener: tokio::net::TcpListener, path: &str) -> Option<Socket> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MESSAGE_LIMIT))
        .max_frame_size(Some(MESSAGE_LIMIT));
    let check = |request: &Request, response: Response| -> Result<Response, ErrorResponse> {
        if request.uri().path() == path {
            Ok(response)
        } else {
            let mut refused = ErrorResponse::new(None);
            *refused.status_mut() = axum::http::StatusCode::NOT_FOUND;
            Err(refused)
        }
    };
    let wanted = async {
        let mut handshakes = futures_util::stream::FuturesUnordered::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, _) = accepted.ok()?;
                    // Chromium's own DevTools server sets this on every socket it accepts. Without
                    // it a small message right after a large one (a command's answer after a
                    // screenshot's event) waits for the client's delayed ACK: 40 ms, on every
                    // screenshot and most resets (docs/benchmark.md, "The DevTools pipe").
                    if let Err(err) = stream.set_nodelay(true) {
                        tracing::warn!("the DevTools bridge's socket keeps Nagle's delay: {err}");
                    }
                    handshakes.push(tokio::time::timeout(
                        HANDSHAKE_TIMEOUT,
                        tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)),
                    ));
                }
                Some(handshake) = handshakes.next(), if !handshakes.is_empty() => {
                    if let Ok(Ok(socket)) = handshake {
                        return Some(socket);
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wanted)
        .await
        .ok()
        .flatten()
}

/// WebSocket text frames to the browser's commands pipe, NUL-ended messages from its answers pipe
/// to WebSocket text frames, until either side ends.
async fn relay(socket: Socket, ends: ServerEnds) {
    let ServerEnds { commands, answers } = ends;
    let (Ok(mut commands), Ok(mut answers)) = (
        tokio::net::unix::pipe::Sender::from_owned_fd(commands),
        tokio::net::unix::pipe::Receiver::from_owned_fd(answers),
    ) else {
        return;
    };
    let (mut to_client, mut from_client) = socket.split();
    let downstream = async {
        let mut message = Oversize::default();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = match answers.read(&mut buffer).await {
                Ok(read) if read > 0 => read,
                _ => return,
            };
            let mut chunk = &buffer[..read];
            loop {
                let end = chunk.iter().position(|b| *b == 0);
                message.take(&chunk[..end.unwrap_or(chunk.len())]);
                let Some(end) = end else { break };
                chunk = &chunk[end + 1..];
                let Some(text) = message.finish() else {
                    continue;
                };
                let Ok(text) = String::from_utf8(text) else {
                    return;
                };
                if to_client.send(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
        }
    };
    let upstream = async {
        while let Some(Ok(message)) = from_client.next().await {
            let bytes = match message {
                Message::Text(text) => text.as_bytes().to_vec(),
                Message::Binary(bytes) => bytes.to_vec(),
                Message::Close(_) => return,
                _ => continue,
            };
            if commands.write_all(&bytes).await.is_err() || commands.write_all(&[0]).await.is_err()
            {
                return;
            }
        }
    };
    // Either side ending ends both: the browser's pipe closes with the relay.
    tokio::select! {
        () = downstream => {}
        () = upstream => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(parts: &[&[u8]]) -> Vec<Option<String>> {
        let mut message = Oversize::default();
        let mut out = Vec::new();
        for part in parts {
            let mut chunk = *part;
            loop {
                let end = chunk.iter().position(|b| *b == 0);
                message.take(&chunk[..end.unwrap_or(chunk.len())]);
                let Some(end) = end else { break };
                chunk = &chunk[end + 1..];
                out.push(message.finish().map(|m| String::from_utf8(m).unwrap()));
            }
        }
        out
    }

    #[test]
    fn an_answer_over_the_limit_becomes_an_error_for_its_call_and_the_next_one_passes() {
        let huge = vec![b'x'; MESSAGE_LIMIT];
        let out = messages(&[
            b"{\"id\":1,\"result\":{}}\0{\"id\":42,\"result\":{\"value\":\"",
            &huge,
            b"\"}}\0{\"method\":\"Page.x\",\"params\":{\"v\":\"",
            &huge,
            b"\"}}\0{\"id\":43,\"result\":{}}\0",
        ]);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].as_deref(), Some("{\"id\":1,\"result\":{}}"));
        let error: serde_json::Value = serde_json::from_str(out[1].as_deref().unwrap()).unwrap();
        assert_eq!(error["id"], 42);
        assert!(error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("over the"));
        // An event that large is dropped: there is no call to fail.
        assert_eq!(out[2], None);
        assert_eq!(out[3].as_deref(), Some("{\"id\":43,\"result\":{}}"));
    }

    #[test]
    fn an_unused_event_over_a_mebibyte_is_dropped_and_others_pass() {
        let big = vec![b'x'; UNUSED_EVENT_LIMIT];
        let mut parts: Vec<&[u8]> = Vec::new();
        for method in [
            "Runtime.consoleAPICalled",
            "Log.entryAdded",
            "Runtime.exceptionThrown",
            "Page.frameNavigated",
        ] {
            parts.push(b"{\"method\":\"");
            parts.push(method.as_bytes());
            parts.push(b"\",\"params\":{\"v\":\"");
            // In pieces, as the pipe gives them.
            parts.extend(big.chunks(64 * 1024));
            parts.push(b"\"}}\0");
        }
        parts.push(b"{\"method\":\"Runtime.consoleAPICalled\",\"params\":{}}\0");
        parts.push(b"{\"id\":7,\"result\":{\"v\":\"");
        parts.push(&big);
        parts.push(b"\"}}\0");
        let out = messages(&parts);
        assert_eq!(out.len(), 6);
        assert_eq!(out[..3], [None, None, None]);
        // An event the server reads, an answer, or a small console event: passed on whole.
        assert!(out[3].as_deref().unwrap().len() > UNUSED_EVENT_LIMIT);
        assert_eq!(
            out[4].as_deref(),
            Some("{\"method\":\"Runtime.consoleAPICalled\",\"params\":{}}")
        );
        assert!(out[5].as_deref().unwrap().len() > UNUSED_EVENT_LIMIT);
    }

    fn fixed(message: &str) -> String {
        String::from_utf8(valid_surrogates(message.as_bytes().to_vec())).unwrap()
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        for (sent, passed) in [
            // A pair, in either case: kept.
            (r#"{"v":"a\ud83d\ude00b"}"#, r#"{"v":"a\ud83d\ude00b"}"#),
            (r#"{"v":"\uD83D\uDE00"}"#, r#"{"v":"\uD83D\uDE00"}"#),
            // A lone high surrogate, at the end or before anything else.
            (r#"{"v":"aaa\ud83d"}"#, r#"{"v":"aaa\ufffd"}"#),
            (r#"{"v":"\uD800b\n"}"#, r#"{"v":"\ufffdb\n"}"#),
            (r#"{"v":"\ud800\u0041"}"#, r#"{"v":"\ufffd\u0041"}"#),
            (
                r#"{"v":"\ud800\ud83d\ude00"}"#,
                r#"{"v":"\ufffd\ud83d\ude00"}"#,
            ),
            // A lone low surrogate.
            (r#"{"v":"\udfff!"}"#, r#"{"v":"\ufffd!"}"#),
            // A pair reversed is two lone ones.
            (r#"{"v":"\ude00\ud83d"}"#, r#"{"v":"\ufffd\ufffd"}"#),
            // An escaped backslash before `ud800` is text, not an escape.
            (r#"{"v":"\\ud800"}"#, r#"{"v":"\\ud800"}"#),
            (r#"{"v":"\\\ud800"}"#, r#"{"v":"\\\ufffd"}"#),
            (r#"{"v":"\"\ud800"}"#, r#"{"v":"\"\ufffd"}"#),
            // Nothing to do.
            (r#"{"v":"\u00e9 \t"}"#, r#"{"v":"\u00e9 \t"}"#),
            (r#"{"v":"\ud8"}"#, r#"{"v":"\ud8"}"#),
        ] {
            assert_eq!(fixed(sent), passed, "{sent}");
        }
    }

    #[test]
    fn an_answer_with_a_lone_surrogate_reaches_chromiumoxide() {
        // As Chromium sends a title of 'aaa' + '\uD83D' (probe.rs cut inside an emoji, or a page).
        let raw = "{\"id\":3,\"result\":{\"result\":{\"type\":\"object\",\"value\":{\"t\":\"aaa\\ud83d\"}}},\"sessionId\":\"BCB37F4A\"}\0";
        let passed = messages(&[raw.as_bytes()]);
        let passed = passed[0].as_deref().unwrap();
        let message: chromiumoxide::types::Message = serde_json::from_str(passed)
            .unwrap_or_else(|err| panic!("chromiumoxide cannot read {passed}: {err}"));
        let chromiumoxide::types::Message::Response(response) = message else {
            panic!("not an answer: {passed}");
        };
        assert_eq!(
            response.result.unwrap()["result"]["value"]["t"],
            "aaa\u{fffd}"
        );
    }

    #[tokio::test]
    async fn a_silent_first_connection_does_not_hold_the_bridge() {
        let (server, _browser) = pipes().unwrap();
        let url = server.serve().await.unwrap();
        let address = url.trim_start_matches("ws://").split('/').next().unwrap();
        // Another local user connects first and says nothing; another asks for a wrong path.
        let _silent = tokio::net::TcpStream::connect(address).await.unwrap();
        let wrong = format!("ws://{address}/devtools/browser/guess");
        let guess = tokio::spawn(async move {
            tokio_tungstenite::connect_async(wrong.as_str())
                .await
                .is_ok()
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        let connected = tokio::time::timeout(
            Duration::from_secs(5),
            tokio_tungstenite::connect_async(url.as_str()),
        )
        .await;
        assert!(
            matches!(connected, Ok(Ok(_))),
            "the server's connection failed: {connected:?}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "the server's connection waited {:?}",
            started.elapsed()
        );
        guess.abort();
        assert!(!guess.await.unwrap_or(false), "a wrong path was let in");
    }
}
