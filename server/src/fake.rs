//! A small deterministic browser for fast unit tests of the episode logic and of the layers above
//! it. It records every call and can be told to hang or to show a given page text; it never stands
//! in for Chromium in a test of real browser behaviour.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use browserenv::models::{Chord, Modifiers, MouseButton, Point};
use browserenv::text_layer::TextRun;
use browserenv_collect::tasks::{PageState, Wants};

use crate::browser::{
    Browser, Handover, Incidents, Launcher, PageError, PageFacts, PageText, Preparation,
    SettleOutcome,
};

/// A 1x1 transparent PNG, base64: enough for code that only passes screenshots through.
pub const TINY_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// How the fake pages behave.
#[derive(Debug, Clone, Default)]
pub struct FakeScript {
    pub page_text: String,
    pub hang_goto: bool,
    pub hang_click: bool,
    pub hang_screenshot: bool,
    /// The first browser launched reports its connection lost.
    pub first_browser_dead: bool,
    /// Reported once, on the first `take_incidents` of each browser.
    pub incidents: Incidents,
    /// What `visible_text` returns.
    pub text_runs: Vec<TextRun>,
    /// What `read_state` returns, whatever is asked.
    pub state: PageState,
    /// Pressing ENTER goes here (a form sent with GET).
    pub enter_goes_to: Option<String>,
    /// What `evaluate` answers, in turn, the last one again once they run out (none: an error).
    pub evaluations: Vec<serde_json::Value>,
    /// How long a load takes.
    pub load_time: Duration,
    /// How long a browser takes to launch.
    pub launch_time: Duration,
}

#[derive(Default)]
pub struct FakeLauncher {
    script: FakeScript,
    calls: Arc<Mutex<Vec<String>>>,
    launched: AtomicUsize,
    /// The start the last browser had loaded ahead for its successor (`prepare_next`): the next
    /// browser launched holds it.
    prepared: Arc<Mutex<Option<String>>>,
}

impl FakeLauncher {
    pub fn new(script: FakeScript) -> Self {
        FakeLauncher {
            script,
            ..FakeLauncher::default()
        }
    }

    /// Every browser call so far, as `"click 10 20"`-style lines.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub fn launched(&self) -> usize {
        self.launched.load(Ordering::SeqCst)
    }
}

impl Launcher for FakeLauncher {
    type Browser = FakeBrowser;

    async fn launch(&self) -> anyhow::Result<FakeBrowser> {
        tokio::time::sleep(self.script.launch_time).await;
        let index = self.launched.fetch_add(1, Ordering::SeqCst);
        let holds = self.prepared.lock().ok().and_then(|mut p| p.take());
        Ok(FakeBrowser {
            alive: !(self.script.first_browser_dead && index == 0),
            script: self.script.clone(),
            calls: self.calls.clone(),
            url: "about:blank".into(),
            history: Vec::new(),
            incidents_reported: false,
            archive: None,
            prepared: self.prepared.clone(),
            holds,
            evaluated: 0,
        })
    }
}

pub struct FakeBrowser {
    script: FakeScript,
    calls: Arc<Mutex<Vec<String>>>,
    url: String,
    history: Vec<String>,
    incidents_reported: bool,
    alive: bool,
    /// The episode's archive work: a replay answers each page the browser goes to.
    archive: Option<crate::archive::Work>,
    /// Where the next browser's page is loaded ahead (the launcher's).
    prepared: Arc<Mutex<Option<String>>>,
    /// The page this browser was given loaded ahead.
    holds: Option<String>,
    /// How many expressions were evaluated (`FakeScript::evaluations`).
    evaluated: usize,
}

impl FakeBrowser {
    fn record(&self, call: String) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
    }
}

async fn hang() {
    tokio::time::sleep(Duration::from_secs(3600)).await;
}

impl Browser for FakeBrowser {
    async fn goto(&mut self, url: &str, timeout: Duration) -> Result<(), PageError> {
        self.record(format!("goto {url}"));
        self.history
            .push(std::mem::replace(&mut self.url, url.to_string()));
        if let Some(crate::archive::Work::Replay(replaying)) = &self.archive {
            replaying.answer("GET", url, &[], None);
        }
        if self.script.hang_goto {
            tokio::time::sleep(timeout).await;
            return Err(PageError::PageLoadTimeout);
        }
        tokio::time::sleep(self.script.load_time).await;
        Ok(())
    }

    async fn click(
        &mut self,
        at: Point,
        button: MouseButton,
        count: u8,
        modifiers: Modifiers,
    ) -> Result<(), PageError> {
        let mut call = format!("click {} {}", at.x, at.y);
        if (button, count, modifiers) != (MouseButton::Left, 1, Modifiers::NONE) {
            let held: Vec<&str> = modifiers.iter().map(|m| m.name()).collect();
            call.push_str(&format!(" {} {count} {}", button.name(), held.join("+")));
        }
        self.record(call.trim_end().to_string());
        if self.script.hang_click {
            hang().await;
        }
        Ok(())
    }

    async fn type_text(&mut self, text: &str) -> Result<(), PageError> {
        self.record(format!("type {text}"));
        Ok(())
    }

    async fn press(&mut self, chord: Chord, repeat: u8) -> Result<(), PageError> {
        match repeat {
            1 => self.record(format!("press {chord}")),
            n => self.record(format!("press {chord} x{n}")),
        }
        if let ("ENTER", Some(to)) = (chord.name().as_str(), self.script.enter_goes_to.clone()) {
            return self.goto(&to, Duration::from_secs(1)).await;
        }
        Ok(())
    }

