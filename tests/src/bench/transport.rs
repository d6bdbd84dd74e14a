//! The DevTools transport (`BENCH_ONLY=transport`): what the loopback WebSocket bridge between
//! chromiumoxide and Chromium's pipe (`server/src/chromium/launch/pipe.rs`) costs per command, beside
//! the same pipe read directly, as a pipe transport inside chromiumoxide would read it (upstream's
//! open pull request: a `Connection` over any `AsyncRead + AsyncWrite`). Both sides talk to the
//! same stand-in browser (`browserenv_tests::stand_in_browser`): for each command a screenshot
//! frame's event, then the answer, so what differs is the hop alone.

use std::time::{Duration, Instant};

use browserenv_server::chromium::launch::pipe::pipes;
use browserenv_tests::stand_in_browser::{answer_with_frames, FRAME_BYTES};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::Series;
use crate::regressions::{cell, record, Better};

/// Round trips per side, whatever `BENCH_ROUNDS` says: each is well under a millisecond.
const ROUND_TRIPS: usize = 500;

pub async fn run(_rounds: usize) -> anyhow::Result<()> {
    let bridged = through_the_bridge().await?;
    let direct = on_the_pipe().await?;
    println!(
        "DevTools transport, {ROUND_TRIPS} commands each answered after a {} KiB event (a stand-in \
         browser; no Chromium)",
        FRAME_BYTES / 1024
    );
    println!("| transport | p50 ms | p95 ms |");
    println!("|---|---|---|");
    for series in [&bridged, &direct] {
        println!(
            "| {} | {} | {} |",
            series.name,
            cell(series.percentile(50.0), 3),
            cell(series.percentile(95.0), 3)
        );
    }
    let cost = bridged.percentile(50.0) - direct.percentile(50.0);
    println!(
        "the bridge's own cost: {} ms a command (p50); a scroll step sends about 10 commands",
        cell(cost, 3)
    );
    record(
        "transport: command through the bridge p50",
        bridged.percentile(50.0),
        "ms",
        Better::Lower,
    );
    Ok(())
}

/// chromiumoxide's connection to the bridge, as the server's handler uses it.
async fn through_the_bridge() -> anyhow::Result<Series> {
    use chromiumoxide::cdp::CdpEventMessage;
    use chromiumoxide::types::Message as CdpMessage;
    let (server, browser) = pipes()?;
    let url = server.serve().await?;
    answer_with_frames(browser, FRAME_BYTES);
    let mut connection = chromiumoxide::Connection::<CdpEventMessage>::connect(&url).await?;
    let mut series = Series::new("bridge (chromiumoxide, WebSocket on loopback TCP, pipe)");
    for _ in 0..ROUND_TRIPS {
        let started = Instant::now();
        let id = connection.submit_command(
            "Page.screencastFrameAck".into(),
            None,
            serde_json::json!({}),
        )?;
        loop {
            let message = tokio::time::timeout(Duration::from_secs(5), connection.next())
                .await?
                .ok_or_else(|| anyhow::anyhow!("the bridge closed"))??;
            if matches!(message, CdpMessage::Response(response) if response.id == id) {
                break;
            }
        }
        series.add(started.elapsed());
    }
    Ok(series)
}

/// The pipe read directly: a command written with its NUL, messages split at theirs and parsed
/// as chromiumoxide parses them.
async fn on_the_pipe() -> anyhow::Result<Series> {
    use chromiumoxide::cdp::CdpEventMessage;
    use chromiumoxide::types::Message as CdpMessage;
    let (server, browser) = pipes()?;
    answer_with_frames(browser, FRAME_BYTES);
    let (commands, answers) = server.into_fds();
    let mut commands = tokio::net::unix::pipe::Sender::from_owned_fd(commands)?;
    let mut answers = tokio::net::unix::pipe::Receiver::from_owned_fd(answers)?;
    let mut series = Series::new("pipe read directly (what a pipe transport would do)");
    let mut pending = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    for id in 0..ROUND_TRIPS {
        let started = Instant::now();
        let command =
            format!("{{\"id\":{id},\"method\":\"Page.screencastFrameAck\",\"params\":{{}}}}\0");
        commands.write_all(command.as_bytes()).await?;
        'answer: loop {
            while let Some(end) = pending.iter().position(|b| *b == 0) {
                let message: Vec<u8> = pending.drain(..=end).collect();
                let message: CdpMessage<CdpEventMessage> =
                    serde_json::from_slice(&message[..message.len() - 1])?;
                if matches!(message, CdpMessage::Response(response) if response.id == chromiumoxide::types::CallId::new(id))
                {
                    break 'answer;
                }
            }
            let read =
                tokio::time::timeout(Duration::from_secs(5), answers.read(&mut buffer)).await??;
            anyhow::ensure!(read > 0, "the stand-in closed its pipe");
            pending.extend_from_slice(&buffer[..read]);
        }
        series.add(started.elapsed());
    }
    Ok(series)
}
