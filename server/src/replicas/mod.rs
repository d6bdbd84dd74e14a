//! Many replicas behind one address (`BROWSER_PEERS`). A session lives on the replica its client
//! reached, but a person looking for it comes through the balancer and may land on any replica.
//! So every replica can list every replica's sessions (`/sessions`), and a request about a
//! session held elsewhere (`/sessions/{id}`, its text layer, its watch socket and hand-off) is
//! passed to the replica that holds it, which answers as if asked directly.
//!
//! The peers are a list of URLs, or a name whose DNS records are the replicas (a Kubernetes
//! headless Service): each entry is resolved again at each use, since replicas come and go, and
//! each address is one replica. A replica finds itself among them by its id. Peer calls are
//! signed with the server's token (`signing.rs`: the token itself never leaves) and name
//! `local=true`, so the replica asked answers for itself alone and never passes the request on.
//! A peer that does not answer is reported, never fatal.
//!
//! Where a request goes is decided in one place (`routing.rs`: the session a request names, and
//! whether it lives here) and carried by one relay (`relay.rs`: any HTTP request or WebSocket, to
//! the replica that holds the session). Looking sessions up and carrying calls have limits of
//! their own, each with a bounded wait: a flood of slow relayed calls cannot hold `/sessions`,
//! watching or the other sessions' calls.

pub mod relay;
pub mod routing;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::operations::signing;

/// How long a peer has to answer one call (a replica that is down or cut off is reported after
/// this, not waited for).
const PEER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the peers' names may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most read of a peer's answer about sessions (`/replica`, `/sessions/{id}`): far above
/// what 64 sessions take, far below what would hurt this replica.
const ANSWER_LIMIT: usize = 8 * 1024 * 1024;
/// Lookups in flight at once (`/replica` surveys, `/sessions/{id}` asks): a burst of
/// `/sessions` asks cannot make this replica open thousands of connections to its peers.
const LOOKUPS_AT_ONCE: usize = 32;
/// How long a lookup waits for its turn before the peer counts as busy (reported, not waited
/// for: `/sessions` answers within about a second whatever else goes on).
const LOOKUP_WAIT: Duration = Duration::from_millis(500);

/// One entry of `BROWSER_PEERS`: a host (name or address) and port, reached over plain HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerEntry {
    host: String,
    port: u16,
}

impl PeerEntry {
    /// `http://host:port` (the port defaults to 8000, the server's); `https` is refused, since
    /// replicas speak plain HTTP on the cluster's network and TLS belongs to the balancer.
    pub fn parse(text: &str) -> Result<PeerEntry, String> {
        let with_scheme = if text.contains("://") {
            text.to_string()
        } else {
            format!("http://{text}")
        };
        let url = url::Url::parse(&with_scheme)
            .map_err(|err| format!("{text:?} is not a URL ({err})"))?;
        if url.scheme() != "http" {
            return Err(format!(
                "{text:?}: replicas are reached over plain http:// (TLS belongs to the balancer)"
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "{text:?}: no credentials in a peer URL (peers share BROWSER_API_TOKEN)"
            ));
        }
        if url.path() != "/" || url.query().is_some() {
            return Err(format!("{text:?}: a peer is scheme://host[:port], no path"));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            Some(host) => host.to_string(),
            None => return Err(format!("{text:?} has no host")),
        };
        Ok(PeerEntry {
            host,
            port: url.port().unwrap_or(8000),
        })
    }
}

/// What one replica says of itself (`GET /replica`).
#[derive(Debug, Clone)]
pub struct Report {
    /// The address it was reached at, `http://10.0.0.5:8000`.
    pub url: String,
    /// Its answer, or why there was none.
    pub answer: Result<Value, String>,
}

/// The replicas this one knows of, and how to ask them.
pub struct Replicas {
    /// This replica's id: an answer carrying it is this replica's own.
    pub id: String,
    entries: Vec<PeerEntry>,
    token: Option<String>,
    http: reqwest::Client,
    /// This replica's own address among the peers, once a survey has found it.
    own_url: Mutex<Option<String>>,
    lookups: tokio::sync::Semaphore,
    /// The calls carried to other replicas, and their limits (`relay.rs`).
    pub relay: relay::Limits,
}

impl Replicas {
    pub fn new(entries: Vec<PeerEntry>, token: Option<String>) -> Replicas {
        let http = reqwest::Client::builder()
            .timeout(PEER_TIMEOUT)
            .connect_timeout(PEER_TIMEOUT)
            // Peers are addresses on the cluster's network, never reached through a proxy.
            .no_proxy()
            // A peer's redirect would resend an agent's call (its MCP body) wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client without TLS always builds");
        Replicas {
            id: uuid::Uuid::new_v4().to_string(),
            entries,
            token,
            http,
            own_url: Mutex::new(None),
            lookups: tokio::sync::Semaphore::new(LOOKUPS_AT_ONCE),
            relay: relay::Limits::default(),
        }
    }

