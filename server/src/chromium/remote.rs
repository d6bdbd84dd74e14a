//! A Chromium that is already running (`--browser-url`): checking its DevTools endpoint, and
//! keeping the secrets of its URL out of logs and errors.

use super::*;

/// Query parameters whose values are secrets (browserless takes `?token=`).
const SECRET_PARAMETERS: &[&str] = &[
    "token",
    "access_token",
    "api_key",
    "apikey",
    "key",
    "secret",
    "password",
    "auth",
];

/// The secret parts of a DevTools URL: its password and the values of secret query parameters.
pub(super) fn secrets_of(url: &str) -> Vec<String> {
    let Ok(parsed) = url::Url::parse(url) else {
        // Unparsable: everything after `?` or `@` may be a secret.
        return url
            .split(['?', '@'])
            .skip(1)
            .map(str::to_string)
            .filter(|part| !part.is_empty())
            .collect();
    };
    let mut secrets: Vec<String> = parsed.password().map(str::to_string).into_iter().collect();
    for (name, value) in parsed.query_pairs() {
        if SECRET_PARAMETERS.contains(&name.to_ascii_lowercase().as_str()) && !value.is_empty() {
            secrets.push(value.to_string());
        }
    }
    // As written in the URL too (percent-encoded), which is how error messages quote it.
    let raw: Vec<String> = parsed
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, _)| SECRET_PARAMETERS.contains(&name.to_ascii_lowercase().as_str()))
        .map(|(_, value)| value.to_string())
        .filter(|value| !value.is_empty())
        .collect();
    secrets.extend(raw);
    secrets
}

/// `text` with every secret of `url` replaced by `***`: what logs and error messages show.
pub fn without_secrets_of(url: &str, text: &str) -> String {
    let mut secrets = secrets_of(url);
    // Longest first, so a secret that contains another is replaced whole.
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets.iter().fold(text.to_string(), |text, secret| {
        text.replace(secret.as_str(), "***")
    })
}

/// A DevTools URL as logs and errors show it (`ws://pool:3000/?token=***`).
pub fn redacted_url(url: &str) -> String {
    without_secrets_of(url, url)
}

/// Check that a remote DevTools endpoint answers, before serving: its product name and version.
/// Errors never carry the URL's secrets.
pub async fn remote_version(url: &str, timeout: Duration) -> anyhow::Result<String> {
    remote_version_of(url, timeout)
        .await
        .map_err(|err| anyhow::anyhow!(without_secrets_of(url, &format!("{err:#}"))))
}

pub(super) async fn remote_version_of(url: &str, timeout: Duration) -> anyhow::Result<String> {
    let check = async {
        let (browser, mut handler) = CdpBrowser::connect(url).await.map_err(|err| {
            let err = anyhow::Error::from(err).context("cannot connect to the DevTools endpoint");
            match host_header_hint(url) {
                Some(hint) => err.context(hint),
                None => err,
            }
        })?;
        let _events = Tasks(vec![tokio::spawn(async move {
            while handler.next().await.is_some() {}
        })]);
        let version = browser.version().await;
        anyhow::Ok(
            version
                .context("the endpoint did not answer Browser.getVersion")?
                .product,
        )
    };
    tokio::time::timeout(timeout, check)
        .await
        .map_err(|_| anyhow::anyhow!("the DevTools endpoint did not answer in time"))?
}

/// Chromium answers `/json/version` only when the Host header is an IP address or `localhost`
/// (DNS-rebinding protection); behind a DNS name the failure would otherwise read like a bad URL.
pub(super) fn host_header_hint(url: &str) -> Option<String> {
    let named_host = url::Url::parse(url)
        .ok()
        .filter(|u| u.scheme().starts_with("http"))
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            let plain = host == "localhost"
                || host
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok();
            (!plain).then_some(host)
        });
    named_host.map(|host| {
        format!(
            "a plain Chromium answers /json/version only for an IP address or localhost, \
             not a name like {host}: give its IP address, or its ws://… address"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_of_devtools_urls_are_never_shown() {
        assert_eq!(
            redacted_url("ws://pool:3000/?token=s3cr%2Ft&launch=x"),
            "ws://pool:3000/?token=***&launch=x"
        );
        assert_eq!(
            redacted_url("ws://u:pw@pool:3000/"),
            "ws://u:***@pool:3000/"
        );
        assert_eq!(
            redacted_url("http://127.0.0.1:9222"),
            "http://127.0.0.1:9222"
        );
        let url = "ws://pool:3000?token=s3cr%2Ft";
        assert_eq!(
            without_secrets_of(url, "failed: s3cr/t and s3cr%2Ft"),
            "failed: *** and ***"
        );
        assert_eq!(redacted_url("not a url?token=abc"), "not a url?***");
    }

    #[test]
    fn only_http_urls_with_a_host_name_get_the_host_header_hint() {
        let hint = host_header_hint("http://chromium:9222").expect("a hint");
        assert!(hint.contains("like chromium"), "{hint}");
        for url in [
            "http://127.0.0.1:9222",
            "http://localhost:9222/",
            "http://[::1]:9222",
            "ws://chromium:3000?token=x",
            "not a url",
        ] {
            assert_eq!(host_header_hint(url), None, "{url}");
        }
    }
}
