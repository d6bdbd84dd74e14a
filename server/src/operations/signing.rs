//! Requests between replicas are signed, not carried with the token: a MAC keyed by the server's
//! token over the method, the address asked (`Host`), the path and query, the headers the
//! receiver's routing reads (`SIGNED_HEADERS`), a digest of the body, the time and a nonce. A peer
//! name resolves to addresses at each use (`BROWSER_PEERS`), and an address a replica left may be
//! another workload's by the next call: it learns nothing it could use, neither the token nor a
//! request it could replay elsewhere (another replica, path, header or body) or later (a window
//! of `WINDOW`, each nonce once).
//!
//! The body's digest travels in the header (`d=`) and the MAC covers it, so the whole signature
//! is checked on the head alone, before a byte of the body is waited for: a request whose header
//! was made up (which anyone can send, without a credential) is refused without taking one of the
//! `BODIES_AT_ONCE` turns to read a body. A signed request's body is then read within
//! `BODY_LIMIT` and `BODY_WAIT`, at most `BODIES_PER_ADDRESS` from one remote address at a time,
//! and must have the digest signed.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The header a signed peer request carries: `t=<unix seconds>,n=<nonce>,d=<body's SHA-256>,
/// s=<mac>` (hex).
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
/// the longest start URL a person would send, and keeps what signed bodies being read can hold
/// at `BODY_LIMIT * BODIES_AT_ONCE` (32 MiB).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// Signed requests whose bodies are read at once; past this a signed request waits
/// `BODY_TURN_WAIT` for its turn, then gets a 503. Only requests whose signature holds take one.
pub const BODIES_AT_ONCE: usize = 32;

/// Of those, the most from one remote address: one peer (or a token's holder gone wrong) cannot
/// hold every turn.
pub const BODIES_PER_ADDRESS: usize = BODIES_AT_ONCE / 2;

/// How long a signed request's body may take to arrive once its turn is taken: a replica sends a
/// few KiB at once, on the same network. Shorter than the server's header-read bound, which is
/// for every client.
pub const BODY_WAIT: Duration = Duration::from_secs(2);

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
fn message(head: &Head, time: u64, nonce: &str, digest: &[u8]) -> Vec<u8> {
    let mut message = format!(
        "browserenv-peer-v4\n{}\n{}\n{}\n{time}\n{nonce}\n{}",
        head.method,
        head.host.to_ascii_lowercase(),
        head.path_and_query,
        hex(digest)
    );
    for name in SIGNED_HEADERS {
        let values: Vec<String> = head
            .headers
            .get_all(name)
            .iter()
            .map(|value| hex(value.as_bytes()))
            .collect();
        message.push_str(&format!("\n{name}:{}", values.join(",")));
    }
    message.into_bytes()
}

/// What a signature covers of a request besides its body: all a receiver has before the body.
#[derive(Debug, Clone, Copy)]
pub struct Head<'a> {
    pub method: &'a str,
    /// The address asked, as `Host` carries it (`10.0.0.5:8000`).
    pub host: &'a str,
    pub path_and_query: &'a str,
    /// The request's headers, of which `SIGNED_HEADERS` are signed: the signer's are exactly
    /// what it sends (a client that adds a default `Accept` must send it explicitly).
    pub headers: &'a HeaderMap,
}

/// What a signature covers of a request: its head and its body.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    pub method: &'a str,
    pub host: &'a str,
    pub path_and_query: &'a str,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

impl<'a> Signed<'a> {
    fn head(&self) -> Head<'a> {
        Head {
            method: self.method,
            host: self.host,
            path_and_query: self.path_and_query,
            headers: self.headers,
        }
    }
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
    let digest = Sha256::digest(request.body);
    let mut mac = mac(token);
    mac.update(&message(&request.head(), time, &nonce, &digest));
    format!(
        "t={time},n={nonce},d={},s={}",
        hex(&digest),
        hex(&mac.finalize().into_bytes())
    )
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
    #[error("the signed request's body is not the one signed")]
    OtherBody,
}

/// Checks signatures and remembers the nonces seen within the window; bounds the signed bodies
/// read at once, and from one remote address.
pub struct Verifier {
    seen: Mutex<Nonces>,
    bodies: tokio::sync::Semaphore,
    /// Turns held by each remote address.
    held: Mutex<HashMap<Option<IpAddr>, usize>>,
}

