//! Origin and Host checks over real sockets: a web page (anything carrying an `Origin`) and a
//! rebinding name (an unknown `Host`) get nothing, on plain routes and on WebSocket upgrades,
//! while agents' clients (no `Origin`, an IP or localhost in `Host`) and configured origins and
//! names go through.

use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::{start, ServerConfig, ServerHandle};

async fn server(config: ServerConfig) -> ServerHandle {
    start(FakeLauncher::new(FakeScript::default()), config)
        .await
        .unwrap()
}

async fn get(server: &ServerHandle, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = reqwest::Client::new().get(format!("{}{path}", server.base_url()));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The HTTP status of a WebSocket upgrade with these extra headers (101 when it is accepted).
async fn upgrade(server: &ServerHandle, path: &str, headers: &[(&'static str, &str)]) -> u16 {
    let mut request = format!("ws://{}{path}", server.addr)
        .into_client_request()
        .unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(*name, value.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((_, response)) => response.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(err) => panic!("{err}"),
    }
}

#[tokio::test]
async fn web_pages_get_nothing_on_any_route_or_upgrade() {
    let server = server(ServerConfig::default()).await;
    let page = [("origin", "http://evil.example")];
    for path in ["/health", "/metadata", "/sessions", "/state", "/schema"] {
        let (status, body) = get(&server, path, &page).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (403, Some("ORIGIN_NOT_ALLOWED")),
            "{path}"
        );
    }
    // A page served by our own site listener is a web page too.
    let own = [("origin", "http://127.0.0.1:40001")];
    assert_eq!(get(&server, "/sessions", &own).await.0, 403);
    assert_eq!(upgrade(&server, "/ws", &page).await, 403);
    assert_eq!(upgrade(&server, "/sessions/x/watch", &page).await, 403);
    // Agents' clients send no Origin.
    assert_eq!(get(&server, "/sessions", &[]).await.0, 200);
    assert_eq!(upgrade(&server, "/ws", &[]).await, 101);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_rebinding_name_is_refused_and_ips_localhost_and_configured_names_served() {
    let server = server(ServerConfig {
        allowed_hosts: vec!["browserenv.internal".into()],
        ..ServerConfig::default()
    })
    .await;
    let (status, body) = get(&server, "/health", &[("host", "evil.example:8000")]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("HOST_NOT_ALLOWED"))
    );
    assert_eq!(
        upgrade(&server, "/ws", &[("host", "evil.example")]).await,
        403
    );
    for host in [
        "127.0.0.1:8000",
        "localhost",
        "[::1]:8000",
        "browserenv.internal:8000",
    ] {
        assert_eq!(
            get(&server, "/health", &[("host", host)]).await.0,
            200,
            "{host}"
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn an_allowed_origin_goes_through_and_still_needs_the_token() {
    let server = server(ServerConfig {
        allowed_origins: vec!["http://localhost:3000".into()],
        token: Some("s3cret".into()),
        ..ServerConfig::default()
    })
    .await;
    let page = ("origin", "http://localhost:3000");
    assert_eq!(get(&server, "/health", &[page]).await.0, 200);
    assert_eq!(get(&server, "/sessions", &[page]).await.0, 401);
    let authorized = [page, ("authorization", "Bearer s3cret")];
    assert_eq!(get(&server, "/sessions", &authorized).await.0, 200);
    assert_eq!(upgrade(&server, "/ws", &authorized).await, 101);
    assert_eq!(
        get(&server, "/sessions", &[("origin", "http://localhost:3001")])
            .await
            .0,
        403
    );
    server.stop().await.unwrap();
}
