//! One observation, top to bottom: what an action did (or a reset's load), as the agent sees it.
//! Follow new tabs and settle; read back what a secret field holds; read the page's facts; take
//! the screenshot; judge the step's end and a finished task; read the page's text when asked
//! (`BROWSER_OBSERVE_TEXT`); say the rest in metadata, timings last, then the episode's archive;
//! hide the episode's secrets in all of it. The picture is left as the page shows it: covering fields that hold a secret
//! depends on who looks (`browserenv::secrets`), which the session knows.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use browserenv::models::{BrowserObservation, StepResult};
use browserenv::text_layer::{CompactText, TextLayer};
use browserenv_collect::tasks::{Ending, PageState, Task, Verdict, Wants};

use super::limits::{
    bounded, Budget, OBSERVE_SLACK, SETTLE_PROBE_SLACK, STATE_TIMEOUT, TEXT_TIMEOUT,
};
use super::{EnvError, Episode};
use crate::browser::{Browser, Incidents, PageError, PageFacts, SettleOutcome, MAX_SECRET_BOXES};
use crate::environment::outcome::{judge, StepFacts};
use crate::environment::verification::is_bot_verification;
use crate::settings::{EnvSettings, SettleMode};

/// The most characters of `metadata.text` (`BROWSER_OBSERVE_TEXT`): `read_page`'s default bound.
pub const OBSERVE_TEXT_CHARS: usize = browserenv::text_layer::DEFAULT_COMPACT_CHARS;

/// Timings of one observation, reported in metadata.
#[derive(Default)]
pub(super) struct Timings {
    /// A reset's wait for its episode's browser: a context taken or opened, or a launch.
    pub browser: Option<Duration>,
    pub action: Duration,
    pub settle: Duration,
    pub screenshot: Duration,
    /// Reading the page's text (`BROWSER_OBSERVE_TEXT`).
    pub text: Option<Duration>,
}

/// What the action did, for its observation.
pub(super) struct Done {
    pub error: Option<PageError>,
    /// Whether to settle before reading the page (not after `wait`, `finish`, nor after an input
    /// the page did not take in time).
    pub settle: bool,
    pub timings: Timings,
    /// When the step (or reset) began: `timings_ms.total` counts from here.
    pub started: Instant,
    /// What the action was about, read before it (`metadata.element`).
    pub element: Option<Value>,
    /// The action's input went to a secret field in focus (or one a person marked): what it
    /// typed is a secret, and what the field holds after it.
    pub secret_field: bool,
    /// What the action typed, if it typed.
    pub typed: Option<String>,
}

/// Where an observation is made: the server's settings and the episode's place.
pub(super) struct Place<'a> {
    pub settings: &'a EnvSettings,
    pub session: &'a str,
    pub episode_id: Option<&'a str>,
    pub step: u64,
}

