//! The UI in real terminal emulators under Xvfb, as a person sees it: xterm (`-ti vt340`: sixel)
//! and kitty 0.26 at 80x24, 120x40 and 200x60, plus half-blocks in xterm. Each run takes a window
//! screenshot and checks that the picture region is the page (the observation's PNG, scaled as
//! the UI scales it), then clicks a page pixel with xdotool and checks that the click the UI sent
//! landed on it. In xterm a mouse drag (xdotool's button held while it moves) must be recorded as
//! one `drag` along the pointer's path and the pointer resting as one `move`. Then 50 starts in a
//! row in each terminal must all show the page, and tmux at 120x40 must show the catalog's
//! product names and prices as text.
//!
//! Similarity is the normalized cross-correlation (NCC) of grey levels between the window's
//! picture region and the page as the UI scales it. Measured here: 0.999-1.000 for sixel, kitty
//! and half-blocks (text layer off) at every size; the same region upside down (same colours,
//! wrong places) about -0.1, shifted by 40 pixels 0.68-0.89, a blank pane 0. The threshold, 0.95,
//! passes only the page itself, and each run checks that the two wrong pictures fail it.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use browserenv::{Client, ResetOptions};
use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
use browserenv_server::site::{serve_dir, SiteHandle};
use browserenv_server::{start, ServerConfig, ServerHandle};
use image::RgbImage;
use support::{
    cell_size, gray, half_block_look, locate, ncc, Display, Emulator, Placement, Window,
};

const THRESHOLD: f64 = 0.95;
/// Where the test clicks: blank page background right of the catalog's heading.
const TARGET: (u32, u32) = (620, 80);

struct Served {
    server: ServerHandle,
    site: SiteHandle,
    /// The catalog page as the server screenshots it.
    page: RgbImage,
}

async fn serve() -> Served {
    let site = serve_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/site"))
        .await
        .unwrap();
    let launcher = ChromiumLauncher::new(ChromiumConfig {
        executable: std::env::var_os("BROWSER_CHROMIUM")
            .map(Into::into)
            .unwrap_or_else(browserenv_server::chromium::default_executable),
        ..ChromiumConfig::default()
    });
    let server = start(launcher, ServerConfig::default()).await.unwrap();
    let mut client = Client::connect(&server.base_url()).await.unwrap();
    let first = client
        .reset(ResetOptions::new(site.url("catalog.html")))
        .await
        .unwrap();
    client.close().await.unwrap();
    let page = browserenv_tui::graphics::picture::decode(&first.observation.screenshot)
        .unwrap()
        .to_rgb8();
    Served { server, site, page }
}

impl Served {
    fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            "--server".to_string(),
            self.server.base_url(),
            "--start-url".into(),
            self.site.url("catalog.html"),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }
}

/// What the picture should look like on screen, and how well the screen matches it.
struct Check {
    score: f64,
    /// The picture's top-left corner in window pixels.
    origin: (u32, u32),
    placement: Placement,
    screen: RgbImage,
}

