//! Who may use the server: the bearer token, and which browser pages and host names may reach it.
//!
//! Any web page can make a browser send requests and WebSocket upgrades to `127.0.0.1`: a page in
//! the person's own browser, or a page the agent opened in our Chromium, which runs on the same
//! machine. Browsers mark those requests with an `Origin` header, which agents' clients (OpenEnv's
//! Python client, our Rust client) never send, so a request with an `Origin` is refused unless the
//! origin is allowed (`BROWSER_ALLOWED_ORIGINS`). Navigations, frames, images and scripts carry no
//! `Origin`, but a browser marks every request a page makes with `Sec-Fetch-Site` (anything but
//! `none`, which is a person typing the address): those are refused too, or a page could show
//! `/sessions` in a frame of the agent's own screenshot. DNS rebinding (a name of the attacker's that
//! resolves to `127.0.0.1`) arrives with that name in `Host`, so only IP literals, `localhost` and
//! configured names (`BROWSER_ALLOWED_HOSTS`) are served. Both apply to every route, `/health`
//! included; the token to every route but `/health` and `/ready`, which launchers and balancers
//! poll without one. The token says who calls (`Access::caller`): the server's token, or a
//! campaign person's own (`caller.rs`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};

use crate::api_error::{ApiError, Code};
use crate::operations::caller::Caller;

/// Who a token other than the server's stands for: a campaign's people (`campaign::Roster`).
pub trait People: Send + Sync + std::fmt::Debug {
    /// The person whose token `token` is, compared in constant time.
    fn person(&self, token: &str) -> Option<String>;
}

/// The access rules of one server.
#[derive(Clone, Default)]
pub struct Access {
    /// Every route but `/health` and `/ready` needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Browser origins (`scheme://host[:port]`) whose pages may use the server.
    pub allowed_origins: Vec<String>,
    /// Host names besides IP literals and `localhost` the server answers to.
    pub allowed_hosts: Vec<String>,
    /// Whether `Host` is checked: not behind a Unix socket, where only the proxy in front of the
    /// server can connect and it sends its own public name.
    pub check_host: bool,
    /// A campaign's people (`--campaign`), each known by a token of their own.
    pub people: Option<Arc<dyn People>>,
    /// Other replicas' requests carry a signature made with the token instead of the token
    /// (`server/src/operations/signing.rs`); each is taken once.
    pub peer_signatures: Arc<crate::operations::signing::Verifier>,
    /// Where the peers reach this replica besides the address a connection arrives at
    /// (`BROWSER_PEER_ADDRESSES`: a published port, NAT).
    pub peer_addresses: Vec<std::net::SocketAddr>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("Access")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("check_host", &self.check_host)
            .field("people", &self.people)
            .field("peer_addresses", &self.peer_addresses)
            .finish()
    }
}

