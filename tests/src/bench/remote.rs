//! Sessions on a Chromium that is already running (`--browser-url`): a reset opens a DevTools
//! connection, a browser context and a tab there instead of launching a process.

use browserenv_server::ServerConfig;
use browserenv_tests::{Harness, RemoteChromium};

use crate::common::{long_episodes, resets, scrolls, SPARE_PAUSE};

/// Resets without and with a spare context, and scroll steps: rows of a table already begun.
pub async fn run(rounds: usize) -> anyhow::Result<()> {
    let remote = RemoteChromium::start();
    for warm_spare in [false, true] {
        let harness = Harness::start_on(
            Some(remote.url()),
            ServerConfig {
                settings: long_episodes(),
                warm_spare,
                ..ServerConfig::default()
            },
        )
        .await;
        let mut client = harness.client().await;
        let pause = warm_spare.then_some(SPARE_PAUSE);
        let name = if warm_spare {
            "reset, remote browser (--browser-url), spare context ready"
        } else {
            "reset, remote browser (--browser-url), no spare"
        };
        let reset = resets(&mut client, &harness, rounds, pause, false, name).await?;
        println!("{}", reset.row());
        if warm_spare {
            let (scroll, _) = scrolls(&mut client, rounds, "step scroll, remote browser").await?;
            println!("{}", scroll.row());
        }
        client.close().await?;
        harness.stop().await;
    }
    Ok(())
}
