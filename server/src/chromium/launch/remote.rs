//! A Chromium that is already running (`--browser-url`): checking its DevTools endpoint, and
//! keeping the secrets of its URL out of logs and errors.

use crate::chromium::*;

/// Words that make a query parameter's value a secret, in its name (percent-decoded) written in
/// any case and with or without `-` and `_` (`token`, `accessToken`, `api-key`, `x-api-key`,
/// `sessionToken`, `X-Amz-Signature`, ...; browserless takes `?token=`). Redacting a harmless
/// value now and then is the cheaper mistake.
const SECRET_WORDS: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "credential",
    "sig",
    "session",
    "jwt",
    "bearer",
];

fn is_secret_parameter(name: &str) -> bool {
    let name: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .collect::<String>()
        .to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| name.contains(word))
}

/// A path segment that looks like a credential (`wss://provider/<token>`, base64 and its `=`
/// padding included): long, and made of letters and digits both.
fn is_secret_segment(segment: &str) -> bool {
    segment.len() >= 16
        && segment.chars().any(|c| c.is_ascii_digit())
        && segment.chars().any(|c| c.is_ascii_alphabetic())
        && segment.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '%' | '=' | '+')
        })
}

/// The path segments before an id that lets whoever knows it drive the browser or one of its
/// pages, on an endpoint with no authentication of its own: `/devtools/browser/<id>`, whatever
/// the id looks like.
const DEVTOOLS_ID_AFTER: &[[&str; 2]] = &[["devtools", "browser"], ["devtools", "page"]];

/// The secret parts of a DevTools URL: its password and the values of secret query parameters.
pub(in crate::chromium) fn secrets_of(url: &str) -> Vec<String> {
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
    if !parsed.username().is_empty() && parsed.password().is_none() {
        // `wss://TOKEN@host`: a user name alone is a credential too.
        secrets.push(parsed.username().to_string());
    }
    // Parameters split at `&` and at `;` (which some servers take as `&`), their names matched
    // decoded (`%74oken` is `token`); each secret value as written in the URL (how error messages
    // quote it) and decoded.
    for pair in parsed.query().unwrap_or_default().split(['&', ';']) {
        let Some((raw_name, raw_value)) = pair.split_once('=') else {
            continue;
        };
        let decoded = |text: &str| -> String {
            url::form_urlencoded::parse(format!("{text}=").as_bytes())
                .next()
                .map(|(text, _)| text.into_owned())
                .unwrap_or_default()
        };
        if is_secret_parameter(&decoded(raw_name)) && !raw_value.is_empty() {
            secrets.push(raw_value.to_string());
            secrets.push(decoded(raw_value));
        }
    }
    let segments: Vec<&str> = parsed.path_segments().into_iter().flatten().collect();
    for (at, segment) in segments.iter().enumerate() {
        let devtools_id = at >= 2
            && DEVTOOLS_ID_AFTER
                .iter()
                .any(|before| before[..] == segments[at - 2..at]);
        if (devtools_id || is_secret_segment(segment)) && !segment.is_empty() {
            secrets.push(segment.to_string());
        }
    }
    secrets.retain(|secret| !secret.is_empty());
    secrets
}

/// `text` with every secret of `url` replaced by `***`: what logs and error messages show.
pub fn without_secrets_of(url: &str, text: &str) -> String {
    let mut secrets = secrets_of(url);
    // Longest first, so a secret that contains another is replaced whole.
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets.iter().fold(text.to_string(), |text, secret| {
        text.replace(secret.as_str(), browserenv::secrets::HIDDEN_CREDENTIAL)
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

pub(in crate::chromium) async fn remote_version_of(
    url: &str,
    timeout: Duration,
) -> anyhow::Result<String> {
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
pub(in crate::chromium) fn host_header_hint(url: &str) -> Option<String> {
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
        // The names pools and providers use, in any case and spelling, and tokens in the path.
        for (url, shown) in [
            ("wss://p/?accessToken=a1b2c3", "wss://p/?accessToken=***"),
            ("wss://p/?api-key=a1b2c3", "wss://p/?api-key=***"),
            (
                "wss://p/?x-api-key=a1b2c3&launch=x",
                "wss://p/?x-api-key=***&launch=x",
            ),
            ("wss://p/?sessionToken=a1b2c3", "wss://p/?sessionToken=***"),
            ("wss://p/?API_KEY=a1b2c3", "wss://p/?API_KEY=***"),
            (
                "wss://provider.example/connect/9f8e7d6c5b4a39281706",
                "wss://provider.example/connect/***",
            ),
            (
                "ws://127.0.0.1:9222/devtools/browser/0f6a1c2e-58f3-4d49-9c1b-6c0e3a7e8b21",
                "ws://127.0.0.1:9222/devtools/browser/***",
            ),
            ("wss://a1b2c3@p/", "wss://***@p/"),
            // A name percent-encoded, parameters split at `;`, more names.
            ("wss://p/?%74oken=s3cr%2Ft", "wss://p/?%74oken=***"),
            ("wss://p/?to%6Ben=abc123", "wss://p/?to%6Ben=***"),
            (
                "wss://p/?launch=1;token=abc123",
                "wss://p/?launch=1;token=***",
            ),
            ("wss://p/?a=1&sig=abc123def", "wss://p/?a=1&sig=***"),
            (
                "wss://p/?X-Amz-Signature=abc123",
                "wss://p/?X-Amz-Signature=***",
            ),
            ("wss://p/?pwd=hunter2", "wss://p/?pwd=***"),
            ("wss://p/?jwt=eyJhbGciOi.eyJzdWIi.c2ln", "wss://p/?jwt=***"),
            ("wss://p/?Bearer=abc123", "wss://p/?Bearer=***"),
            // Base64 in the path, with its padding.
            (
                "wss://p/connect/QWxhZGRpbjpvcGVuc2VzYW1l==",
                "wss://p/connect/***",
            ),
            ("wss://p/t/QWxh+ZGRpbjpvcGVuc2Vz=", "wss://p/t/***"),
            // A DevTools id of any shape.
            (
                "ws://127.0.0.1:9222/devtools/browser/browserid",
                "ws://127.0.0.1:9222/devtools/browser/***",
            ),
            (
                "ws://127.0.0.1:9222/devtools/page/ABCDEF",
                "ws://127.0.0.1:9222/devtools/page/***",
            ),
            // What is not a secret stays.
            (
                "wss://p/?launch=x&headless=true",
                "wss://p/?launch=x&headless=true",
            ),
            (
                "ws://h:9222/devtools/browser/",
                "ws://h:9222/devtools/browser/",
            ),
        ] {
            assert_eq!(redacted_url(url), shown, "{url}");
        }
        // The decoded value is hidden too, wherever a message quotes it.
        assert_eq!(
            without_secrets_of("wss://p/?%74oken=s3cr%2Ft", "refused s3cr/t"),
            "refused ***"
        );
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
