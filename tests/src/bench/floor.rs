//! The floor under the server's figures (`BENCH_ONLY=floor` prints it alone; the reset and step
//! tables print it beside their rows): the same pages reset and stepped on raw CDP
//! (`browserenv_tests::raw_cdp`), the same Chromium and flags, the same pipe, nothing of ours.
//! What a row takes beyond its floor is the server's own cost; the floor is Chromium's.

use std::time::{Duration, Instant};

use browserenv_server::site::serve_dir;
use browserenv_tests::raw_cdp::{RawChromium, RawTab};
use browserenv_tests::{assets_dir, chromium_path};
use tokio::sync::OnceCell;

use crate::common::Series;
use crate::regressions::{cell, record, Better};

/// Medians of the raw CDP run, in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Floors {
    /// A browser launched, a context and tab opened, long.html loaded, its first frame.
    pub cold_reset: f64,
    /// A context and its tab opened, the page loaded, its first frame.
    pub reset_new_context: f64,
    /// The page loaded in a tab that was ready, its first frame.
    pub reset_ready: f64,
    /// The parts of `reset_new_context`.
    pub context: f64,
    pub load: f64,
    pub screenshot: f64,
    /// Steps: the action's events answered, then the next frame.
    pub scroll: f64,
    pub click: f64,
    pub type10: f64,
    pub key: f64,
    /// The same three steps with the picture's guarantee the server's settle gives: after the
    /// events, two animation frames begun in the page (the first paints the step's effect, the
    /// second begins once that one has gone to the compositor), then the next frame. The plain
    /// floor's frame may be one the compositor drew before the effect.
    pub click_drawn: f64,
    pub type10_drawn: f64,
    pub key_drawn: f64,
    pub navigate: f64,
    pub back: f64,
    /// Chromium's CPU per reset back to back (`reset_new_context`: a context and tab opened,
    /// the previous one disposed, the page loaded, its first frame), in milliseconds: what any
    /// reset with a fresh context costs the machine, however it is hidden.
    pub reset_cpu: f64,
}

static FLOORS: OnceCell<Floors> = OnceCell::const_new();

/// The floors, measured once per run (on first use) with `rounds` samples each.
pub async fn floors(rounds: usize) -> anyhow::Result<Floors> {
    FLOORS.get_or_try_init(|| measure(rounds)).await.copied()
}

fn ms(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1000.0
}

fn median(values: Vec<f64>) -> f64 {
    let mut series = Series::new("");
    series.millis = values;
    series.percentile(50.0)
}

/// A step of the raw run.
#[derive(Clone, Copy)]
enum Step {
    Scroll,
    Click,
    Type,
    Key,
}

/// Two animation frames begun in the page, awaited.
const TWO_FRAMES: &str = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))";

/// `rounds` timings of `step` on `tab`, each followed by the next frame (`drawn`: after two
/// animation frames, `Floors::click_drawn`).
async fn steps(
    chromium: &mut RawChromium,
    tab: &RawTab,
    rounds: usize,
    step: Step,
    drawn: bool,
) -> anyhow::Result<f64> {
    let mut took = Vec::new();
    for i in 0..rounds {
        let started = Instant::now();
        match step {
            Step::Scroll => {
                chromium
                    .scroll(tab, if i % 2 == 0 { 600 } else { -600 })
                    .await?
            }
            Step::Click => chromium.click(tab, 700, 500).await?,
            Step::Type => chromium.type_text(tab, "0123456789").await?,
            Step::Key => chromium.backspace(tab).await?,
        }
        if drawn {
            let frames = serde_json::json!({"expression": TWO_FRAMES, "awaitPromise": true});
            chromium
                .call("Runtime.evaluate", frames, Some(&tab.session))
                .await?;
        }
        chromium.frame(tab).await?;
        took.push(ms(started.elapsed()));
    }
    Ok(median(took))
}