impl Default for Verifier {
    fn default() -> Self {
        Verifier {
            seen: Mutex::default(),
            bodies: tokio::sync::Semaphore::new(BODIES_AT_ONCE),
            held: Mutex::default(),
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
    digest: Vec<u8>,
    mac: Vec<u8>,
}

impl Stamp {
    /// The header's parts, if it is well formed and its time within the window.
    pub fn read(signature: &str) -> Result<Stamp, Refused> {
        Stamp::read_at(signature, now())
    }

    fn read_at(signature: &str, now: u64) -> Result<Stamp, Refused> {
        let mut time = None;
        let mut nonce = None;
        let mut digest = None;
        let mut mac = None;
        for part in signature.split(',') {
            match part.trim().split_once('=') {
                Some(("t", value)) => time = value.parse::<u64>().ok(),
                Some(("n", value)) if value.len() <= 64 => nonce = Some(value),
                Some(("d", value)) => digest = unhex(value).filter(|d| d.len() == 32),
                Some(("s", value)) => mac = unhex(value),
                _ => return Err(Refused::Malformed),
            }
        }
        let (Some(time), Some(nonce), Some(digest), Some(mac)) = (time, nonce, digest, mac) else {
            return Err(Refused::Malformed);
        };
        let away = now.abs_diff(time);
        if away > WINDOW.as_secs() {
            return Err(Refused::OutOfWindow(away));
        }
        Ok(Stamp {
            time,
            nonce: nonce.to_string(),
            digest,
            mac,
        })
    }
}

/// A request whose head's signature holds: its body must be the one whose digest was signed.
#[derive(Debug)]
pub struct Verified {
    digest: Vec<u8>,
}

impl Verified {
    pub fn check_body(&self, body: &[u8]) -> Result<(), Refused> {
        if Sha256::digest(body).as_slice() == self.digest.as_slice() {
            Ok(())
        } else {
            Err(Refused::OtherBody)
        }
    }
}

/// A turn to read one signed body; given back when dropped.
pub struct BodyTurn<'a> {
    _permit: tokio::sync::SemaphorePermit<'a>,
    _counted: AddressCount<'a>,
}

/// One of the turns a remote address holds, given back when dropped.
struct AddressCount<'a> {
    from: Option<IpAddr>,
    held: &'a Mutex<HashMap<Option<IpAddr>, usize>>,
}

impl Drop for AddressCount<'_> {
    fn drop(&mut self) {
        if let Ok(mut held) = self.held.lock() {
            if let Some(count) = held.get_mut(&self.from) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    held.remove(&self.from);
                }
            }
        }
    }
}

impl Verifier {
    /// Whether `signature` signs this request's head with `token`, within the window, for the
    /// first time (the nonce is spent here): what can be known before the body is read.
    pub fn verify_head(
        &self,
        token: &str,
        signature: &str,
        head: Head,
    ) -> Result<Verified, Refused> {
        self.verify_head_at(token, signature, head, now())
    }

    /// Head and body together (`verify_head`, then `Verified::check_body`).
    pub fn verify(&self, token: &str, signature: &str, request: Signed) -> Result<(), Refused> {
        self.verify_head(token, signature, request.head())?
            .check_body(request.body)
    }

