//! The egress proxy (`BROWSER_BLOCK_PRIVATE_NETWORKS`). In a cluster, a page the agent opens could
//! otherwise reach what only the server's machine can: cloud metadata (169.254.169.254), the pod
//! network, services on loopback. Each episode's browser context then sends every connection
//! (pages, redirects, subresources, WebSockets, workers, every frame) through a proxy of its own on
//! loopback (`Target.createBrowserContext`'s `proxyServer`, so refusals are the episode's even on
//! a shared browser), which resolves the name itself, refuses loopback, private and link-local addresses
//! unless the target is an allowed one (the configured site), and connects to the address it
//! checked: a DNS answer that changes between check and use (rebinding) cannot slip through.
//! Refusals are kept per context and become the session's incidents.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::capped::Capped;

/// Where a browser may connect although the address is private: `host:port` as written, and
/// the addresses those names had at start (so `localhost:8080` is the site at `127.0.0.1:8080`).
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    names: Vec<String>,
    addresses: Vec<SocketAddr>,
    /// Refuse every connection (an episode replayed from an archive: `archive.rs`).
    offline: bool,
}

impl EgressPolicy {
    /// `allowed`: `host:port` entries (the site's and task base URL's authority, and
    /// `BROWSER_PRIVATE_NETWORK_ALLOW`).
    pub async fn new(allowed: &[String]) -> Result<Self, String> {
        let mut policy = EgressPolicy::default();
        for entry in allowed {
            let entry = entry.trim().to_ascii_lowercase();
            if entry.is_empty() {
                continue;
            }
            let found = tokio::net::lookup_host(entry.as_str())
                .await
                .map_err(|err| format!("{entry}: not a reachable host:port ({err})"))?;
            policy.addresses.extend(found);
            policy.names.push(entry);
        }
        Ok(policy)
    }

    /// Every connection refused, none reported: a replayed page's WebSockets, preconnects and
    /// whatever else its requests' interception does not see reach nothing.
    pub fn offline() -> Self {
        EgressPolicy {
            offline: true,
            ..EgressPolicy::default()
        }
    }

    fn allows(&self, authority: &str, resolved: &[SocketAddr]) -> bool {
        self.names.iter().any(|name| name == authority)
            || (!resolved.is_empty() && resolved.iter().all(|a| self.addresses.contains(a)))
    }
}

/// Addresses a page must not reach: loopback, private, link-local, shared (CGNAT), unspecified,
/// multicast, reserved and the like, for IPv4, IPv6 and IPv4 inside IPv6.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                // Shared address space (carrier-grade NAT; Alibaba Cloud's metadata service).
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (18..20).contains(&b))
                // Reserved (the former class E), never a public host.
                || a >= 240
        }
        IpAddr::V6(v6) => {
            // An IPv4 address carried inside IPv6 reaches that IPv4 host: judged as it.
            if let Some(v4) = embedded_ipv4(v6) {
                return is_private(IpAddr::V4(v4));
            }
            let segments = v6.segments();
            let first = segments[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                // IPv4-compatible addresses (::/96, deprecated): never a public host.
                || segments[..6] == [0; 6]
                // Teredo (2001::/32): a tunnel to an IPv4 address of any kind.
                || (first == 0x2001 && segments[1] == 0)
        }
    }
}

/// The IPv4 address inside an IPv6 one where the network would deliver it to that IPv4 host:
/// IPv4-mapped (`::ffff:0:0/96`), NAT64 (`64:ff9b::/96`, and the local-use `64:ff9b:1::/48` with
/// the address in its last 32 bits) and 6to4 (`2002::/16`, the address in bits 16-48).
fn embedded_ipv4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let from = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        std::net::Ipv4Addr::new(a, b, c, d)
    };
    match s {
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] | [0x64, 0xff9b, 1, _, _, _, high, low] => {
            Some(from(high, low))
        }
        [0x2002, high, low, ..] => Some(from(high, low)),
        _ => None,
    }
}

/// One refused connection: `host:port` and why.
pub type Refusal = (String, String);

/// A browser's proxy; dropping it stops accepting connections.
pub struct EgressProxy {
    address: SocketAddr,
    offline: bool,
    refusals: Arc<Mutex<Capped<Refusal>>>,
    accept: JoinHandle<()>,
}

