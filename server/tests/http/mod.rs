//! One HTTP request to a server under test, for the integration tests of its JSON routes.

use serde_json::Value;

/// `(status, JSON body or Null)` of `method path` on the server at `base_url`; `body` None sends
/// no body at all, a JSON string is sent as it is (a body that is not JSON), anything else as JSON.
pub async fn call(
    base_url: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let url = format!("{base_url}{path}");
    let mut request = match method {
        "GET" => client.get(url),
        "POST" => client.post(url),
        other => panic!("{other}"),
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    match body {
        Some(Value::String(raw)) => {
            request = request.header("content-type", "application/json").body(raw)
        }
        Some(body) => request = request.json(&body),
        None => {}
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}
