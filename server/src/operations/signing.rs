//! Requests between replicas are signed, not carried with the token: a MAC keyed by the server's
//! token over the method, the address asked (`Host`), the path and query, the headers the
//! receiver's routing reads (`SIGNED_HEADERS`), a digest of the body, the time and a nonce. A peer
//! name resolves to addresses at each use (`BROWSER_PEERS`), and an address a replica left may be
//! another workload's by the next call: it learns nothing it could use, neither the token nor a
//! request it could replay elsewhere (another replica, path, header or body) or later (a window
//! of `WINDOW`, each nonce once). The receiver takes a signed request only at the address it was
//! signed for (`access.rs`), and checks the header's form and time before it reads a body, of at
//! most `BODY_LIMIT` bytes and `BODIES_AT_ONCE` at a time.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The header a signed peer request carries: `t=<unix seconds>,n=<nonce>,s=<mac>` (hex).
pub const HEADER: &str = "browserenv-peer-signature";

/// How far a signature's time may be from this replica's clock.
pub const WINDOW: Duration = Duration::from_secs(30);

/// The request headers a signature covers, absent ones included (as absent): what the receiver's
/// routing reads besides the body (`Accept` and `Mcp-Session-Id` decide whether a `/mcp` call is
/// OpenEnv's, `mcp::endpoint::is_openenv`) and what says what the body is.
pub const SIGNED_HEADERS: [&str; 3] = ["accept", "content-type", "mcp-session-id"];

/// The most bytes of a signed request's body. What replicas carry to each other is an agent's
/// call (a JSON-RPC `tools/call`: an action, whose text is 2,000 characters at most, or a reset's
/// URL and task) or a request without a body (lookups, sockets): a few KiB. 1 MiB leaves room for
/// the longest start URL a person would send, and keeps what unverified bodies can hold at
/// `BODY_LIMIT * BODIES_AT_ONCE` (32 MiB).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// Signed requests whose bodies are read (before the signature over them can be checked) at
/// once; past this a signed request waits `BODY_TURN_WAIT` for its turn, then gets a 503.
pub const BODIES_AT_ONCE: usize = 32;

/// How long a signed request waits for its turn to be read.
const BODY_TURN_WAIT: Duration = Duration::from_millis(200);

/// The most nonces remembered (a flood of signed requests cannot grow the memory past this; the
/// oldest go first, and a request that old is past the window anyway at any sane rate).
const NONCES_KEPT: usize = 100_000;

type HmacSha256 = Hmac<Sha256>;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What is signed: every part on a line of its own, the body by its digest, each signed header's
/// values in hex (a value cannot then pass for two, nor a header for another).
fn message(request: &Signed, time: u64, nonce: &str) -> Vec<u8> {
    let mut message = format!(
        "browserenv-peer-v3\n{}\n{}\n{}\n{time}\n{nonce}\n{}",
        request.method,
        request.host.to_ascii_lowercase(),
        request.path_and_query,
        hex(&Sha256::digest(request.body))
    );
    for name in SIGNED_HEADERS {
        let values: Vec<String> = request
            .headers
            .get_all(name)
            .iter()
            .map(|value| hex(value.as_bytes()))
            .collect();
        message.push_str(&format!("\n{name}:{}", values.join(",")));
    }
    message.into_bytes()
}

/// What a signature covers of a request.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    pub method: &'a str,
    /// The address asked, as `Host` carries it (`10.0.0.5:8000`).
    pub host: &'a str,
    pub path_and_query: &'a str,
    /// The request's headers, of which `SIGNED_HEADERS` are signed: the signer's are exactly
    /// what it sends (a client that adds a default `Accept` must send it explicitly).
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

fn mac(token: &str) -> HmacSha256 {
    HmacSha256::new_from_slice(token.as_bytes()).expect("HMAC takes keys of any length")
}

/// The signature header's value for `request`.
pub fn sign(token: &str, request: Signed) -> String {
    sign_at(token, request, now())
}

