//! Where a reset (and a `goto`) may go: the seed's rule for a start URL, and never this server
//! itself. The egress rules (`BROWSER_BLOCK_PRIVATE_NETWORKS`) hold for both at the browser's
//! connections (`server/src/chromium/intercept/egress.rs`).

use super::EnvError;
use crate::operations::access::names_this_server;

/// Check a reset URL the way the seed does: http(s), a host, no user or password. The host must
/// be in the text itself: the URL parser would read `http:///basic.html` (or `http:/basic.html`)
/// as host `basic.html`, where Python's `urlsplit` (the reference) finds none.
pub fn check_start_url(raw: &str) -> Result<url::Url, EnvError> {
    let rejected = || EnvError::BadStartUrl;
    let url = url::Url::parse(raw).map_err(|_| rejected())?;
    let written_host = raw
        .trim()
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .is_some_and(|authority| !authority.rsplit('@').next().unwrap_or("").is_empty());
    let has_host = written_host && url.host_str().is_some_and(|h| !h.is_empty());
    if matches!(url.scheme(), "http" | "https")
        && has_host
        && url.username().is_empty()
        && url.password().is_none()
    {
        Ok(url)
    } else {
        Err(rejected())
    }
}

/// A start URL must not be this server itself on loopback (`port`: where it listens): the agent's
/// browser would show the server's routes (`/sessions`, other sessions' text) in its screenshot.
/// Pages cannot go there (`access.rs`), but a reset is a navigation the browser makes on its own,
/// as when a person types an address. Elsewhere than loopback the server asks for its token.
pub fn check_not_the_server(url: &url::Url, port: Option<u16>) -> Result<(), EnvError> {
    if names_this_server(url, port) {
        return Err(EnvError::StartUrlIsTheServer);
    }
    Ok(())
}

/// A URL an action opens (`goto`'s `url`), under exactly the reset's rules, its refusal naming
/// `field`.
pub fn check_url(field: &str, raw: &str, port: Option<u16>) -> Result<url::Url, EnvError> {
    let named = |refused: EnvError| {
        let why = refused.to_string();
        EnvError::ActionUrl(match why.strip_prefix("start_url") {
            Some(rest) => format!("{field}{rest}"),
            None => format!("{field}: {why}"),
        })
    };
    let url = check_start_url(raw).map_err(named)?;
    check_not_the_server(&url, port).map_err(named)?;
    Ok(url)
}