    /// Whether there are peers at all (without, everything is answered locally, as always).
    pub fn configured(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The signature header for a request to a peer (none without a token: peers then take
    /// any request, as the server does); `headers` are the request's, as it will be sent.
    pub fn signature(
        &self,
        method: &str,
        url: &str,
        headers: &axum::http::HeaderMap,
        body: &[u8],
    ) -> Option<String> {
        let token = self.token.as_ref()?;
        let url = url::Url::parse(url).ok()?;
        let path_and_query = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        // As `Host` will carry it: the host, and the port when one is written.
        let host = match (url.host_str()?, url.port()) {
            (host, Some(port)) => format!("{host}:{port}"),
            (host, None) => host.to_string(),
        };
        Some(signing::sign(
            token,
            signing::Signed {
                method,
                host: &host,
                path_and_query: &path_and_query,
                headers,
                body,
            },
        ))
    }

    /// The HTTP client for peer calls (no proxy, no redirects).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// This replica's address as the peers list it, when known.
    pub fn own_url(&self) -> Option<String> {
        self.own_url.lock().ok()?.clone()
    }

    /// Every replica's base URL, resolved now (an entry whose name does not resolve is reported
    /// as one unreachable replica under its name).
    pub async fn urls(&self) -> (Vec<String>, Vec<Report>) {
        let mut addresses = BTreeSet::new();
        let mut unresolved = Vec::new();
        for entry in &self.entries {
            let lookup = tokio::net::lookup_host((entry.host.as_str(), entry.port));
            match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
                Ok(Ok(found)) => addresses.extend(found),
                Ok(Err(err)) => unresolved.push(unreachable(entry, err.to_string())),
                Err(_) => unresolved.push(unreachable(entry, "no DNS answer in time".into())),
            }
        }
        (addresses.iter().map(base_url).collect(), unresolved)
    }

    /// Ask every replica (this one too, which is how it learns its own address) for its view:
    /// `GET /replica`.
    pub async fn survey(&self) -> Vec<Report> {
        let (urls, mut reports) = self.urls().await;
        let asked = futures_util::future::join_all(urls.into_iter().map(|url| async move {
            let answer = self.get_json(&format!("{url}/replica")).await;
            Report { url, answer }
        }))
        .await;
        for report in &asked {
            let own = report
                .answer
                .as_ref()
                .is_ok_and(|view| view["id"].as_str() == Some(self.id.as_str()));
            if own {
                if let Ok(mut own_url) = self.own_url.lock() {
                    *own_url = Some(report.url.clone());
                }
            }
        }
        reports.extend(asked);
        reports
    }

    /// The replica (other than this one) that holds session `id`: the first that answers for it.
    pub async fn owner_of(&self, id: &str) -> Option<String> {
        // Anything else names no session, and is never put in a peer's URL (`.` and `..` would
        // not stay one path segment).
        if !crate::session::is_session_id(id) {
            return None;
        }
        let (urls, _) = self.urls().await;
        let own = self.own_url();
        let asks = urls
            .into_iter()
            .filter(|url| Some(url) != own.as_ref())
            .map(|url| {
                Box::pin(async move {
                    let path = session_path(&url, id, "")?;
                    let answer = self.get_json(&path).await.ok()?;
                    (answer["id"].as_str() == Some(id)).then_some(url)
                })
            });
        // The first replica that knows the session; the others' answers are not awaited.
        let mut pending: Vec<_> = asks.collect();
        while !pending.is_empty() {
            let (found, _, rest) = futures_util::future::select_all(pending).await;
            if found.is_some() {
                return found;
            }
            pending = rest;
        }
        None
    }

    /// GET a peer's JSON, signed; an answer other than 2xx is an error. Waits at most
    /// `LOOKUP_WAIT` for its turn.
    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let _turn = tokio::time::timeout(LOOKUP_WAIT, self.lookups.acquire())
            .await
            .map_err(|_| "this replica is busy with other lookups".to_string())?
            .map_err(|err| err.to_string())?;
        // Sent as signed: the client would add an `Accept` of its own otherwise.
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            axum::http::header::ACCEPT,
            axum::http::HeaderValue::from_static("application/json"),
        );
        let mut request = self.http.get(url).headers(headers.clone());
        if let Some(signature) = self.signature("GET", url, &headers, b"") {
            request = request.header(signing::HEADER, signature);
        }
        let response = request.send().await.map_err(|err| describe(&err))?;
        let status = response.status();
        let body = read_capped(response, ANSWER_LIMIT).await?;
        let body: Value = serde_json::from_slice(&body).map_err(|err| err.to_string())?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!(
                "HTTP {status}: {}",
                body["detail"].as_str().unwrap_or("")
            ))
        }
    }
}