fn sign_at(token: &str, request: Signed, time: u64) -> String {
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let mut mac = mac(token);
    mac.update(&message(&request, time, &nonce));
    format!("t={time},n={nonce},s={}", hex(&mac.finalize().into_bytes()))
}

/// Why a signed request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the peer signature is malformed")]
    Malformed,
    #[error("the peer signature is {0} s away from this replica's clock (at most 30 s)")]
    OutOfWindow(u64),
    #[error("the peer signature does not match the request")]
    Mismatch,
    #[error("the peer signature was used before")]
    Replayed,
    #[error("the peer signature was made for {0:?}, not for this replica")]
    Elsewhere(String),
}

/// Checks signatures and remembers the nonces seen within the window; bounds the signed bodies
/// read at once.
pub struct Verifier {
    seen: Mutex<Nonces>,
    bodies: tokio::sync::Semaphore,
}

impl Default for Verifier {
    fn default() -> Self {
        Verifier {
            seen: Mutex::default(),
            bodies: tokio::sync::Semaphore::new(BODIES_AT_ONCE),
        }
    }
}

#[derive(Default)]
struct Nonces {
    order: VecDeque<(u64, String)>,
    times: HashMap<String, u64>,
}

/// A signature header's parts, well formed and within the window when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    time: u64,
    nonce: String,
    mac: Vec<u8>,
}

impl Stamp {
    /// The header's parts, if it is well formed and its time within the window: what can be
    /// known of a signed request before its body is read.
    pub fn read(signature: &str) -> Result<Stamp, Refused> {
        Stamp::read_at(signature, now())
    }

    fn read_at(signature: &str, now: u64) -> Result<Stamp, Refused> {
        let mut time = None;
        let mut nonce = None;
        let mut mac = None;
        for part in signature.split(',') {
            match part.trim().split_once('=') {
                Some(("t", value)) => time = value.parse::<u64>().ok(),
                Some(("n", value)) if value.len() <= 64 => nonce = Some(value),
                Some(("s", value)) => mac = unhex(value),
                _ => return Err(Refused::Malformed),
            }
        }
        let (Some(time), Some(nonce), Some(mac)) = (time, nonce, mac) else {
            return Err(Refused::Malformed);
        };
        let away = now.abs_diff(time);
        if away > WINDOW.as_secs() {
            return Err(Refused::OutOfWindow(away));
        }
        Ok(Stamp {
            time,
            nonce: nonce.to_string(),
            mac,
        })
    }
}

impl Verifier {
    /// Whether `signature` signs this request with `token`, within the window, for the first time.
    pub fn verify(&self, token: &str, signature: &str, request: Signed) -> Result<(), Refused> {
        self.verify_at(token, signature, request, now())
    }