/// The observation of `done` on `episode`'s page, what `archive` says of the episode's archive
/// included, and the text layer read for it (kept for watchers' text requests of the same step).
pub(super) async fn observe<B: Browser>(
    episode: &mut Episode<B>,
    place: Place<'_>,
    archive: &crate::archive::EpisodeArchive,
    mut done: Done,
) -> (StepResult, Option<TextLayer>) {
    let settings = place.settings;
    // Everything before the screenshot shares one budget, so no page can add the bounds of
    // its phases up (see docs/server.md, "Step time").
    let budget = Budget::from_now(settings.action_wait + OBSERVE_SLACK);
    let mut settled = None;
    if done.settle {
        let settle_started = Instant::now();
        follow_tabs(&mut episode.browser, settings, &budget).await;
        settled = settle_page(&mut episode.browser, settings, &budget).await;
        // A tab opened by a delayed handler becomes the page too.
        follow_tabs(&mut episode.browser, settings, &budget).await;
        done.timings.settle = settle_started.elapsed();
    }
    let facts = read_facts(&mut episode.browser, settings, &budget).await;
    let reached_secret = keep_secrets(episode, &done, &facts);
    // A MiniWoB++ page says itself when its episode is over (`miniwob.rs`).
    let page_ended = super::miniwob::page_ended(episode, &facts.url, &budget).await;
    let shot_started = Instant::now();
    let (screenshot, screenshot_error) = take_screenshot(&mut episode.browser, settings).await;
    done.timings.screenshot = shot_started.elapsed();
    let incidents = episode.browser.take_incidents();

    let max_steps = episode
        .task
        .as_ref()
        .map_or(settings.max_steps, |t| t.max_steps);
    // The error code and the end conditions (`outcome.rs`).
    let outcome = judge(&StepFacts {
        action: done.error,
        screenshot: screenshot_error,
        incidents: Some(&incidents),
        url: &facts.url,
        bot_verification: is_bot_verification(&facts.text),
        finished: episode.done || page_ended,
        step_count: place.step,
        max_steps,
    });
    episode.done = outcome.done;
    let verdict = judge_task(episode, &facts).await;
    let reward = match (&verdict, super::miniwob::reward(episode)) {
        (_, Some(page_reward)) => page_reward,
        (Some(verdict), None) if verdict.passed => 1.0,
        _ => 0.0,
    };
    // A page that could not be pictured is not asked for its text. Once the episode has a
    // secret, it is read at every step: where the page draws one as text (a field it swapped
    // for a plain one, an echo, an editable element), its box is covered like a secret field's.
    let wants_text = settings.observe_text || !episode.secrets.is_empty();
    let mut secret_boxes = facts.password_boxes.clone();
    let layer = if wants_text && !screenshot.is_empty() {
        let text_started = Instant::now();
        let layer = read_text(episode, &place).await;
        if settings.observe_text {
            done.timings.text = Some(text_started.elapsed());
        }
        if let Ok((_, shown_secrets)) = &layer {
            for found in shown_secrets {
                if !secret_boxes.contains(found) && secret_boxes.len() < 2 * MAX_SECRET_BOXES {
                    secret_boxes.push(*found);
                }
            }
        }
        Some(layer.map(|(layer, _)| layer))
    } else {
        None
    };
    let text = layer
        .as_ref()
        .filter(|_| settings.observe_text)
        .map(|layer| {
            layer
                .as_ref()
                .map(|l| l.compact(OBSERVE_TEXT_CHARS))
                .map_err(Clone::clone)
        });
    let mut metadata = metadata(&MetadataInputs {
        title: &facts.title,
        step: place.step,
        settle_mode: settings.settle,
        settled,
        timings: &done.timings,
        total: done.started.elapsed(),
        incidents: &incidents,
        error_detail: outcome.detail,
        task: episode.task.as_ref(),
        verdict: verdict.as_ref(),
        password_boxes: &secret_boxes,
        element: done.element.as_ref(),
        text: text.as_ref(),
    });
    if reached_secret {
        metadata.insert("secret_input".into(), json!(true));
    }
    // A replay's misses are the page's URLs (a form sent with GET carries what was typed).
    archive.describe(&mut metadata);
    super::miniwob::describe(episode, max_steps, &mut metadata);
    // Nothing joins the metadata after this: what does is not hidden.
    let mut url = facts.url;
    episode.secrets.hide_in_url(&mut url);
    episode.secrets.hide_in_metadata(&mut metadata);
    if verdict.is_some() {
        episode.verdict = verdict;
    }
    let result = StepResult {
        observation: BrowserObservation {
            metadata,
            screenshot,
            url,
            error: outcome
                .error
                .map(|c| c.code().to_string())
                .unwrap_or_default(),
        },
        reward: Some(reward),
        done: episode.done,
    };
    (result, layer.and_then(Result::ok))
}

/// What a person typed into a secret field, or marked, is a secret from the keystroke on,
/// whatever the field holds afterwards (a page clears it, submits it, swaps it out): the text the
/// action typed (each line), every value trusted input left in a secret field during the step
/// (the probe notes them as they happen, whatever the action was), and what the focused secret
/// field holds after it; the value before the step was held already (`Environment::step`).
/// Whether the step's input reached a secret field the step did not start in (or one the probe
/// cannot see into): then too, what it typed is a secret.
fn keep_secrets<B: Browser>(episode: &mut Episode<B>, done: &Done, facts: &PageFacts) -> bool {
    let reached = !facts.inputs.is_empty() || facts.opaque_input;
    if done.secret_field || reached {
        if let Some(typed) = &done.typed {
            episode.secrets.add(typed);
        }
    }
    for input in &facts.inputs {
        episode.secrets.hold(input.field, &input.value);
    }
    if done.secret_field || reached {
        if let Some(held) = &facts.held {
            episode.secrets.hold(held.field, &held.value);
        }
    }
    reached
}