/// A peer's answer, read up to `limit` bytes: a peer that sends more is cut off, not believed.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<axum::body::Bytes, String> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(format!("the answer is larger than {limit} bytes"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|err| describe(&err))? {
        if body.len() + chunk.len() > limit {
            return Err(format!("the answer is larger than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.into())
}

fn unreachable(entry: &PeerEntry, why: String) -> Report {
    Report {
        url: format!("http://{}:{}", entry.host, entry.port),
        answer: Err(format!("cannot resolve: {why}")),
    }
}

fn base_url(address: &SocketAddr) -> String {
    format!("http://{address}")
}

/// `{base}/sessions/{id}{tail}?local=true`, the id escaped as one path segment.
pub fn session_path(base: &str, id: &str, tail: &str) -> Option<String> {
    let mut url = url::Url::parse(base).ok()?;
    url.path_segments_mut().ok()?.push("sessions").push(id);
    let mut url = url.to_string();
    url.push_str(tail);
    url.push_str("?local=true");
    Some(url)
}

/// A failed peer call in a few words (reqwest's own text nests its causes).
pub(crate) fn describe(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Parse `BROWSER_PEERS` (comma-separated, blanks dropped); the error names the setting.
pub fn parse_peers(values: &[String]) -> Result<Vec<PeerEntry>, String> {
    values
        .iter()
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
        .map(|value| PeerEntry::parse(value).map_err(|err| format!("BROWSER_PEERS: {err}")))
        .collect()
}

/// Parse `BROWSER_PEER_ADDRESSES` (comma-separated `ip:port`, blanks dropped): the peers reach a
/// replica at the addresses `BROWSER_PEERS` resolves to, so a name would never be asked for.
pub fn parse_own_addresses(values: &[String]) -> Result<Vec<SocketAddr>, String> {
    values
        .iter()
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
        .map(|value| {
            value.parse::<SocketAddr>().map_err(|_| {
                format!(
                    "BROWSER_PEER_ADDRESSES: {value:?} is not an IP address with a port \
                     (10.0.0.5:8000, [fd00::5]:8000): peers are reached at the addresses \
                     BROWSER_PEERS resolves to"
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_plain_http_hosts_with_a_port() {
        assert_eq!(
            PeerEntry::parse("http://10.0.0.5:8001").unwrap(),
            PeerEntry {
                host: "10.0.0.5".into(),
                port: 8001
            }
        );
        assert_eq!(
            PeerEntry::parse("browserenv-peers").unwrap(),
            PeerEntry {
                host: "browserenv-peers".into(),
                port: 8000
            }
        );
        assert_eq!(PeerEntry::parse("http://[::1]:9").unwrap().host, "::1");
        for bad in [
            "https://a:8000",
            "http://user:pw@a:8000",
            "http://a:8000/x",
            "ftp://a",
        ] {
            assert!(PeerEntry::parse(bad).is_err(), "{bad}");
        }
        let parsed = parse_peers(&[" http://a:1 ".into(), "".into(), "b:2".into()]).unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(parse_peers(&["https://a".into()])
            .unwrap_err()
            .starts_with("BROWSER_PEERS"));
    }

    #[test]
    fn session_paths_escape_the_id() {
        assert_eq!(
            session_path("http://10.0.0.5:8000", "mcp-1", "/text").unwrap(),
            "http://10.0.0.5:8000/sessions/mcp-1/text?local=true"
        );
        assert_eq!(
            session_path("http://[::1]:8000", "a/b?c", "").unwrap(),
            "http://[::1]:8000/sessions/a%2Fb%3Fc?local=true"
        );
    }

    #[tokio::test]
    async fn a_name_is_every_address_it_resolves_to() {
        let replicas = Replicas::new(
            vec![
                PeerEntry::parse("http://127.0.0.1:1").unwrap(),
                PeerEntry::parse("http://localhost:2").unwrap(),
                PeerEntry::parse("http://does-not-exist.invalid:3").unwrap(),
            ],
            None,
        );
        let (urls, unresolved) = replicas.urls().await;
        assert!(urls.contains(&"http://127.0.0.1:1".to_string()), "{urls:?}");
        assert!(urls.iter().any(|url| url.ends_with(":2")), "{urls:?}");
        assert_eq!(unresolved.len(), 1);
        assert!(unresolved[0].url.contains("does-not-exist.invalid"));
    }
}
