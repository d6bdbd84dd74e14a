//! Drive one episode with the Rust client and print one JSON line per reply:
//! `cargo run --example drive -- http://127.0.0.1:8000 https://example.com/`.
//! The interop tests run it against the Python OpenEnv reference server.

use browserenv::models::Key;
use browserenv::protocol::ServerMessage;
use browserenv::{BrowserAction, Client, ClientError, ResetOptions, StepResult};
use serde_json::json;

fn line(label: &str, result: &StepResult) {
    let observation = &result.observation;
    let line = json!({
        "label": label,
        "url": observation.url,
        "error": observation.error,
        "done": result.done,
        "reward": result.reward,
        "screenshot_bytes": observation.screenshot.len(),
    });
    println!("{line}");
}

fn failure(label: &str, err: &ClientError) {
    let code = match err {
        ClientError::Server(frame) => frame.code.to_string(),
        _ => "CLIENT".to_string(),
    };
    println!(
        "{}",
        json!({"label": label, "failure": code, "message": err.to_string()})
    );
}

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let mut args = std::env::args().skip(1);
    let server = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8000".into());
    let start = args.next().unwrap_or_else(|| "https://example.com/".into());
    let mut client = Client::connect(&server).await?;
    line(
        "reset",
        &client
            .reset(ResetOptions::new(start).episode_id("rust-1"))
            .await?,
    );
    let actions = [
        ("click", BrowserAction::click(10, 10)),
        ("type", BrowserAction::type_text("abc")),
        ("key", BrowserAction::key(Key::Enter)),
        ("scroll", BrowserAction::scroll(300)),
        ("back", BrowserAction::back()),
    ];
    for (label, action) in actions {
        line(label, &client.step(action).await?);
    }
    let state = client.state().await?;
    println!(
        "{}",
        json!({"label": "state", "episode_id": state.episode_id, "step_count": state.step_count})
    );
    // The server's own validation (the client would refuse this action locally).
    match client
        .send_raw(r#"{"type":"step","data":{"op":"click","x":900,"y":1}}"#)
        .await?
    {
        ServerMessage::Error(frame) => println!(
            "{}",
            json!({"label": "invalid", "failure": frame.code.to_string()})
        ),
        other => println!(
            "{}",
            json!({"label": "invalid", "unexpected": format!("{other:?}")})
        ),
    }
    line("finish", &client.step(BrowserAction::finish("done")).await?);
    if let Err(err) = client.step(BrowserAction::back()).await {
        failure("after_finish", &err);
    }
    client.close().await?;
    println!("{}", json!({"label": "closed"}));
    Ok(())
}
