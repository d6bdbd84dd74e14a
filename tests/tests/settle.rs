//! The adaptive settle must show the settled page: on pages with late effects its screenshot equals
//! the one taken after a long fixed wait.

use std::time::Duration;

use browserenv::{BrowserAction, Client, ResetOptions, StepResult};
use browserenv_server::settings::{EnvSettings, SettleMode};
use browserenv_tests::{test_settings, title, Harness, Picture};

/// A scenario: reset to a page, then some actions; returns every observation.
async fn run(client: &mut Client, start: &str, actions: &[BrowserAction]) -> Vec<StepResult> {
    let mut results = vec![client.reset(ResetOptions::new(start)).await.unwrap()];
    for action in actions {
        results.push(client.step(action.clone()).await.unwrap());
    }
    results
}

fn assert_same_pictures(adaptive: &[StepResult], fixed: &[StepResult], scenario: &str) {
    for (i, (a, f)) in adaptive.iter().zip(fixed).enumerate() {
        assert_eq!(a.observation.url, f.observation.url, "{scenario} step {i}");
        assert_eq!(title(a), title(f), "{scenario} step {i}");
        let (pa, pf) = (
            Picture::from_base64(&a.observation.screenshot),
            Picture::from_base64(&f.observation.screenshot),
        );
        let differing = pa
            .pixels
            .chunks(4)
            .zip(pf.pixels.chunks(4))
            .filter(|(x, y)| x != y)
            .count();
        assert_eq!(
            differing, 0,
            "{scenario} step {i}: {differing} pixels differ"
        );
    }
}

#[tokio::test]
async fn adaptive_screenshots_equal_long_fixed_waits() {
    let adaptive = Harness::start(test_settings()).await;
    let fixed = Harness::start(EnvSettings {
        settle: SettleMode::Fixed,
        action_wait: Duration::from_secs(2),
        ..test_settings()
    })
    .await;
    let scenarios: Vec<(&str, Vec<BrowserAction>)> = vec![
        // A timer and a fetch that render after load; a click whose effect lands 250 ms later.
        ("delayed.html", vec![BrowserAction::click(200, 50)]),
        // A link click that navigates, then back.
        (
            "nav1.html",
            vec![BrowserAction::click(200, 50), BrowserAction::back()],
        ),
        // Back restored from the back/forward cache (no load event).
        (
            "bfcache1.html",
            vec![BrowserAction::click(200, 50), BrowserAction::back()],
        ),
    ];
    let mut a = adaptive.client().await;
    let mut f = fixed.client().await;
    for (page, actions) in scenarios {
        let start_a = adaptive.page(page);
        let start_f = fixed.page(page);
        let got_a = run(&mut a, &start_a, &actions).await;
        let got_f = run(&mut f, &start_f, &actions).await;
        // The two servers serve the pages on different ports: compare paths, not whole URLs.
        let strip = |results: Vec<StepResult>, origin: &str| -> Vec<StepResult> {
            results
                .into_iter()
                .map(|mut r| {
                    r.observation.url = r.observation.url.replace(origin, "");
                    r
                })
                .collect()
        };
        let got_a = strip(got_a, &adaptive.page(""));
        let got_f = strip(got_f, &fixed.page(""));
        assert_same_pictures(&got_a, &got_f, page);
        if page == "delayed.html" {
            assert_eq!(title(&got_a[0]), "Delayed ready");
            assert_eq!(title(&got_a[1]), "Delayed clicked");
        }
        if page == "bfcache1.html" {
            assert_eq!(
                title(&got_a[2]),
                "bfcache1 persisted=1",
                "restored from bfcache"
            );
        }
        // And the adaptive server was not simply as slow as the fixed one.
        let settle_ms = got_a[1].observation.metadata["timings_ms"]["settle"]
            .as_f64()
            .unwrap();
        assert_eq!(
            got_a[1].observation.metadata["settle"], "quiet",
            "{page}: settled by quiet, not by the bound ({settle_ms} ms)"
        );
    }
    adaptive.stop().await;
    fixed.stop().await;
}