impl Access {
    /// Whether a request may proceed past the origin and host rules; the refusal says why.
    pub fn admit(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").trim_end_matches('/');
            let allowed = self
                .allowed_origins
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(origin));
            if !allowed {
                return Err(Refusal::Origin(origin.chars().take(200).collect()));
            }
        } else if let Some(site) = headers.get("sec-fetch-site") {
            // A page's request that says no origin (a navigation, a frame, an image): only an
            // allowed origin's pages may use the server, and they say who they are.
            let site = site.to_str().unwrap_or("");
            if !site.eq_ignore_ascii_case("none") {
                return Err(Refusal::Page(site.chars().take(40).collect()));
            }
            // `none`: the browser's own navigation (a person typing the address; an agent's
            // reset, which may not name this server: `environment::check_not_the_server`).
        }
        if self.check_host {
            if let Some(host) = headers.get(header::HOST) {
                let host = host.to_str().unwrap_or("");
                if !self.host_allowed(host) {
                    return Err(Refusal::Host(host.chars().take(200).collect()));
                }
            }
        }
        Ok(())
    }

    /// `host[:port]` is an IP literal, `localhost`, or a configured name. Not the unspecified
    /// address nor IPv4 written as IPv6 (`[::ffff:127.0.0.1]`): browsers do not count those as
    /// loopback, so a page's requests to them carry no `Sec-Fetch-Site` to refuse them by, and
    /// no client needs them.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        let plain_address = |ip: std::net::IpAddr| match ip {
            std::net::IpAddr::V4(v4) => !v4.is_unspecified(),
            std::net::IpAddr::V6(v6) => {
                let ipv4_inside = v6.to_ipv4_mapped().is_some()
                    || (v6.segments()[..6] == [0; 6] && !v6.is_loopback());
                !v6.is_unspecified() && !ipv4_inside
            }
        };
        name.eq_ignore_ascii_case("localhost")
            || name.parse::<std::net::IpAddr>().is_ok_and(plain_address)
            || self
                .allowed_hosts
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(name))
    }

    /// Whether `host` (a signed request's `Host`) names this replica: the address its connection
    /// arrived at (`local`), or one of `peer_addresses`. A signature is made for the address a
    /// replica asks (`replicas::Replicas::signature`, always `ip:port`), so one captured by
    /// whatever held an address before (a departed replica's) is refused by every other replica.
    pub fn addressed_here(&self, host: &str, local: Option<std::net::SocketAddr>) -> bool {
        // Without a port, HTTP's: a URL leaves port 80 out, and so does the `Host` it sends.
        let asked = host.parse::<std::net::SocketAddr>().ok().or_else(|| {
            let ip = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
            let ip = ip.unwrap_or(host).parse::<std::net::IpAddr>().ok()?;
            Some(std::net::SocketAddr::new(ip, 80))
        });
        let Some(asked) = asked else {
            return false;
        };
        let same = |own: &std::net::SocketAddr| {
            own.port() == asked.port() && own.ip().to_canonical() == asked.ip().to_canonical()
        };
        local.iter().chain(&self.peer_addresses).any(same)
    }

    /// Who presents the request's bearer token: the server's token is `Caller::Shared`, a
    /// campaign person's is that person. Once the server knows any token, one it does not know is
    /// refused (a removed person's included); a server without a token of its own serves a request
    /// without one as before, as `Caller::Shared`.
    pub fn caller(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        let shared = self.token.as_ref();
        match given {
            Some(given) if shared.is_some_and(|t| same_secret(given.as_bytes(), t.as_bytes())) => {
                Ok(Caller::Shared)
            }
            Some(given) => match self.people.as_ref().and_then(|p| p.person(given)) {
                Some(person) => Ok(Caller::Person(person)),
                None if shared.is_none() && self.people.is_none() => Ok(Caller::Shared),
                None => Err(unauthorized("invalid bearer token")),
            },
            None if shared.is_none() => Ok(Caller::Shared),
            None => Err(unauthorized(
                "missing bearer token: send Authorization: Bearer <token>",
            )),
        }
    }
}

/// The host part of a `Host` header: `[::1]:8000` is `::1`, `a.example:80` is `a.example`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Origin(String),
    /// A page's request without `Origin`, by its `Sec-Fetch-Site`.
    Page(String),
    Host(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (detail, code) = match self {
            Refusal::Origin(origin) => (
                format!(
                    "requests from web pages are refused (Origin {origin:?}); allow the origin \
                     with BROWSER_ALLOWED_ORIGINS if a page of yours must use this server"
                ),
                Code::OriginNotAllowed,
            ),
            Refusal::Page(site) => (
                format!(
                    "requests from web pages are refused (Sec-Fetch-Site {site:?}: a navigation, \
                     frame, image or script of a page)"
                ),
                Code::OriginNotAllowed,
            ),
            Refusal::Host(host) => (
                format!(
                    "unknown host {host:?}: this server answers to IP addresses, localhost and \
                     the names in BROWSER_ALLOWED_HOSTS"
                ),
                Code::HostNotAllowed,
            ),
        };
        ApiError::new(code, detail).into_response()
    }
}

/// Origin and Host on every route, WebSocket upgrades included.
pub async fn check_origin_and_host(
    State(access): State<Arc<Access>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match access.admit(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            tracing::warn!("refused a request: {refusal:?}");
            refusal.into_response()
        }
    }
}

/// `Authorization: Bearer <token>` on every route but `/health` and `/ready`; or, from another
/// replica, a signature made with the token over the request (`server/src/operations/signing.rs`). The routes
/// find who calls in the request's extensions (`Caller`; a replica's request is the server's).
pub async fn require_token(
    State(access): State<Arc<Access>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use crate::operations::signing::HEADER;
    let signed = request.headers().get(HEADER).cloned();
    let (Some(token), Some(signature), false) = (
        access.token.as_ref(),
        signed,
        request.headers().contains_key(header::AUTHORIZATION),
    ) else {
        let caller = match access.caller(request.headers()) {
            Ok(caller) => caller,
            Err(refused) => return refused.into_response(),
        };
        if let Err(refused) = caller.admit(&request) {
            return refused.into_response();
        }
        request.extensions_mut().insert(caller);
        return next.run(request).await;
    };
    let signature = signature.to_str().unwrap_or("");
    match admit_signed(&access, token, signature, request).await {
        Ok(request) => next.run(request).await,
        Err(refused) => refused,
    }
}

