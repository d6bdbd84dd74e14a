//! Steps of one session on a server as it runs by default: scroll (alone, `BENCH_ONLY=scroll`),
//! click, type, key, a click that navigates and back; and the size of a step's screenshot.

use base64::Engine;
use browserenv::models::Key;
use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::Harness;

use crate::common::{long_episodes, print_measure_header, scrolls, timed, Series};
use crate::floor::floors;

/// The scroll step alone (a quick check of the step path), as a table of its own.
pub async fn scroll_only(rounds: usize) -> anyhow::Result<()> {
    let floors = floors(rounds).await?;
    let harness = Harness::start(long_episodes()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    let (scroll, _) = scrolls(&mut client, rounds, "step scroll (static page)").await?;
    print_measure_header();
    println!("{}", scroll.with_floor(floors.scroll).row());
    client.close().await?;
    harness.stop().await;
    Ok(())
}

/// Sizes of the scroll steps' screenshots (decoded PNG bytes), smallest first.
pub struct PngSizes(Vec<usize>);

impl PngSizes {
    pub fn print(&self) {
        println!(
            "Screenshot (800x600 PNG, long text page): median {} KiB, max {} KiB.",
            self.0[self.0.len() / 2] / 1024,
            self.0.last().copied().unwrap_or(0) / 1024
        );
    }
}

/// Each kind of step, timed: rows of a table already begun.
pub async fn run(rounds: usize) -> anyhow::Result<PngSizes> {
    let floors = floors(rounds).await?;
    let harness = Harness::start(long_episodes()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    let (scroll, screenshots) = scrolls(&mut client, rounds, "step scroll (static page)").await?;
    println!("{}", scroll.with_floor(floors.scroll).row());
    let mut png_bytes = Vec::new();
    for screenshot in &screenshots {
        png_bytes.push(
            base64::engine::general_purpose::STANDARD
                .decode(screenshot)?
                .len(),
        );
    }
    png_bytes.sort_unstable();

    let mut click = Series::new("step click (static page, no navigation)").with_floor(floors.click);
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    for _ in 0..rounds {
        timed(&mut click, client.step(BrowserAction::click(700, 500))).await?;
    }
    println!("{}", click.row());
    // Beside the floor that waits for the frames the settle waits for (`Floors::click_drawn`).
    let drawn = "the same, against the floor with its picture drawn";
    println!(
        "{}",
        click
            .against(&format!("step click: {drawn}"), floors.click_drawn)
            .row()
    );

    client
        .reset(ResetOptions::new(harness.page("form.html")))
        .await?;
    client.step(BrowserAction::click(250, 115)).await?;
    let mut typing = Series::new("step type (10 chars)").with_floor(floors.type10);
    let mut key = Series::new("step key (BACKSPACE)").with_floor(floors.key);
    for _ in 0..rounds {
        timed(
            &mut typing,
            client.step(BrowserAction::type_text("0123456789")),
        )
        .await?;
        timed(&mut key, client.step(BrowserAction::key(Key::Backspace))).await?;
    }
    println!("{}", typing.row());
    println!(
        "{}",
        typing
            .against(&format!("step type: {drawn}"), floors.type10_drawn)
            .row()
    );
    println!("{}", key.row());
    println!(
        "{}",
        key.against(&format!("step key: {drawn}"), floors.key_drawn)
            .row()
    );

    let mut navigate = Series::new("step click that navigates").with_floor(floors.navigate);
    let mut back = Series::new("step back (history)").with_floor(floors.back);
    client
        .reset(ResetOptions::new(harness.page("nav1.html")))
        .await?;
    for _ in 0..rounds.min(20) {
        timed(&mut navigate, client.step(BrowserAction::click(200, 50))).await?;
        timed(&mut back, client.step(BrowserAction::back())).await?;
    }
    println!("{}", navigate.row());
    println!("{}", back.row());
    drop(client);
    harness.stop().await;
    Ok(PngSizes(png_bytes))
}
