//! The scroll step with the server recording (`--record-dir`): the recorder runs on its own
//! thread, so the step path should not change.

use browserenv::ResetOptions;
use browserenv_tests::Harness;

use crate::common::{long_episodes, scrolls};

/// The recorded scroll steps' row, of a table already begun; checks every step was recorded.
pub async fn run(rounds: usize) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("browserenv-bench-record-{}", std::process::id()));
    let harness = Harness::recording(&dir, long_episodes()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    let name = "step scroll, server recording on (--record-dir)";
    let (scroll, _) = scrolls(&mut client, rounds, name).await?;
    println!("{}", scroll.row());
    client.close().await?;
    harness.stop().await;
    let recorded = browserenv_collect::trajectory::read(&dir)?.steps.len();
    anyhow::ensure!(recorded == rounds, "recorded {recorded} of {rounds} steps");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
