//! The perf smoke: 10 resets, 20 scroll steps and 20 clicks on the server at its defaults, beside
//! the same actions on raw CDP (`browserenv_tests::raw_cdp`: the same Chromium and flags, nothing
//! of ours) in the same process, taken in turns. It fails when the server takes more than twice
//! the floor in all, or a click more than 5.5 times its own (its median over 20, in each of up
//! to three rounds; `MAX_CLICK_RATIO` says why so many): ratios within one run, so a busy machine
//! slows both sides alike. The DevTools bridge's 40 ms delayed ACKs (Nagle's algorithm on
//! its socket) made the whole 3-4x; a click that waited a fixed 40 ms for a navigation that did
//! not come was 3.4x its floor (a press and release, then the next frame), where the settle's two
//! frames and the capture's make it about 2.3x. The bench (`make bench`) has the figures; this
//! only keeps a regression of that size out of main.

use std::time::{Duration, Instant};

use browserenv::{BrowserAction, ResetOptions};
use browserenv_server::chromium::ChromiumConfig;
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::raw_cdp::RawChromium;
use browserenv_tests::{chromium_path, Harness};

/// How many times the floor the server may take, in all.
const MAX_RATIO: f64 = 2.0;
/// How many times its floor a click may take. On this project's 2-core machine the ratio is
/// bimodal: 2.2-2.5x (a click 23 ms on a floor of 10), or for stretches of ten seconds and more
/// 4.4-4.9x (54 ms on 12: two frames more for our side, the floor slower too; fresh contexts do
/// not leave it). A fixed 40 ms wait after the click, the regression this guards against, adds
/// 4x the floor: 6.3x in the first mode, 7.8x in the second.
const MAX_CLICK_RATIO: f64 = 5.5;

fn ms(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1000.0
}

/// Run by `make test` on its own before the other end-to-end tests, so that none of them runs
/// beside it.
#[tokio::test]
#[ignore = "make test runs it first: cargo test -p browserenv-tests --test perf_smoke -- --ignored"]
async fn the_server_stays_within_twice_the_raw_cdp_floor() {
    // The binary's defaults: a spare context per session, the adaptive settle, frames of the
    // compositor.
    let chromium = ChromiumConfig {
        executable: chromium_path(),
        ..ChromiumConfig::default()
    };
    let harness = Harness::start_with_browser(
        chromium,
        ServerConfig {
            // Room for every step in one episode.
            settings: EnvSettings {
                max_steps: 100,
                ..EnvSettings::default()
            },
            ..ServerConfig::default()
        },
    )
    .await;
    let page = harness.page("long.html");
    let mut client = harness.client().await;
    let mut raw = RawChromium::launch(&chromium_path()).await.unwrap();
    // Neither side's first reset (a launch) is timed.
    client.reset(ResetOptions::new(&page)).await.unwrap();
    let (mut tab, _) = raw.reset(None, &page).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    // A kind's median: a burst of the machine's load on one side moves it less than a total.
    let median = |times: &[(&str, f64)], kind: &str| -> f64 {
        let mut kept: Vec<f64> = times
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| *t)
            .collect();
        kept.sort_by(f64::total_cmp);
        kept[kept.len() / 2]
    };
    for _ in 0..10 {
        let started = Instant::now();
        client.reset(ResetOptions::new(&page)).await.unwrap();
        ours.push(("reset", ms(started.elapsed())));
        let started = Instant::now();
        let (next, _) = raw.reset(Some(tab), &page).await.unwrap();
        tab = next;
        floor.push(("reset", ms(started.elapsed())));
    }
    // Scroll steps: the step whose floor is plainest (a wheel event, the next frame).
    for i in 0..20 {
        let dy = if i % 2 == 0 { 600 } else { -600 };
        let started = Instant::now();
        let result = client.step(BrowserAction::scroll(dy)).await.unwrap();
        ours.push(("scroll", ms(started.elapsed())));
        assert_eq!(result.observation.error, "", "{result:?}");
        let started = Instant::now();
        raw.scroll(&tab, dy).await.unwrap();
        raw.frame(&tab).await.unwrap();
        floor.push(("scroll", ms(started.elapsed())));
    }
    // Clicks on the page's text, which navigate nowhere: the press and release, then the next
    // frame on the floor; the settle decides from the browser's own events that no navigation
    // came (server/src/chromium/page/navigation.rs). Their medians in up to three rounds of 20:
    // a regression of the fixed window's size fails every round, a burst of the machine's load
    // (a build beside the tests: 4.2x once, with 1.33x in all) one of them.
    let mut clicks = Vec::new();
    for round in 0..3 {
        let (mut ours_round, mut floor_round) = (Vec::new(), Vec::new());
        for _ in 0..20 {
            let started = Instant::now();
            let result = client.step(BrowserAction::click(700, 500)).await.unwrap();
            ours_round.push(("click", ms(started.elapsed())));
            assert_eq!(result.observation.error, "", "{result:?}");
            let started = Instant::now();
            raw.click(&tab, 700, 500).await.unwrap();
            raw.frame(&tab).await.unwrap();
            floor_round.push(("click", ms(started.elapsed())));
        }
        let medians = (median(&ours_round, "click"), median(&floor_round, "click"));
        clicks.push(medians);
        if round == 0 {
            ours.append(&mut ours_round);
            floor.append(&mut floor_round);
        }
        if medians.0 / medians.1 <= MAX_CLICK_RATIO {
            break;
        }
    }
    let total = |times: &[(&str, f64)], kind: &str| -> f64 {
        times
            .iter()
            .filter(|(k, _)| kind.is_empty() || *k == kind)
            .map(|(_, t)| t)
            .sum()
    };
    let mut report: Vec<String> = ["reset", "scroll", "click", ""]
        .into_iter()
        .map(|kind| {
            format!(
                "{}: {:.0} ms against {:.0} ms ({:.2}x)",
                if kind.is_empty() { "all" } else { kind },
                total(&ours, kind),
                total(&floor, kind),
                total(&ours, kind) / total(&floor, kind)
            )
        })
        .collect();
    let (ours_median, floor_median) = clicks[clicks.len() - 1];
    let click = ours_median / floor_median;
    let rounds: Vec<String> = clicks
        .iter()
        .map(|(ours, floor)| format!("{ours:.0} ms against {floor:.0} ms ({:.2}x)", ours / floor))
        .collect();
    report.push(format!("click medians: {}", rounds.join(", then ")));
    println!(
        "perf smoke, the server against raw CDP: {}",
        report.join("; ")
    );
    let ratio = total(&ours, "") / total(&floor, "");
    assert!(
        ratio <= MAX_RATIO,
        "the server took {ratio:.2}x the raw CDP floor (at most {MAX_RATIO}x): {}",
        report.join("; ")
    );
    assert!(
        click <= MAX_CLICK_RATIO,
        "a click took {click:.2}x its raw CDP floor (at most {MAX_CLICK_RATIO}x): {}",
        report.join("; ")
    );
    client.close().await.unwrap();
    harness.stop().await;
}
