//! Requests between replicas are signed, not carried with the token: a MAC keyed by the server's
//! token over the method, the address asked (`Host`), the path and query, a digest of the body,
//! the time and a nonce. A peer
//! name resolves to addresses at each use (`BROWSER_PEERS`), and an address a replica left may be
//! another workload's by the next call: it learns nothing it could use, neither the token nor a
//! request it could replay elsewhere (another replica, path or body) or later (a window of
//! `WINDOW`, each nonce once).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The header a signed peer request carries: `t=<unix seconds>,n=<nonce>,s=<mac>` (hex).
pub const HEADER: &str = "browserenv-peer-signature";

/// How far a signature's time may be from this replica's clock.
pub const WINDOW: Duration = Duration::from_secs(30);

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

/// What is signed: every part on a line of its own, the body by its digest.
fn message(request: &Signed, time: u64, nonce: &str) -> Vec<u8> {
    format!(
        "browserenv-peer-v2\n{}\n{}\n{}\n{time}\n{nonce}\n{}",
        request.method,
        request.host.to_ascii_lowercase(),
        request.path_and_query,
        hex(&Sha256::digest(request.body))
    )
    .into_bytes()
}

/// What a signature covers of a request.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    pub method: &'a str,
    /// The address asked, as `Host` carries it (`10.0.0.5:8000`).
    pub host: &'a str,
    pub path_and_query: &'a str,
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
}

/// Checks signatures and remembers the nonces seen within the window.
#[derive(Default)]
pub struct Verifier {
    seen: Mutex<Nonces>,
}

#[derive(Default)]
struct Nonces {
    order: VecDeque<(u64, String)>,
    times: HashMap<String, u64>,
}

impl Verifier {
    /// Whether `signature` signs this request with `token`, within the window, for the first time.
    pub fn verify(&self, token: &str, signature: &str, request: Signed) -> Result<(), Refused> {
        self.verify_at(token, signature, request, now())
    }

    fn verify_at(
        &self,
        token: &str,
        signature: &str,
        request: Signed,
        now: u64,
    ) -> Result<(), Refused> {
        let mut time = None;
        let mut nonce = None;
        let mut sig = None;
        for part in signature.split(',') {
            match part.trim().split_once('=') {
                Some(("t", value)) => time = value.parse::<u64>().ok(),
                Some(("n", value)) if value.len() <= 64 => nonce = Some(value),
                Some(("s", value)) => sig = unhex(value),
                _ => return Err(Refused::Malformed),
            }
        }
        let (Some(time), Some(nonce), Some(sig)) = (time, nonce, sig) else {
            return Err(Refused::Malformed);
        };
        let away = now.abs_diff(time);
        if away > WINDOW.as_secs() {
            return Err(Refused::OutOfWindow(away));
        }
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

    fn request<'a>(method: &'a str, host: &'a str, path: &'a str, body: &'a [u8]) -> Signed<'a> {
        Signed {
            method,
            host,
            path_and_query: path,
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
        for bad in ["", "t=1", "t=x,n=y,s=zz", "t=1,n=a,s=00,q=1"] {
            assert!(verifier.verify_at("tok", bad, lookup, at).is_err());
        }
    }
}
