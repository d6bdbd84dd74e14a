//! How long after the controller's reply the session's watchers (`/sessions/{id}/watch`) see the
//! step's frame.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::Harness;
use futures_util::StreamExt;

use crate::common::{long_episodes, Series};

/// The delay with `count` watchers: a row of a table already begun.
pub async fn run(rounds: usize, count: usize) -> anyhow::Result<()> {
    let harness = Harness::start(long_episodes()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    let url = format!("{}/sessions", harness.server.base_url());
    let sessions: serde_json::Value = reqwest::get(&url).await?.error_for_status()?.json().await?;
    let id = sessions[0]["id"].as_str().unwrap_or_default().to_string();
    let seen: Arc<Mutex<HashMap<(usize, u64), Instant>>> = Arc::default();
    let mut tasks = Vec::new();
    for watcher in 0..count {
        let ws = format!("ws://{}/sessions/{id}/watch", harness.server.addr);
        let (mut socket, _) = tokio_tungstenite::connect_async(ws).await?;
        let seen = seen.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(Ok(message)) = socket.next().await {
                let Ok(text) = message.into_text() else {
                    continue;
                };
                let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                if let Some(step) = value["data"]["step"].as_u64() {
                    if let Ok(mut seen) = seen.lock() {
                        seen.entry((watcher, step)).or_insert_with(Instant::now);
                    }
                }
            }
        }));
    }
    let mut replies = Vec::new();
    for i in 0..rounds {
        let dy = if i % 2 == 0 { 600 } else { -600 };
        client.step(BrowserAction::scroll(dy)).await?;
        replies.push(Instant::now());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut delay = Series::new(&format!(
        "watcher sees the step, after the reply ({count} watcher{})",
        if count == 1 { "" } else { "s" }
    ));
    if let Ok(seen) = seen.lock() {
        for (i, reply) in replies.iter().enumerate() {
            for watcher in 0..count {
                if let Some(at) = seen.get(&(watcher, i as u64 + 1)) {
                    delay.add(at.saturating_duration_since(*reply));
                }
            }
        }
    }
    anyhow::ensure!(!delay.millis.is_empty(), "no watcher saw a step");
    println!("{}", delay.row());
    for task in tasks {
        task.abort();
    }
    client.close().await?;
    harness.stop().await;
    Ok(())
}
