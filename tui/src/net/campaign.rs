//! The terminal UI's side of a campaign over HTTP (`server/src/routes/campaign.rs` has the
//! routes): the calls `collect` makes for the event loop (`CampaignCall` -> `CampaignReply`), the
//! progress as lines for `V`, and `review`: the next demonstration fetched into a folder of its
//! own, shown in the review mode, and the review sent back. Every call goes with the person's own
//! token, which says who they are: no call names anyone.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use anyhow::Context;
use base64::Engine;
use serde_json::{json, Value};

use browserenv_collect::campaign::Progress;
use browserenv_collect::trajectory::{
    frame_name, is_frame_name, EpisodeRecord, StepRecord, EPISODES_FILE, REVIEW_FILE,
    SCREENSHOTS_DIR, STEPS_FILE,
};

use crate::app::{CampaignCall, CampaignReply, TaskView};
use crate::net::sessions::Sessions;
use crate::output::printable;
use crate::review::{Mark, Quality};

/// Make `call` for the person the token names.
pub async fn call(sessions: &Sessions, call: CampaignCall) -> CampaignReply {
    let answer = match call {
        CampaignCall::Lease => lease(sessions).await,
        CampaignCall::Skip { lease, reason } => sessions
            .post("/campaign/skip", &json!({"lease": lease, "reason": reason}))
            .await
            .map(|reply| CampaignReply::Skipped(text(&reply["skipped"]))),
        CampaignCall::Complete { lease, passed } => {
            let mark = if passed { "pass" } else { "fail" };
            sessions
                .post("/campaign/complete", &json!({"lease": lease, "mark": mark}))
                .await
                .map(|saved| CampaignReply::Saved {
                    task: text(&saved["task"]),
                    check: saved["check"].as_bool(),
                })
        }
        CampaignCall::Progress => progress(sessions).await.map(CampaignReply::Progress),
    };
    answer.unwrap_or_else(|err| CampaignReply::Failed(err.to_string()))
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

async fn lease(sessions: &Sessions) -> Result<CampaignReply, crate::net::sessions::ApiError> {
    let reply = sessions.post("/campaign/lease", &json!({})).await?;
    // Shown on the task line: nothing the server sends may move the terminal's cursor.
    let shown = |value: &Value| printable(&text(value)).into_owned();
    let person = shown(&reply["person"]);
    let (Some(lease), Some(task)) = (reply["lease"]["id"].as_str(), reply["task"].as_object())
    else {
        return Ok(CampaignReply::Leased {
            person,
            lease: None,
        });
    };
    let task = TaskView {
        id: shown(&task["id"]),
        category: shown(&task["category"]),
        instruction: shown(&task["instruction"]),
    };
    Ok(CampaignReply::Leased {
        person,
        lease: Some((lease.to_string(), task)),
    })
}

async fn progress(sessions: &Sessions) -> Result<Vec<String>, crate::net::sessions::ApiError> {
    let reply = sessions.get("/campaign").await?;
    let progress: Progress = serde_json::from_value(reply).map_err(|err| {
        crate::net::sessions::ApiError::Failed(format!("an unreadable GET /campaign: {err}"))
    })?;
    Ok(progress_lines(&progress)
        .iter()
        .map(|line| printable(line).into_owned())
        .collect())
}

fn seconds(value: Option<f64>) -> String {
    value.map_or("-".into(), |s| format!("{s:.0} s"))
}

fn percent(value: Option<f64>) -> String {
    value.map_or("-".into(), |r| format!("{:.0}%", r * 100.0))
}

/// Where the campaign stands, a line each: the totals, each person, each task not complete.
pub fn progress_lines(progress: &Progress) -> Vec<String> {
    let mut lines = vec![
        format!(
            "{}/{} demonstrations, {}/{} tasks complete; {} reviewed, {} accepted; \
             check passed {}; median {} per demonstration",
            progress.done,
            progress.wanted,
            progress.tasks_complete,
            progress.tasks_total,
            progress.reviewed,
            progress.accepted,
            percent(progress.pass_rate),
            seconds(progress.median_seconds)
        ),
        String::new(),
    ];
    for person in &progress.people {
        lines.push(format!(
            "{}: {} demonstrations (median {}, check passed {}, {} rejected), {} skipped, \
             {} reviews{}",
            person.name,
            person.demonstrations,
            seconds(person.median_seconds),
            percent(person.pass_rate),
            person.rejected,
            person.skips,
            person.reviews,
            person
                .working_on
                .as_ref()
                .map_or(String::new(), |task| format!("; on {task}"))
        ));
    }
    let open: Vec<_> = progress
        .tasks
        .iter()
        .filter(|t| t.done < t.wanted as usize)
        .collect();
    if !open.is_empty() {
        lines.push(String::new());
    }
    for task in open {
        lines.push(format!(
            "{}: {}/{} done, {} in hand, {} rejected, {} skips",
            task.id, task.done, task.wanted, task.leased, task.rejected, task.skipped
        ));
    }
    lines
}

/// A demonstration fetched for review.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Who reviews: the person the token names.
    pub reviewer: String,
    pub episode_id: String,
    pub person: String,
    pub task: String,
    pub instruction: String,
    /// What the server could not send (a screenshot missing on its disk).
    pub problems: Vec<String>,
}