/// Wait until the window shows the page where the UI says its picture is, or the timeout.
fn picture_on_screen(
    display: &Display,
    window: &Window,
    page: &RgbImage,
    threshold: f64,
    timeout: Duration,
) -> Check {
    let graphics = window.wait_log("graphics", timeout);
    let cell = cell_size(&graphics);
    let deadline = Instant::now() + timeout;
    loop {
        let placement = Placement::parse(&window.wait_log("picture", timeout));
        let expected = if graphics.starts_with("halfblocks") {
            half_block_look(page, &placement, cell)
        } else {
            image::imageops::resize(
                page,
                placement.width,
                placement.height,
                image::imageops::FilterType::CatmullRom,
            )
        };
        let screen = display.screenshot(&window.id);
        let corner = (placement.column * cell.0, placement.row * cell.1);
        let (score, origin) = locate(&gray(&screen), &gray(&expected), corner);
        let check = Check {
            score,
            origin,
            placement,
            screen,
        };
        if check.score >= threshold || Instant::now() > deadline {
            return check;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The last click the UI recorded.
fn recorded_click(dir: &Path, timeout: Duration) -> (i64, i64) {
    let deadline = Instant::now() + timeout;
    loop {
        let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap_or_default();
        let click = steps.lines().rev().find_map(|line| {
            let step: serde_json::Value = serde_json::from_str(line).ok()?;
            (step["action"]["op"] == "click").then(|| {
                (
                    step["action"]["x"].as_i64().unwrap(),
                    step["action"]["y"].as_i64().unwrap(),
                )
            })
        });
        if let Some(click) = click {
            return click;
        }
        assert!(Instant::now() < deadline, "no click was recorded");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One terminal at one size: the picture is the page, and a click lands on the pixel aimed at.
fn picture_and_click(
    display: &Display,
    served: &Served,
    emulator: Emulator,
    size: (u16, u16),
    graphics: Option<&str>,
) {
    let name = format!(
        "{}-{}-{}x{}",
        emulator.name(),
        graphics.unwrap_or("auto"),
        size.0,
        size.1
    );
    let dir = support::artifacts(&name);
    let record = dir.join("recording");
    let mut extra = vec!["--record", record.to_str().unwrap()];
    if let Some(graphics) = graphics {
        extra.extend(["--graphics", graphics]);
    }
    let window = Window::open(display, emulator, size, &dir, &served.args(&extra));
    let chosen = window.wait_log("graphics", Duration::from_secs(30));
    let expected_protocol = match (graphics, emulator) {
        (Some(forced), _) => forced,
        (None, Emulator::Xterm) => "sixel",
        (None, Emulator::Kitty) => "kitty",
    };
    assert!(
        chosen.starts_with(expected_protocol),
        "{name}: auto chose {chosen}"
    );
    let halfblocks = expected_protocol == "halfblocks";
    if halfblocks {
        // The comparison is with the picture alone: the text layer off (its key, T).
        display.xdotool(&["windowfocus", "--sync", &window.id]);
        window.wait_log("picture", Duration::from_secs(30));
        display.xdotool(&["key", "T"]);
    }
    let threshold = THRESHOLD;
    let check = picture_on_screen(
        display,
        &window,
        &served.page,
        threshold,
        Duration::from_secs(30),
    );
    check
        .screen
        .save(dir.join("screen.png"))
        .expect("screenshot saved");
    assert!(
        check.score >= threshold,
        "{name}: the picture is not the page (similarity {:.3} < {threshold}); see {}",
        check.score,
        dir.join("screen.png").display()
    );
    // The measure tells a wrong picture apart: the same picture upside down (same colours, wrong
    // places) and shifted by 40 pixels score far lower.
    let crop = image::imageops::crop_imm(
        &check.screen,
        check.origin.0,
        check.origin.1,
        check.placement.width,
        check.placement.height,
    )
    .to_image();
    let flipped = ncc(&gray(&crop), &image::imageops::flip_vertical(&gray(&crop)));
    let shifted = ncc(
        &gray(
            &image::imageops::crop_imm(&crop, 40, 0, crop.width() - 40, crop.height()).to_image(),
        ),
        &gray(&image::imageops::crop_imm(&crop, 0, 0, crop.width() - 40, crop.height()).to_image()),
    );
    assert!(
        flipped < threshold - 0.2 && shifted < threshold,
        "{name}: wrong pictures scored {flipped:.3} (upside down), {shifted:.3} (shifted)"
    );
    // A click on the page pixel TARGET, through the pointer.
    let scale = f64::from(check.placement.width) / 800.0;
    let x = check.origin.0 + (f64::from(TARGET.0) * scale).round() as u32;
    let y = check.origin.1 + (f64::from(TARGET.1) * scale).round() as u32;
    // As a hand moves a mouse: into the window, then to the pixel (kitty reports a click right
    // after the pointer jumped in from outside at 0,0).
    display.xdotool(&[
        "mousemove",
        "--window",
        &window.id,
        &(x + 7).to_string(),
        &(y + 5).to_string(),
    ]);
    std::thread::sleep(Duration::from_millis(200));
    display.xdotool(&[
        "mousemove",
        "--window",
        &window.id,
        &x.to_string(),
        &y.to_string(),
        "click",
        "1",
    ]);
    let (cx, cy) = recorded_click(&record, Duration::from_secs(30));
    // SGR-Pixels: the pixel under the pointer, within one screen pixel's worth of page pixels.
    let tolerance = (1.0 / scale).ceil() as i64 + 1;
    assert!(
        (cx - i64::from(TARGET.0)).abs() <= tolerance
            && (cy - i64::from(TARGET.1)).abs() <= tolerance,
        "{name}: clicked page {cx},{cy}, aimed at {TARGET:?} (±{tolerance}); {}",
        window.log()
    );
    eprintln!(
        "{name}: similarity {:.3} (upside down {flipped:.3}, shifted {shifted:.3}), click \
         {cx},{cy} for {TARGET:?}",
        check.score
    );
}

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 60)];

/// One terminal test at a time: several emulators rendering in software on two cores would slow
/// each other past what a person would accept, and the starts are timed.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn in_terminals(run: impl FnOnce(&Display, &Served) + Send + 'static) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let served = runtime.block_on(serve());
    let display = Display::start();
    run(&display, &served);
    drop(display);
    runtime.block_on(async move {
        served.server.stop().await.unwrap();
    });
}

#[test]
fn xterm_shows_the_page_in_sixel_and_clicks_land_on_the_pixel() {
    in_terminals(|display, served| {
        for size in SIZES {
            picture_and_click(display, served, Emulator::Xterm, size, None);
        }
    });
}

#[test]
fn kitty_shows_the_page_and_clicks_land_on_the_pixel() {
    in_terminals(|display, served| {
        for size in SIZES {
            picture_and_click(display, served, Emulator::Kitty, size, None);
        }
    });
}

#[test]
fn xterm_shows_the_page_in_half_blocks() {
    in_terminals(|display, served| {
        for size in SIZES {
            picture_and_click(display, served, Emulator::Xterm, size, Some("halfblocks"));
        }
    });
}

/// `TERMINAL_STARTS` (default 50) starts in a row; every one must show the page.
fn starts(emulator: Emulator) {
    let count: usize = std::env::var("TERMINAL_STARTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    in_terminals(move |display, served| {
        let dir = support::artifacts(&format!("{}-starts", emulator.name()));
        let mut times = Vec::new();
        for start in 0..count {
            let started = Instant::now();
            let window = Window::open(display, emulator, (100, 35), &dir, &served.args(&[]));
            let opened = started.elapsed();
            window.wait_log("picture", Duration::from_secs(30));
            let pictured = started.elapsed();
            let check = picture_on_screen(
                display,
                &window,
                &served.page,
                THRESHOLD,
                Duration::from_secs(30),
            );
            if check.score < THRESHOLD {
                check.screen.save(dir.join("failed.png")).unwrap();
                panic!(
                    "start {} of {count} in {} did not show the page (similarity {:.3}); see {}\n{}",
                    start + 1,
                    emulator.name(),
                    check.score,
                    dir.join("failed.png").display(),
                    window.log()
                );
            }
            times.push(started.elapsed().as_millis());
            if std::env::var_os("TERMINAL_STARTS_VERBOSE").is_some() {
                eprintln!(
                    "start {start}: window {opened:?}, picture logged {pictured:?}, matched {:?}",
                    started.elapsed()
                );
            }
        }
        times.sort_unstable();
        eprintln!(
            "{}: {count} of {count} starts showed the page; median {} ms, slowest {} ms from \
             opening the window",
            emulator.name(),
            times[times.len() / 2],
            times[times.len() - 1]
        );
    });
}

#[test]
fn every_start_in_xterm_shows_the_page() {
    starts(Emulator::Xterm);
}

#[test]
fn every_start_in_kitty_shows_the_page() {
    starts(Emulator::Kitty);
}

/// In tmux (half-blocks and the text layer, by default), the catalog's names and prices are text.
#[test]
fn tmux_shows_the_catalogs_names_and_prices_as_text() {
    support::require("tmux", "tmux");
    in_terminals(|_, served| {
        let session = format!("browserenv-test-{}", std::process::id());
        let socket = format!("browserenv-test-{}", std::process::id());
        let dir = support::artifacts("tmux-120x40");
        let log = dir.join("tui.log");
        let mut command = vec![
            support::TUI.to_string(),
            "--log".into(),
            log.display().to_string(),
        ];
        command.extend(served.args(&[]));
        let tmux = |args: &[&str]| {
            std::process::Command::new("tmux")
                .args(["-L", &socket])
                .args(args)
                .output()
                .expect("tmux runs")
        };
        let started = tmux(&[
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "120",
            "-y",
            "40",
            &command.join(" "),
        ]);
        assert!(started.status.success(), "{started:?}");
        let expected = [
            "18V Cordless Drill Driver",
            "$129.00",
            "20V Impact Driver",
            "$149.00",
            "7-1/4 in Circular Saw",
            "$119.50",
            "5 in Random Orbit Sander",
            "$64.99",
            "16 oz Claw Hammer",
            "$18.95",
        ];
        let deadline = Instant::now() + Duration::from_secs(30);
        let screen = loop {
            let captured = tmux(&["capture-pane", "-p", "-t", &session]);
            let screen = String::from_utf8_lossy(&captured.stdout).to_string();
            if expected.iter().all(|e| screen.contains(e)) || Instant::now() > deadline {
                break screen;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        std::fs::write(dir.join("screen.txt"), &screen).unwrap();
        tmux(&["kill-server"]);
        let missing: Vec<&&str> = expected.iter().filter(|e| !screen.contains(**e)).collect();
        assert!(
            missing.is_empty(),
            "not on the tmux screen as text: {missing:?}\n{screen}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    });
}

/// The first recorded step of `op` after `skip` of them, as the UI recorded it.
fn recorded(dir: &Path, op: &str, skip: usize, timeout: Duration) -> serde_json::Value {
    let deadline = Instant::now() + timeout;
    loop {
        let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap_or_default();
        let found = steps
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|step| step["action"]["op"] == op)
            .nth(skip);
        if let Some(step) = found {
            return step["action"].clone();
        }
        assert!(Instant::now() < deadline, "no {op} was recorded: {steps}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A person's mouse in xterm (pixel reports): a drag (the button held while the pointer moves)
/// is recorded as one `drag` along the pointer's path, and the pointer resting as one `move`.
#[test]
fn xterm_records_a_mouse_drag_and_a_hover() {
    in_terminals(|display, served| {
        let dir = support::artifacts("xterm-gestures");
        let record = dir.join("recording");
        let args = served.args(&["--record", record.to_str().unwrap()]);
        let window = Window::open(display, Emulator::Xterm, (120, 40), &dir, &args);
        let check = picture_on_screen(
            display,
            &window,
            &served.page,
            THRESHOLD,
            Duration::from_secs(30),
        );
        assert!(check.score >= THRESHOLD, "the page is on screen");
        let scale = f64::from(check.placement.width) / 800.0;
        let screen = |(x, y): (u32, u32)| {
            (
                (check.origin.0 + (f64::from(x) * scale).round() as u32).to_string(),
                (check.origin.1 + (f64::from(y) * scale).round() as u32).to_string(),
            )
        };
        let to = |at: (u32, u32)| {
            let (x, y) = screen(at);
            display.xdotool(&["mousemove", "--window", &window.id, &x, &y]);
            std::thread::sleep(Duration::from_millis(60));
        };
        // Blank background right of the heading: pressed at 500,80, through to 700,140.
        to((500, 80));
        display.xdotool(&["mousedown", "1"]);
        for i in 1..=4 {
            to((500 + 50 * i, 80 + 15 * i));
        }
        display.xdotool(&["mouseup", "1"]);
        let drag = recorded(&record, "drag", 0, Duration::from_secs(30));
        let path = drag["path"].as_array().unwrap().clone();
        let tolerance = (1.0 / scale).ceil() as i64 + 1;
        let near = |point: &serde_json::Value, (x, y): (i64, i64)| {
            (point[0].as_i64().unwrap() - x).abs() <= tolerance
                && (point[1].as_i64().unwrap() - y).abs() <= tolerance
        };
        assert!(path.len() >= 3, "{drag}");
        assert!(near(&path[0], (500, 80)), "{drag}");
        assert!(near(path.last().unwrap(), (700, 140)), "{drag}");
        // The pointer comes to rest at 300,90: one move there.
        to((280, 90));
        to((300, 90));
        let hover = recorded(&record, "move", 0, Duration::from_secs(30));
        assert!(
            near(&serde_json::json!([hover["x"], hover["y"]]), (300, 90)),
            "{hover}"
        );
        eprintln!("xterm: drag {drag}, hover {hover}");
    });
}