    /// A turn to read a signed request's body, waited for at most `BODY_TURN_WAIT` (None: busy).
    pub async fn body_turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        tokio::time::timeout(BODY_TURN_WAIT, self.bodies.acquire())
            .await
            .ok()?
            .ok()
    }

    fn verify_at(
        &self,
        token: &str,
        signature: &str,
        request: Signed,
        now: u64,
    ) -> Result<(), Refused> {
        // Read again: the time may have passed the window while the body came.
        let Stamp {
            time,
            nonce,
            mac: sig,
        } = Stamp::read_at(signature, now)?;
        let nonce = nonce.as_str();
        let mut mac = mac(token);
        mac.update(&message(&request, time, nonce));
        mac.verify_slice(&sig).map_err(|_| Refused::Mismatch)?;
        let mut seen = self.seen.lock().map_err(|_| Refused::Malformed)?;
        // Nonces past the window are forgotten: their signatures are refused by time now.
        while let Some((at, _)) = seen.order.front() {
            if now.saturating_sub(*at) <= WINDOW.as_secs() * 2 && seen.order.len() < NONCES_KEPT {
                break;
            }
            if let Some((_, old)) = seen.order.pop_front() {
                seen.times.remove(&old);
            }
        }
        if seen.times.contains_key(nonce) {
            return Err(Refused::Replayed);
        }
        seen.times.insert(nonce.to_string(), now);
        seen.order.push_back((now, nonce.to_string()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_headers() -> &'static HeaderMap {
        static EMPTY: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
        EMPTY.get_or_init(HeaderMap::new)
    }

    fn request<'a>(method: &'a str, host: &'a str, path: &'a str, body: &'a [u8]) -> Signed<'a> {
        Signed {
            method,
            host,
            path_and_query: path,
            headers: no_headers(),
            body,
        }
    }

    #[test]
    fn a_signature_holds_for_its_own_request_to_its_own_replica_once_within_the_window() {
        let verifier = Verifier::default();
        let at = 1_800_000_000;
        let mcp = request("POST", "10.0.0.5:8000", "/mcp?local=true", b"{}");
        let signed = sign_at("tok", mcp, at);
        assert_eq!(verifier.verify_at("tok", &signed, mcp, at + 5), Ok(()));
        assert_eq!(
            verifier.verify_at("tok", &signed, mcp, at + 6),
            Err(Refused::Replayed)
        );
        for (token, other) in [
            ("other", mcp),
            (
                "tok",
                request("GET", "10.0.0.5:8000", "/mcp?local=true", b"{}"),
            ),
            (
                "tok",
                request("POST", "10.0.0.6:8000", "/mcp?local=true", b"{}"),
            ),
            ("tok", request("POST", "10.0.0.5:8000", "/mcp", b"{}")),
            (
                "tok",
                request("POST", "10.0.0.5:8000", "/mcp?local=true", b"{\"x\":1}"),
            ),
        ] {
            let fresh = sign_at("tok", mcp, at);
            assert_eq!(
                verifier.verify_at(token, &fresh, other, at),
                Err(Refused::Mismatch),
                "{token} {other:?}"
            );
        }
        let lookup = request("GET", "a:1", "/replica", b"");
        let old = sign_at("tok", lookup, at);
        assert_eq!(
            verifier.verify_at("tok", &old, lookup, at + 31),
            Err(Refused::OutOfWindow(31))
        );
        assert_eq!(Stamp::read_at(&old, at + 31), Err(Refused::OutOfWindow(31)));
        assert!(Stamp::read_at(&old, at + 30).is_ok());
        for bad in ["", "t=1", "t=x,n=y,s=zz", "t=1,n=a,s=00,q=1"] {
            assert!(verifier.verify_at("tok", bad, lookup, at).is_err());
            assert!(Stamp::read_at(bad, at).is_err(), "{bad}");
        }
    }

    /// The headers the receiver routes by are signed: one added, removed or changed on the way
    /// (an `Mcp-Session-Id` that would turn an OpenEnv call into another) breaks the signature.
    #[test]
    fn the_headers_routing_reads_are_signed() {
        let verifier = Verifier::default();
        let at = 1_800_000_000;
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.append(*name, value.parse().unwrap());
            }
            map
        };
        let sent = headers(&[
            ("accept", "*/*"),
            ("content-type", "application/json"),
            ("user-agent", "not signed"),
        ]);
        fn with(headers: &HeaderMap) -> Signed<'_> {
            Signed {
                headers,
                ..request("POST", "10.0.0.5:8000", "/mcp?local=true", b"{}")
            }
        }
        let fresh = || sign_at("tok", with(&sent), at);
        let received = headers(&[
            ("content-type", "application/json"),
            ("accept", "*/*"),
            ("user-agent", "changed on the way"),
        ]);
        assert_eq!(
            verifier.verify_at("tok", &fresh(), with(&received), at),
            Ok(())
        );
        for changed in [
            headers(&[("accept", "*/*")]),
            headers(&[
                ("accept", "text/event-stream"),
                ("content-type", "application/json"),
            ]),
            headers(&[
                ("accept", "*/*"),
                ("accept", "text/event-stream"),
                ("content-type", "application/json"),
            ]),
            headers(&[
                ("accept", "*/*"),
                ("content-type", "application/json"),
                ("mcp-session-id", "someone-else"),
            ]),
        ] {
            assert_eq!(
                verifier.verify_at("tok", &fresh(), with(&changed), at),
                Err(Refused::Mismatch),
                "{changed:?}"
            );
        }
    }
}