async fn measure(rounds: usize) -> anyhow::Result<Floors> {
    let pages = serve_dir(assets_dir().join("pages")).await?;
    let long = pages.url("long.html");
    let resets = rounds.clamp(10, 30);
    let mut cold = Vec::new();
    for _ in 0..resets.min(10) {
        let started = Instant::now();
        let mut chromium = RawChromium::launch(&chromium_path()).await?;
        chromium.reset(None, &long).await?;
        cold.push(ms(started.elapsed()));
    }
    let mut chromium = RawChromium::launch(&chromium_path()).await?;
    let (mut tab, _) = chromium.reset(None, &long).await?;
    let (mut context, mut load, mut screenshot) = (Vec::new(), Vec::new(), Vec::new());
    let cpu_before = crate::cpu::tree_cpu_ms(chromium.pid() as i32);
    for _ in 0..resets {
        let (next, phases) = chromium.reset(Some(tab), &long).await?;
        tab = next;
        context.push(phases.context);
        load.push(phases.load);
        screenshot.push(phases.screenshot);
    }
    // The last disposal's work, done off the clock, is the last reset's.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reset_cpu = (crate::cpu::tree_cpu_ms(chromium.pid() as i32) - cpu_before) / resets as f64;
    let ready: Vec<f64> = load.iter().zip(&screenshot).map(|(l, s)| l + s).collect();
    let new_context: Vec<f64> = ready.iter().zip(&context).map(|(r, c)| r + c).collect();
    let scroll = steps(&mut chromium, &tab, rounds, Step::Scroll, false).await?;
    let click = steps(&mut chromium, &tab, rounds, Step::Click, false).await?;
    let click_drawn = steps(&mut chromium, &tab, rounds, Step::Click, true).await?;
    chromium.load(&tab, &pages.url("form.html")).await?;
    chromium.click(&tab, 250, 115).await?;
    let type10 = steps(&mut chromium, &tab, rounds, Step::Type, false).await?;
    let key = steps(&mut chromium, &tab, rounds, Step::Key, false).await?;
    let type10_drawn = steps(&mut chromium, &tab, rounds, Step::Type, true).await?;
    let key_drawn = steps(&mut chromium, &tab, rounds, Step::Key, true).await?;
    chromium.load(&tab, &pages.url("nav1.html")).await?;
    let (mut navigate, mut back) = (Vec::new(), Vec::new());
    for _ in 0..rounds.min(20) {
        let started = Instant::now();
        chromium.click_to_load(&tab, 200, 50).await?;
        chromium.frame(&tab).await?;
        navigate.push(ms(started.elapsed()));
        let started = Instant::now();
        chromium.back(&tab).await?;
        chromium.frame(&tab).await?;
        back.push(ms(started.elapsed()));
    }
    Ok(Floors {
        cold_reset: median(cold),
        reset_new_context: median(new_context),
        reset_ready: median(ready),
        context: median(context),
        load: median(load),
        screenshot: median(screenshot),
        scroll,
        click,
        type10,
        key,
        click_drawn,
        type10_drawn,
        key_drawn,
        navigate: median(navigate),
        back: median(back),
        reset_cpu,
    })
}

/// `BENCH_ONLY=floor`: the floors alone, as a table.
pub async fn run(rounds: usize) -> anyhow::Result<()> {
    let floors = floors(rounds).await?;
    println!("| raw CDP (the floor) on the same Chromium | median ms |");
    println!("|---|---|");
    for (name, value) in [
        (
            "reset: launch, context, load, first frame",
            floors.cold_reset,
        ),
        (
            "reset: context and tab, load, first frame",
            floors.reset_new_context,
        ),
        ("reset: load, first frame (a tab ready)", floors.reset_ready),
        ("  context and tab", floors.context),
        ("  load (long.html)", floors.load),
        ("  first frame", floors.screenshot),
        ("step scroll: wheel, next frame", floors.scroll),
        ("step click: press and release, next frame", floors.click),
        (
            "step type (10 chars): key events, next frame",
            floors.type10,
        ),
        ("step key (BACKSPACE)", floors.key),
        (
            "step click, two animation frames, next frame (the settle's guarantee)",
            floors.click_drawn,
        ),
        (
            "step type (10 chars), two animation frames, next frame",
            floors.type10_drawn,
        ),
        (
            "step key (BACKSPACE), two animation frames, next frame",
            floors.key_drawn,
        ),
        (
            "step click that navigates: click, load, next frame",
            floors.navigate,
        ),
        ("step back: history entry, load, next frame", floors.back),
        (
            "Chromium CPU per reset back to back: context and tab, dispose, load, first frame",
            floors.reset_cpu,
        ),
    ] {
        record(&format!("floor: {name}"), value, "ms", Better::Lower);
        println!("| {name} | {} |", cell(value, 0));
    }
    Ok(())
}
