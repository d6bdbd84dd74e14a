//! The gestures beside a click on the same page (`assets/pages/shop.html`): a hover, a 5-point
//! drag, a key chord, a dropdown's option chosen by its label; and each one's time over the
//! click's, to set against what it does beyond it (a drag's four more moves are four of the
//! page's frames; a `select` is a click and the popup's keys).

use browserenv::models::Chord;
use browserenv::{BrowserAction, Key, ResetOptions};
use browserenv_tests::Harness;

use crate::common::{long_episodes, timed, Series};

pub async fn run(rounds: usize) -> anyhow::Result<()> {
    let harness = Harness::start(long_episodes()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("shop.html")))
        .await?;
    let escape = Chord::parse("ESCAPE").map_err(anyhow::Error::msg)?;
    let mut click = Series::new("step click (shop page, blank spot)");
    let mut hover = Series::new("step move (hover)");
    let mut drag = Series::new("step drag (5-point path)");
    let mut key = Series::new("step key (ESCAPE)");
    let mut press = Series::new("step press (ESCAPE)");
    let mut select = Series::new("step select (a dropdown's option by label)");
    let labels = ["Price: low to high", "Relevance"];
    for round in 0..rounds {
        // The series interleaved: the machine's moods fall on each alike.
        timed(&mut click, client.step(BrowserAction::click(700, 400))).await?;
        let (x, y) = if round % 2 == 0 {
            (650, 420)
        } else {
            (700, 450)
        };
        timed(&mut hover, client.step(BrowserAction::move_to(x, y))).await?;
        let path = (0..5).map(|i| (600 + 20 * i, 300 + 10 * i));
        timed(&mut drag, client.step(BrowserAction::drag(path))).await?;
        timed(&mut key, client.step(BrowserAction::key(Key::Escape))).await?;
        timed(&mut press, client.step(BrowserAction::press(escape))).await?;
        let label = labels[round % 2];
        timed(
            &mut select,
            client.step(BrowserAction::select(180, 68, label)),
        )
        .await?;
    }
    let base = click.percentile(50.0);
    for series in [&click, &hover, &drag, &key, &press, &select] {
        println!("{}", series.row());
    }
    println!();
    for series in [&hover, &drag, &press, &select] {
        println!(
            "{}: {:+.0} ms over the click's median.",
            series.name,
            series.percentile(50.0) - base
        );
    }
    client.close().await?;
    harness.stop().await;
    Ok(())
}