    async fn scroll(&mut self, at: Point, dx: i64, dy: i64) -> Result<(), PageError> {
        match dx {
            0 => self.record(format!("scroll {} {} {dy}", at.x, at.y)),
            dx => self.record(format!("scroll {} {} {dy} dx {dx}", at.x, at.y)),
        }
        Ok(())
    }

    async fn move_to(&mut self, at: Point) -> Result<(), PageError> {
        self.record(format!("move {} {}", at.x, at.y));
        Ok(())
    }

    async fn drag(
        &mut self,
        path: &[Point],
        button: MouseButton,
        _modifiers: Modifiers,
    ) -> Result<(), PageError> {
        let points: Vec<String> = path.iter().map(|p| format!("{},{}", p.x, p.y)).collect();
        self.record(format!("drag {} {}", button.name(), points.join(" ")));
        Ok(())
    }

    async fn mouse_button(
        &mut self,
        at: Point,
        button: MouseButton,
        down: bool,
    ) -> Result<(), PageError> {
        let what = if down { "mouse_down" } else { "mouse_up" };
        self.record(format!("{what} {} {} {}", at.x, at.y, button.name()));
        Ok(())
    }

    async fn select_option(&mut self, at: Point, label: &str) -> Result<(), PageError> {
        self.record(format!("select {} {} {label}", at.x, at.y));
        Ok(())
    }

    async fn forward(&mut self) -> Result<bool, PageError> {
        self.record("forward".into());
        Ok(false)
    }

    async fn back(&mut self) -> Result<bool, PageError> {
        self.record("back".into());
        match self.history.pop() {
            Some(url) => {
                self.url = url;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn settle(&mut self, _bound: Duration) -> Result<SettleOutcome, PageError> {
        self.record("settle".into());
        Ok(SettleOutcome::Quiet)
    }

    async fn follow_tabs(&mut self) -> Result<(), PageError> {
        Ok(())
    }

    async fn facts(&mut self) -> Result<PageFacts, PageError> {
        Ok(PageFacts {
            url: self.url.clone(),
            title: "Fake page".into(),
            text: self.script.page_text.clone(),
            ..PageFacts::default()
        })
    }

    async fn element(
        &mut self,
        at: Option<(i64, i64)>,
        _mark: bool,
    ) -> Result<Option<crate::browser::ElementFacts>, PageError> {
        Ok(Some(crate::browser::ElementFacts {
            shown: serde_json::json!({
                "tag": "button", "role": "button", "name": "Fake", "text": "Fake",
                "type": null, "password": false, "bbox": [0, 0, 10, 10], "at": at,
            }),
            held: None,
        }))
    }

    async fn visible_text(&mut self) -> Result<PageText, PageError> {
        self.record("visible_text".into());
        Ok(PageText {
            url: self.url.clone(),
            runs: self.script.text_runs.clone(),
            truncated: false,
        })
    }

    async fn read_state(&mut self, wants: &Wants) -> Result<PageState, PageError> {
        self.record(format!(
            "read_state elements={:?} fields={:?} storage={:?} cookies={} requests={}",
            wants.elements, wants.fields, wants.local_storage, wants.cookies, wants.requests
        ));
        Ok(self.script.state.clone())
    }

    async fn screenshot(&mut self) -> Result<String, PageError> {
        if self.script.hang_screenshot {
            hang().await;
        }
        Ok(TINY_PNG.to_string())
    }

    async fn capture_region(
        &mut self,
        region: crate::browser::Region,
        scale: f64,
    ) -> Result<String, PageError> {
        self.record(format!("capture_region {:?} at {scale}", region.corners()));
        if self.script.hang_screenshot {
            hang().await;
        }
        Ok(TINY_PNG.to_string())
    }

    fn take_incidents(&mut self) -> Incidents {
        if std::mem::replace(&mut self.incidents_reported, true) {
            Incidents::default()
        } else {
            self.script.incidents.clone()
        }
    }

    async fn start_archive(&mut self, work: crate::archive::Work) -> Result<(), PageError> {
        self.archive = Some(work);
        Ok(())
    }

    async fn stop_archive(&mut self) {
        self.archive = None;
    }

    async fn add_document_script(&mut self, script: String) -> Result<(), PageError> {
        self.record(format!("document script of {} characters", script.len()));
        Ok(())
    }

    async fn evaluate(&mut self, expression: String) -> Result<serde_json::Value, PageError> {
        let start: String = expression.chars().take(40).collect();
        self.record(format!("evaluate {start}"));
        let answers = &self.script.evaluations;
        let answer = answers.get(self.evaluated).or(answers.last()).cloned();
        self.evaluated += 1;
        answer.ok_or_else(|| PageError::ActionFailed("no scripted answer".into()))
    }

    async fn zoom(&mut self, factor: f64) -> Result<(), PageError> {
        self.record(format!("zoom {factor}"));
        Ok(())
    }

    async fn close(self) {
        self.record("close".into());
    }

    fn is_alive(&self) -> bool {
        self.alive
    }

    fn prepare_next(&mut self, start: Preparation) {
        self.record(format!("prepare {}", start.url));
        if let Ok(mut prepared) = self.prepared.lock() {
            *prepared = Some(start.url);
        }
    }

    async fn take_prepared(&mut self, url: Option<&str>) -> Handover {
        match self.holds.take() {
            None => Handover::Fresh,
            Some(held) if Some(held.as_str()) == url => {
                self.url = held;
                Handover::Prepared
            }
            Some(_) => Handover::Spoiled,
        }
    }
}