/// Fetch the next demonstration the token's person may review into `dir` as a recording of one
/// episode (its steps, its episode line, its screenshots); None when none waits for them. What
/// the server sent is checked as any recording is: frame names of the writer's form, each
/// frame's bytes matching its name.
pub async fn fetch_review(sessions: &Sessions, dir: &Path) -> anyhow::Result<Option<Fetched>> {
    let item = sessions.post("/campaign/review/next", &json!({})).await?;
    if item.is_null() {
        return Ok(None);
    }
    let steps: Vec<StepRecord> =
        serde_json::from_value(item["steps"].clone()).context("the demonstration's steps")?;
    let episode: Option<EpisodeRecord> =
        serde_json::from_value(item["episode"].clone()).context("the demonstration's episode")?;
    // Only this user reads what is under review.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir.join(SCREENSHOTS_DIR))?;
    let frames = item["frames"].as_object().cloned().unwrap_or_default();
    for (frame, png) in &frames {
        anyhow::ensure!(
            is_frame_name(frame),
            "a screenshot named {frame:?} is refused"
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .with_context(|| format!("screenshot {frame}"))?;
        anyhow::ensure!(
            frame_name(&png) == *frame,
            "screenshot {frame} does not match its name"
        );
        std::fs::write(dir.join(frame), png)?;
    }
    let lines =
        |records: Vec<Value>| -> String { records.iter().map(|r| format!("{r}\n")).collect() };
    let step_values = steps
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()?;
    std::fs::write(dir.join(STEPS_FILE), lines(step_values))?;
    let episode_values = episode
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()?;
    std::fs::write(dir.join(EPISODES_FILE), lines(episode_values))?;
    let demonstration = &item["demonstration"];
    Ok(Some(Fetched {
        // Named in the review log and on screen: nothing the server sends moves the cursor.
        reviewer: printable(&text(&item["reviewer"])).into_owned(),
        episode_id: text(&demonstration["episode_id"]),
        person: text(&demonstration["person"]),
        task: text(&demonstration["task"]),
        instruction: text(&item["task"]["instruction"]),
        problems: item["problems"]
            .as_array()
            .map(|problems| problems.iter().map(text).collect())
            .unwrap_or_default(),
    }))
}

/// Send the review made in `dir` (its `review.jsonl`) of `fetched` back: accepted when its
/// quality is good, rejected (its task wants another demonstration) when bad. Without either,
/// nothing is sent and None comes back: the demonstration goes back to the queue.
pub async fn submit_review(
    sessions: &Sessions,
    dir: &Path,
    fetched: &Fetched,
) -> anyhow::Result<Option<bool>> {
    let review = crate::review::read(dir)?;
    let accepted = match review.quality(&fetched.episode_id) {
        Some(Quality::Good) => true,
        Some(Quality::Bad) => false,
        Some(Quality::Unsure) | None => return Ok(None),
    };
    let text = match std::fs::read_to_string(dir.join(REVIEW_FILE)) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err.into()),
    };
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    // The campaign's log keeps a line of it: the step marks, counted.
    let marks: Vec<String> = [Mark::Wrong, Mark::Redundant]
        .into_iter()
        .filter_map(|mark| {
            let count = review
                .steps
                .iter()
                .filter(|((episode, _), step)| {
                    *episode == fetched.episode_id && step.mark == Some(mark)
                })
                .count();
            (count > 0).then(|| format!("{count} step(s) {}", mark.label()))
        })
        .collect();
    let note = marks.join(", ");
    sessions
        .post(
            "/campaign/review",
            &json!({"episode_id": fetched.episode_id, "accepted": accepted, "note": note,
                    "events": events}),
        )
        .await?;
    Ok(Some(accepted))
}