/// A peer's signed request, its body read, once its signature holds; or the answer refusing it.
/// Anyone can send the header, without any credential, so all of the signature is judged on the
/// head (its form and time, the address it was signed for, its MAC over the head and the body's
/// digest, its nonce) before a turn to read the body is taken; the body is then read within
/// `signing::BODY_LIMIT` and `signing::BODY_WAIT`, one of `signing::BODIES_AT_ONCE` and of
/// `signing::BODIES_PER_ADDRESS` from its remote address, and must be the one signed.
async fn admit_signed(
    access: &Access,
    token: &str,
    signature: &str,
    request: axum::extract::Request,
) -> Result<axum::extract::Request, Response> {
    use crate::operations::signing::{self, Head, Refused, Stamp};
    let path = request.uri().path().to_string();
    let refuse = |refused: Refused| {
        tracing::warn!("refused a peer request to {path}: {refused}");
        unauthorized(&refused.to_string()).into_response()
    };
    Stamp::read(signature).map_err(refuse)?;
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_string();
    let local = request
        .extensions()
        .get::<crate::operations::connection::LocalAddr>()
        .map(|local| local.0);
    if !access.addressed_here(&host, local) {
        return Err(refuse(Refused::Elsewhere(host.chars().take(200).collect())));
    }
    let path_and_query = request
        .uri()
        .path_and_query()
        .map_or(request.uri().path(), |p| p.as_str())
        .to_string();
    let verified = access
        .peer_signatures
        .verify_head(
            token,
            signature,
            Head {
                method: request.method().as_str(),
                host: &host,
                path_and_query: &path_and_query,
                headers: request.headers(),
            },
        )
        .map_err(refuse)?;
    let too_large = || {
        ApiError::new(
            Code::PayloadTooLarge,
            format!(
                "a signed peer request's body is {} bytes at most",
                signing::BODY_LIMIT
            ),
        )
        .into_response()
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > signing::BODY_LIMIT as u64) {
        return Err(too_large());
    }
    let from = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip().to_canonical());
    let Some(_turn) = access.peer_signatures.body_turn(from).await else {
        return Err(ApiError::new(
            Code::PeerBusy,
            format!(
                "{} signed peer requests are being read ({} from one address at most): try \
                 again shortly",
                signing::BODIES_AT_ONCE,
                signing::BODIES_PER_ADDRESS
            ),
        )
        .into_response());
    };
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(signing::BODY_WAIT, async {
        let mut stream = body.into_data_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = futures_util::StreamExt::next(&mut stream).await {
            let Ok(chunk) = chunk else {
                return Err(
                    unauthorized("the signed request's body could not be read").into_response()
                );
            };
            if bytes.len() + chunk.len() > signing::BODY_LIMIT {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    })
    .await;
    let bytes = match read {
        Ok(read) => read?,
        Err(_) => {
            return Err(Code::BodyTimeout
                .error(format!(
                    "a signed peer request's body must arrive within {:?}",
                    signing::BODY_WAIT
                ))
                .into_response())
        }
    };
    verified.check_body(&bytes).map_err(refuse)?;
    let mut request = axum::extract::Request::from_parts(parts, bytes.into());
    request.extensions_mut().insert(Caller::Shared);
    Ok(request)
}

/// Compare without leaking where the first difference is.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized(detail: &str) -> ApiError {
    Code::Unauthorized.error(detail)
}