/// The page's visible text as positioned lines, the episode's secrets hidden in it, and the
/// boxes of the lines that showed one (to be covered in pictures).
pub(super) async fn read_text<B: Browser>(
    episode: &mut Episode<B>,
    place: &Place<'_>,
) -> Result<(TextLayer, Vec<[i64; 4]>), EnvError> {
    let text = bounded(
        TEXT_TIMEOUT,
        PageError::RendererTimeout,
        episode.browser.visible_text(),
    )
    .await
    .map_err(|err| EnvError::PageText(err.to_string()))?;
    let mut layer = TextLayer {
        session: place.session.to_string(),
        episode_id: place.episode_id.map(str::to_string),
        step: place.step,
        url: text.url,
        runs: text.runs,
        truncated: text.truncated,
    };
    episode.secrets.hide_in_url(&mut layer.url);
    let mut shown_secrets = Vec::new();
    for run in &mut layer.runs {
        if let std::borrow::Cow::Owned(hidden) = episode.secrets.hidden(&run.text) {
            run.text = hidden;
            let [x, y, width, height] = [run.x, run.y, run.width, run.height].map(i64::from);
            shown_secrets.push([x, y, width, height]);
        }
    }
    Ok((layer, shown_secrets))
}

/// Make a tab the page opened its current page (a failure is only logged: the step goes on with
/// the tab it has).
async fn follow_tabs<B: Browser>(browser: &mut B, settings: &EnvSettings, budget: &Budget) {
    if let Err(err) = bounded(
        budget.within(settings.action_timeout),
        PageError::ActionTimeout,
        browser.follow_tabs(),
    )
    .await
    {
        tracing::debug!("following the new tabs: {err}");
    }
}

/// Wait until the page shows the action's effect: the seed's fixed wait, or the adaptive settle
/// and how it ended (None when the page could not even answer its probe).
async fn settle_page<B: Browser>(
    browser: &mut B,
    settings: &EnvSettings,
    budget: &Budget,
) -> Option<SettleOutcome> {
    match settings.settle {
        SettleMode::Fixed => {
            tokio::time::sleep(budget.within(settings.action_wait)).await;
            None
        }
        SettleMode::Adaptive => {
            let bound = budget.within(settings.action_wait + SETTLE_PROBE_SLACK);
            match bounded(
                bound,
                PageError::RendererTimeout,
                browser.settle(settings.action_wait),
            )
            .await
            {
                Ok(outcome) => Some(outcome),
                // A page that cannot even answer the settle probe gets judged by the screenshot.
                Err(err) => {
                    tracing::debug!("settle failed: {err}");
                    None
                }
            }
        }
    }
}

/// The page's URL, title, text and password boxes; a renderer that does not answer gives none.
async fn read_facts<B: Browser>(
    browser: &mut B,
    settings: &EnvSettings,
    budget: &Budget,
) -> PageFacts {
    bounded(
        budget.within(settings.action_timeout),
        PageError::RendererTimeout,
        browser.facts(),
    )
    .await
    .unwrap_or_default()
}

/// The screenshot's PNG in base64, or an empty one and why there is none.
async fn take_screenshot<B: Browser>(
    browser: &mut B,
    settings: &EnvSettings,
) -> (String, Option<PageError>) {
    match bounded(
        settings.screenshot_timeout,
        PageError::RendererTimeout,
        browser.screenshot(),
    )
    .await
    {
        Ok(png) => (png, None),
        Err(err) => (String::new(), Some(err)),
    }
}

/// A task episode is judged when it finishes: its check on the final page and the `finish` text
/// (1.0 if it passes, else 0.0). None for other steps and episodes without a task.
async fn judge_task<B: Browser>(episode: &mut Episode<B>, facts: &PageFacts) -> Option<Verdict> {
    let (Some(task), Some(answer)) = (&episode.task, &episode.answer) else {
        return None;
    };
    let state = read_state(&mut episode.browser, &task.check.wants()).await;
    Some(task.judge(&Ending {
        answer,
        url: &facts.url,
        page_text: &facts.text,
        state: &state,
        secrets: &episode.secrets,
    }))
}

/// What the finishing task's check reads beyond the URL and the text, bounded by `STATE_TIMEOUT`
/// (`finish`'s own limit in `step_bound`); a page that cannot answer fails the parts that needed
/// it, and the verdict says why.
async fn read_state<B: Browser>(browser: &mut B, wants: &Wants) -> PageState {
    if wants.is_empty() {
        return PageState::default();
    }
    match bounded(
        STATE_TIMEOUT,
        PageError::RendererTimeout,
        browser.read_state(wants),
    )
    .await
    {
        Ok(state) => state,
        Err(err) => PageState {
            unread: Some(err.code().to_string()),
            ..PageState::default()
        },
    }
}