    /// A turn to read a signed request's body, from the remote address `from` (None: a Unix
    /// socket's), waited for at most `BODY_TURN_WAIT`; None when every turn, or every turn one
    /// address may hold, is taken.
    pub async fn body_turn(&self, from: Option<IpAddr>) -> Option<BodyTurn<'_>> {
        let counted = {
            let mut held = self.held.lock().ok()?;
            let count = held.entry(from).or_insert(0);
            if *count >= BODIES_PER_ADDRESS {
                return None;
            }
            *count += 1;
            AddressCount {
                from,
                held: &self.held,
            }
        };
        let permit = tokio::time::timeout(BODY_TURN_WAIT, self.bodies.acquire())
            .await
            .ok()?
            .ok()?;
        Some(BodyTurn {
            _permit: permit,
            _counted: counted,
        })
    }

    fn verify_head_at(
        &self,
        token: &str,
        signature: &str,
        head: Head,
        now: u64,
    ) -> Result<Verified, Refused> {
        let Stamp {
            time,
            nonce,
            digest,
            mac: sig,
        } = Stamp::read_at(signature, now)?;
        let nonce = nonce.as_str();
        let mut mac = mac(token);
        mac.update(&message(&head, time, nonce, &digest));
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
        Ok(Verified { digest })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_headers() -> &'static HeaderMap {
        static EMPTY: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
        EMPTY.get_or_init(HeaderMap::new)
    }

    impl Verifier {
        fn verify_at(
            &self,
            token: &str,
            signature: &str,
            request: Signed,
            now: u64,
        ) -> Result<(), Refused> {
            self.verify_head_at(token, signature, request.head(), now)?
                .check_body(request.body)
        }
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
        ] {
            let fresh = sign_at("tok", mcp, at);
            assert_eq!(
                verifier.verify_at(token, &fresh, other, at),
                Err(Refused::Mismatch),
                "{token} {other:?}"
            );
        }
        // Another body under a signed head: its digest is not the one signed.
        let fresh = sign_at("tok", mcp, at);
        let other_body = request("POST", "10.0.0.5:8000", "/mcp?local=true", b"{\"x\":1}");
        assert_eq!(
            verifier.verify_at("tok", &fresh, other_body, at),
            Err(Refused::OtherBody)
        );
        // A digest changed in the header breaks the MAC, before any body is seen.
        let swapped = fresh.replace(
            &format!("d={}", hex(&Sha256::digest(b"{}"))),
            &format!("d={}", hex(&Sha256::digest(b"{\"x\":1}"))),
        );
        assert_ne!(swapped, fresh);
        assert_eq!(
            verifier
                .verify_head_at("tok", &swapped, other_body.head(), at)
                .err(),
            Some(Refused::Mismatch)
        );
        let lookup = request("GET", "a:1", "/replica", b"");
        let old = sign_at("tok", lookup, at);
        assert_eq!(
            verifier.verify_at("tok", &old, lookup, at + 31),
            Err(Refused::OutOfWindow(31))
        );
        assert_eq!(Stamp::read_at(&old, at + 31), Err(Refused::OutOfWindow(31)));
        assert!(Stamp::read_at(&old, at + 30).is_ok());
        let digest = hex(&Sha256::digest(b""));
        for bad in [
            "".to_string(),
            "t=1".into(),
            "t=x,n=y,s=zz".into(),
            "t=1,n=a,s=00,q=1".into(),
            format!("t={at},n=a,s=00"),
            format!("t={at},n=a,d=00,s=00"),
            format!("t={at},n=a,d={digest},s=00,q=1"),
        ] {
            let bad = bad.as_str();
            assert!(verifier.verify_at("tok", bad, lookup, at).is_err());
            assert!(Stamp::read_at(bad, at).is_err(), "{bad}");
        }
    }

    /// A made-up signature (anyone can send one) is refused on the head alone, and takes no
    /// turn to read a body; the turns one remote address holds are bounded.
    #[tokio::test]
    async fn a_made_up_signature_is_refused_on_its_head_and_turns_are_bounded_per_address() {
        let verifier = Verifier::default();
        let at = now();
        let head = request("POST", "10.0.0.5:8000", "/mcp?local=true", b"{}").head();
        let made_up = format!(
            "t={at},n=abc,d={},s={}",
            hex(&Sha256::digest(b"{}")),
            "00".repeat(32)
        );
        assert_eq!(
            verifier.verify_head("tok", &made_up, head).err(),
            Some(Refused::Mismatch)
        );
        let stranger: Option<IpAddr> = Some("10.9.9.9".parse().unwrap());
        let peer: Option<IpAddr> = Some("10.0.0.6".parse().unwrap());
        let mut held = Vec::new();
        for _ in 0..BODIES_PER_ADDRESS {
            held.push(verifier.body_turn(stranger).await.expect("a turn"));
        }
        assert!(
            verifier.body_turn(stranger).await.is_none(),
            "one address holds at most BODIES_PER_ADDRESS turns"
        );
        let other = verifier.body_turn(peer).await;
        assert!(other.is_some(), "another address still gets one");
        drop(other);
        held.pop();
        assert!(verifier.body_turn(stranger).await.is_some(), "given back");
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