impl EgressProxy {
    pub async fn start(policy: Arc<EgressPolicy>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let refusals = Arc::new(Mutex::new(Capped::default()));
        let kept = refusals.clone();
        let offline = policy.offline;
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (policy, refusals) = (policy.clone(), kept.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        handle(request, policy.clone(), refusals.clone())
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Ok(EgressProxy {
            address,
            offline,
            refusals,
            accept,
        })
    }

    /// Whether it refuses everything (`EgressPolicy::offline`).
    pub fn is_offline(&self) -> bool {
        self.offline
    }

    /// For a browser context's `proxyServer`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The refusals since the last call.
    pub fn take_refusals(&self) -> Capped<Refusal> {
        self.refusals
            .lock()
            .map(|mut refusals| std::mem::take(&mut *refusals))
            .unwrap_or_default()
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

fn answer(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
}

/// `host:port` a proxy request is for (CONNECT: its authority; else the absolute URL's).
fn target(request: &Request<Incoming>) -> Option<(String, u16)> {
    let uri = request.uri();
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
        Some("https") | Some("wss") => 443,
        _ => 80,
    });
    Some((host.to_ascii_lowercase(), port))
}

/// The names the clouds give their metadata services (GCP, AWS, and the bare names their resolvers
/// answer): refused by name, whatever they resolve to where the server runs, as their addresses
/// are by address.
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

fn is_metadata_name(host: &str) -> bool {
    METADATA_NAMES.contains(&host.trim_end_matches('.'))
}

/// Resolve and check; `Err((status, reason, refused))`.
async fn checked_addresses(
    host: &str,
    port: u16,
    policy: &EgressPolicy,
) -> Result<Vec<SocketAddr>, (StatusCode, String, bool)> {
    let authority = format!("{host}:{port}");
    if is_metadata_name(host) && !policy.allows(&authority, &[]) {
        return Err((
            StatusCode::FORBIDDEN,
            format!(
                "{authority} is a cloud metadata service, private by its name (BROWSER_BLOCK_PRIVATE_NETWORKS)"
            ),
            true,
        ));
    }
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|err| {
            (
                StatusCode::BAD_GATEWAY,
                format!("{host} does not resolve: {err}"),
                false,
            )
        })?
        .collect();
    if !policy.allows(&authority, &resolved) {
        if let Some(private) = resolved.iter().find(|a| is_private(a.ip())) {
            return Err((
                StatusCode::FORBIDDEN,
                format!(
                    "{authority} resolves to {}, a loopback, private or link-local address (BROWSER_BLOCK_PRIVATE_NETWORKS)",
                    private.ip()
                ),
                true,
            ));
        }
    }
    if resolved.is_empty() {
        return Err((
            StatusCode::BAD_GATEWAY,
            format!("{host} has no address"),
            false,
        ));
    }
    Ok(resolved)
}

/// The first of the checked addresses that accepts (`localhost` may be `::1` and `127.0.0.1`).
async fn connect(addresses: &[SocketAddr]) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::other("no address");
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = err,
        }
    }
    Err(last)
}

async fn handle(
    mut request: Request<Incoming>,
    policy: Arc<EgressPolicy>,
    refusals: Arc<Mutex<Capped<Refusal>>>,
) -> Result<Response<Body>, Infallible> {
    if policy.offline {
        return Ok(answer(
            StatusCode::FORBIDDEN,
            "browserenv: a replay reaches no network\n".into(),
        ));
    }
    let Some((host, port)) = target(&request) else {
        return Ok(answer(
            StatusCode::BAD_REQUEST,
            "not a proxy request".into(),
        ));
    };
    let addresses = match checked_addresses(&host, port, &policy).await {
        Ok(addresses) => addresses,
        Err((status, reason, refused)) => {
            if refused {
                if let Ok(mut refusals) = refusals.lock() {
                    refusals.push((format!("{host}:{port}"), reason.clone()));
                }
            }
            // Shown by Chromium for plain HTTP; a CONNECT refusal is its tunnel error.
            return Ok(answer(
                status,
                format!("browserenv: not loaded: {reason}\n"),
            ));
        }
    };
    let upstream = match connect(&addresses).await {
        Ok(stream) => stream,
        Err(err) => {
            return Ok(answer(
                StatusCode::BAD_GATEWAY,
                format!("browserenv: cannot connect to {host}:{port}: {err}\n"),
            ))
        }
    };
    if request.method() == Method::CONNECT {
        // TLS and WebSockets: a byte tunnel to the checked address.
        tokio::spawn(async move {
            if let Ok(upgraded) = hyper::upgrade::on(request).await {
                let mut upstream = upstream;
                let _ =
                    tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut upstream).await;
            }
        });
        return Ok(Response::new(Body::empty()));
    }
    // Plain HTTP: one request on a connection of its own to the checked address.
    let Ok((mut sender, connection)) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
    else {
        return Ok(answer(
            StatusCode::BAD_GATEWAY,
            format!("browserenv: {host}:{port} did not speak HTTP\n"),
        ));
    };
    tokio::spawn(connection);
    let origin_form = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .unwrap_or_default();
    *request.uri_mut() = origin_form;
    request.headers_mut().remove("proxy-connection");
    request.headers_mut().remove("proxy-authorization");
    match sender.send_request(request).await {
        Ok(response) => Ok(response.map(Body::new)),
        Err(err) => Ok(answer(
            StatusCode::BAD_GATEWAY,
            format!("browserenv: {host}:{port} failed: {err}\n"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_known() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "::",
            // Reserved IPv4, and the metadata addresses of the clouds (IPv4 and AWS's IPv6).
            "240.0.0.1",
            "255.255.255.254",
            "100.100.100.200",
            "fd00:ec2::254",
            // IPv4 inside IPv6: NAT64, 6to4, IPv4-compatible, Teredo.
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::10.0.0.5",
            "64:ff9b:1::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "2002:0a00:0005::",
            "::a9fe:a9fe",
            "::8.8.8.8",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        ] {
            assert!(is_private(private.parse().unwrap()), "{private}");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700::1111",
            "172.32.0.1",
            // A public IPv4 address through NAT64 or 6to4 is public.
            "64:ff9b::808:808",
            "2002:0808:0808::1",
            "2001:db9::1",
        ] {
            assert!(!is_private(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn the_metadata_services_are_known_by_name() {
        for name in [
            "metadata.google.internal",
            "metadata.google.internal.",
            "metadata",
        ] {
            assert!(is_metadata_name(name), "{name}");
        }
        for name in ["example.com", "metadata.example.com", "google.internal"] {
            assert!(!is_metadata_name(name), "{name}");
        }
    }
}