/// What an observation's metadata says beyond the wire's fields.
struct MetadataInputs<'a> {
    title: &'a str,
    step: u64,
    settle_mode: SettleMode,
    /// How the adaptive settle ended, if it ran and the page answered.
    settled: Option<SettleOutcome>,
    timings: &'a Timings,
    /// The whole step so far, action to screenshot.
    total: Duration,
    incidents: &'a Incidents,
    error_detail: Option<String>,
    task: Option<&'a Task>,
    verdict: Option<&'a Verdict>,
    password_boxes: &'a [[i64; 4]],
    /// What the action was about (`element`).
    element: Option<&'a Value>,
    /// With `BROWSER_OBSERVE_TEXT`: the page's text in the compact form, or why there is none.
    text: Option<&'a Result<CompactText, EnvError>>,
}

fn metadata(inputs: &MetadataInputs) -> Map<String, Value> {
    let MetadataInputs {
        title,
        step,
        settle_mode,
        settled,
        timings,
        total,
        incidents,
        ref error_detail,
        task,
        verdict,
        password_boxes,
        element,
        text,
    } = *inputs;
    let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 10.0).round() / 10.0;
    let settle_name = match (settle_mode, settled) {
        (SettleMode::Fixed, _) => "fixed",
        (SettleMode::Adaptive, Some(SettleOutcome::Quiet)) => "quiet",
        (SettleMode::Adaptive, Some(SettleOutcome::Bounded)) => "bounded",
        (SettleMode::Adaptive, None) => "none",
    };
    let mut map = Map::new();
    map.insert("title".into(), json!(title));
    map.insert("step".into(), json!(step));
    map.insert("settle".into(), json!(settle_name));
    let mut phases = json!({
        "action": ms(timings.action),
        "settle": ms(timings.settle),
        "screenshot": ms(timings.screenshot),
        "total": ms(total),
    });
    if let Some(browser) = timings.browser {
        phases["browser"] = json!(ms(browser));
    }
    if let Some(read) = timings.text {
        phases["text"] = json!(ms(read));
    }
    map.insert("timings_ms".into(), phases);
    if !incidents.dialogs.is_empty() {
        let dialogs: Vec<Value> = incidents
            .dialogs
            .kept
            .iter()
            .map(|(kind, message)| json!({"type": kind, "message": message}))
            .collect();
        map.insert("dialogs".into(), Value::Array(dialogs));
    }
    let capped = [
        ("downloads_denied", &incidents.downloads_denied),
        ("navigations_blocked", &incidents.navigations_blocked),
    ];
    for (name, list) in capped {
        if !list.is_empty() {
            map.insert(name.into(), json!(list.kept));
        }
    }
    if !incidents.network_refused.is_empty() {
        let refused: Vec<&String> = incidents
            .network_refused
            .kept
            .iter()
            .map(|(_, why)| why)
            .collect();
        map.insert("network_refused".into(), json!(refused));
    }
    let more = [
        ("dialogs_more", incidents.dialogs.more),
        ("downloads_denied_more", incidents.downloads_denied.more),
        (
            "navigations_blocked_more",
            incidents.navigations_blocked.more,
        ),
        ("tabs_closed", incidents.tabs_closed),
        ("scripts_stopped", incidents.scripts_stopped),
    ];
    for (name, count) in more {
        if count > 0 {
            map.insert(name.into(), json!(count));
        }
    }
    if incidents.tab_switches > 0 {
        map.insert("tab_switches".into(), json!(incidents.tab_switches));
    }
    if incidents.navigated {
        map.insert("navigated".into(), json!(true));
    }
    if let Some(detail) = error_detail {
        map.insert("error_detail".into(), json!(detail));
    }
    if let Some(task) = task {
        map.insert(
            "task".into(),
            json!({"id": task.id, "category": task.category, "instruction": task.instruction, "max_steps": task.max_steps}),
        );
    }
    if let Some(verdict) = verdict {
        map.insert("verdict".into(), json!(verdict.shown()));
    }
    if !password_boxes.is_empty() {
        map.insert("password_boxes".into(), json!(password_boxes));
    }
    if let Some(element) = element {
        map.insert("element".into(), element.clone());
    }
    match text {
        Some(Ok(compact)) => {
            map.insert("text".into(), json!(compact.text));
            map.insert("text_truncated".into(), json!(compact.truncated));
        }
        Some(Err(err)) => {
            map.insert("text".into(), json!(""));
            map.insert("text_truncated".into(), json!(true));
            map.insert("text_error".into(), json!(err.to_string()));
        }
        None => {}
    }
    map
}