/// Whether `url` is this server itself on loopback (`port`: where it listens), which no browser
/// of ours may load: a reset may not start there (`environment::check_not_the_server`), and an
/// archive neither records nor answers it.
pub fn names_this_server(url: &url::Url, port: Option<u16>) -> bool {
    let local = match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
        }
        None => false,
    };
    local && port.is_some() && url.port_or_known_default() == port
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn pages_are_refused_unless_their_origin_is_allowed() {
        let access = Access {
            check_host: true,
            allowed_origins: vec!["http://localhost:3000".into()],
            ..Access::default()
        };
        assert!(access
            .admit(&headers(&[("host", "127.0.0.1:8000")]))
            .is_ok());
        for origin in ["http://evil.example", "null", "http://127.0.0.1:8000"] {
            assert_eq!(
                access.admit(&headers(&[("host", "127.0.0.1:8000"), ("origin", origin)])),
                Err(Refusal::Origin(origin.into())),
                "{origin}"
            );
        }
        assert!(access
            .admit(&headers(&[
                ("host", "127.0.0.1"),
                ("origin", "http://LOCALHOST:3000/")
            ]))
            .is_ok());
    }

    #[test]
    fn what_a_page_asks_without_an_origin_is_refused_too() {
        let access = Access {
            check_host: true,
            allowed_origins: vec!["http://localhost:3000".into()],
            ..Access::default()
        };
        for site in ["cross-site", "same-site", "same-origin", "garbage"] {
            assert_eq!(
                access.admit(&headers(&[("host", "127.0.0.1"), ("sec-fetch-site", site)])),
                Err(Refusal::Page(site.into())),
                "{site}"
            );
        }
        // A person typing the address; an allowed origin's page, which says who it is.
        assert!(access
            .admit(&headers(&[
                ("host", "127.0.0.1"),
                ("sec-fetch-site", "none")
            ]))
            .is_ok());

        assert!(access
            .admit(&headers(&[
                ("host", "127.0.0.1"),
                ("origin", "http://localhost:3000"),
                ("sec-fetch-site", "cross-site")
            ]))
            .is_ok());
    }

    #[test]
    fn only_ip_literals_localhost_and_configured_names_are_served() {
        let access = Access {
            check_host: true,
            allowed_hosts: vec!["browserenv.internal".into()],
            ..Access::default()
        };
        for host in [
            "127.0.0.1:8000",
            "127.0.0.1",
            "[::1]:8000",
            "10.1.2.3",
            "localhost:8000",
            "LocalHost",
            "browserenv.internal:8000",
        ] {
            assert!(access.host_allowed(host), "{host}");
        }
        for host in [
            "evil.example:8000",
            "127.0.0.1.evil.example",
            "localhost.evil",
            "",
            // Addresses browsers do not treat as loopback (no Sec-Fetch-Site from their pages).
            "0.0.0.0:8000",
            "[::]:8000",
            "[::ffff:127.0.0.1]:8000",
            "[::ffff:7f00:1]",
            "[::7f00:1]",
        ] {
            assert!(!access.host_allowed(host), "{host}");
        }
        // Behind a Unix socket the proxy's own name arrives: not checked.
        let proxied = Access::default();
        assert!(proxied
            .admit(&headers(&[("host", "space.hf.space")]))
            .is_ok());
    }

    #[test]
    fn a_signed_request_is_taken_at_this_replica_s_own_addresses_alone() {
        let published: std::net::SocketAddr = "192.0.2.7:18000".parse().unwrap();
        let access = Access {
            peer_addresses: vec![published],
            ..Access::default()
        };
        let local = Some("10.0.0.5:8000".parse().unwrap());
        for host in ["10.0.0.5:8000", "192.0.2.7:18000"] {
            assert!(access.addressed_here(host, local), "{host}");
        }
        for host in [
            "10.0.0.6:8000",
            "10.0.0.5:8001",
            "10.0.0.5",
            "localhost:8000",
            "browserenv:8000",
            "",
        ] {
            assert!(!access.addressed_here(host, local), "{host}");
        }
        // A dual-stack listener sees IPv4 as IPv6; port 80 is left out of `Host`.
        let mapped = Some("[::ffff:10.0.0.5]:8000".parse().unwrap());
        assert!(access.addressed_here("10.0.0.5:8000", mapped));
        assert!(access.addressed_here("10.0.0.5", Some("10.0.0.5:80".parse().unwrap())));
        assert!(access.addressed_here("[::1]", Some("[::1]:80".parse().unwrap())));
        // Behind a Unix socket: only the addresses it is told are its own.
        assert!(!access.addressed_here("10.0.0.5:8000", None));
        assert!(access.addressed_here("192.0.2.7:18000", None));
    }

    /// A campaign's people, for the tests: `ana-token` is ana's.
    #[derive(Debug)]
    struct Ana;

    impl People for Ana {
        fn person(&self, token: &str) -> Option<String> {
            (token == "ana-token").then(|| "ana".into())
        }
    }

    #[test]
    fn a_token_says_who_calls() {
        let bearer = |token: &str| headers(&[("authorization", &format!("Bearer {token}"))]);
        let status = |result: Result<Caller, ApiError>| result.err().map(|r| r.status());
        let server = Access {
            token: Some("shared".into()),
            people: Some(Arc::new(Ana)),
            ..Access::default()
        };
        assert_eq!(server.caller(&bearer("shared")).unwrap(), Caller::Shared);
        assert_eq!(
            server.caller(&bearer("ana-token")).unwrap(),
            Caller::Person("ana".into())
        );
        for refused in [bearer("bo-token"), bearer(""), HeaderMap::new()] {
            assert_eq!(
                status(server.caller(&refused)),
                Some(StatusCode::UNAUTHORIZED)
            );
        }
        // Without a token of its own the server serves a request without one as before; a token
        // it does not know is refused once it knows people's.
        let open = Access {
            people: Some(Arc::new(Ana)),
            ..Access::default()
        };
        assert_eq!(open.caller(&HeaderMap::new()).unwrap(), Caller::Shared);
        assert_eq!(
            open.caller(&bearer("ana-token")).unwrap(),
            Caller::Person("ana".into())
        );
        assert_eq!(
            status(open.caller(&bearer("removed"))),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            Access::default().caller(&bearer("anything")).unwrap(),
            Caller::Shared
        );
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
