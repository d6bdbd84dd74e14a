//! Where a session's resets and steps go besides their caller: the watchers (the registry), the
//! recording (the server's, or a campaign's with the person's name), the server's log (a task's
//! whole verdict) and the campaign (its lease's progress). Every outlet gets the observation as
//! everyone but the person at the wheel sees it: fields holding a secret covered, typing into
//! them `redacted` (`browserenv::secrets`).

use std::sync::mpsc::Sender;
use std::sync::Arc;

use browserenv::models::{BrowserAction, StepResult};
use browserenv_collect::tasks::Verdict;
use browserenv_collect::trajectory::{Actor, RecordEvent};

use crate::session::recording::SessionRecorder;
use crate::session::registry::Registration;

/// The outlets of one session.
pub(super) struct Outlets {
    /// The session's entry in the registry: `/sessions`, its watchers. None once closed.
    pub registration: Option<Registration>,
    /// The recorder of the current episode.
    pub recorder: Option<SessionRecorder>,
    /// The server's recorder (`--record-dir`), which records the session's episodes unless they
    /// are a campaign's (recorded by the campaign's, with the person's name).
    pub server_recorder: Option<Sender<RecordEvent>>,
    pub campaign: Option<Arc<crate::campaign::Hub>>,
    /// The campaign lease the current episode is done under.
    pub seat: Option<crate::campaign::Seat>,
    /// `recorder` writes to the campaign's recording (else to the server's).
    pub recording_campaign: bool,
}

/// A step as the outlets are told it.
pub(super) struct Stepped<'a> {
    pub session: &'a str,
    pub episode_id: Option<String>,
    pub step: u64,
    pub task: Option<String>,
    /// The action as it happened, and as it may be shown (`shown_action`).
    pub action: &'a BrowserAction,
    pub shown: &'a BrowserAction,
    pub actor: Actor,
    /// The observation as everyone but the person at the wheel sees it.
    pub result: &'a StepResult,
    pub latency_ms: f64,
    /// The task's whole verdict, when the step finished a task episode.
    pub verdict: Option<Verdict>,
}

impl Outlets {
    pub fn is_closed(&self) -> bool {
        self.registration.is_none()
    }

    /// The agent asks for a person, or (`None`) its request ends with `answer`: the watchers are
    /// told, the recording notes both.
    pub fn ask(&self, reason: Option<&str>, answer: Option<String>) -> Result<(), String> {
        if let Some(registration) = &self.registration {
            registration.ask(reason)?;
        }
        if let Some(recorder) = &self.recorder {
            match (reason, answer) {
                (Some(reason), _) => {
                    recorder.note(format!("the agent asked for a person: {reason}"))
                }
                (None, Some(answer)) => recorder.note(answer),
                (None, None) => {}
            }
        }
        Ok(())
    }

    /// A new episode: recorded (a campaign's under the person's name) and shown to watchers.
    pub fn reset(
        &mut self,
        session: &str,
        episode_id: Option<String>,
        task: Option<String>,
        result: &StepResult,
    ) {
        // A campaign's episode goes to the campaign's recording, with the person's name.
        let (campaign, person) = match (&self.seat, &self.campaign) {
            (Some(seat), Some(hub)) => (Some(hub.recorder()), Some(seat.person.clone())),
            _ => (None, None),
        };
        if campaign.is_some() != self.recording_campaign {
            // The recorder of the episode before goes first: its end (an open episode
            // abandoned) must reach its disk before this episode starts on the other.
            self.recorder = None;
            self.recording_campaign = campaign.is_some();
            let events = campaign.or_else(|| self.server_recorder.clone());
            self.recorder = Some(SessionRecorder::new(session.to_string(), events));
        }
        if let Some(recorder) = &self.recorder {
            recorder.reset(episode_id.clone(), task, person, result);
        }
        if let Some(registration) = &self.registration {
            registration.publish(episode_id, 0, None, Actor::Agent, result, 0.0);
        }
    }

    /// A step: a finished task's whole verdict to the log and the recording, the step to the
    /// recording, the campaign told, the watchers shown.
    pub fn step(&self, step: Stepped) {
        if let Some(verdict) = &step.verdict {
            tracing::info!(
                "{}",
                verdict_line(
                    step.session,
                    step.episode_id.as_deref(),
                    step.task.as_deref(),
                    verdict
                )
            );
        }
        if let Some(recorder) = &self.recorder {
            if let Some(verdict) = step.verdict.clone() {
                recorder.verdict(verdict);
            }
            // The raw action with what to record for its text: the recorder redacts typing into
            // a secret field itself, a person's secret mark it cannot see.
            let marked = (step.shown != step.action)
                .then(|| step.shown.action.secret_text().map(str::to_string))
                .flatten();
            // In a campaign the client is the person demonstrating.
            let actor = if self.seat.is_some() {
                Actor::Human
            } else {
                step.actor
            };
            recorder.step(step.action, actor, step.result, step.latency_ms, marked);
        }
        // After the step went to the recorder: a demonstration is saved only once its episode's
        // end is on its way to the disk.
        if let (Some(seat), Some(hub)) = (&self.seat, &self.campaign) {
            hub.stepped(seat, step.session);
            if step.result.done {
                let check = step.verdict.as_ref().map(|v| v.passed);
                let episode = step.episode_id.clone().unwrap_or_default();
                hub.episode_ended(seat, step.session, &episode, check);
            }
        }
        if let Some(registration) = &self.registration {
            registration.publish(
                step.episode_id,
                step.step,
                Some(step.shown),
                step.actor,
                step.result,
                step.latency_ms,
            );
        }
    }
}

/// The server log's line for a judged task episode: its whole verdict, details included (the
/// observation shows only `Verdict::shown`; the details quote no secret: `Ending::secrets`).
fn verdict_line(
    session: &str,
    episode_id: Option<&str>,
    task: Option<&str>,
    verdict: &Verdict,
) -> String {
    let failed: Vec<&str> = verdict.failed.iter().map(|part| part.name()).collect();
    let result = if verdict.passed {
        "passed".to_string()
    } else {
        format!("failed ({})", failed.join(", "))
    };
    format!(
        "session {session}: episode {} of task {} {result}: {}",
        episode_id.unwrap_or("-"),
        task.unwrap_or("-"),
        verdict.details.join("; ")
    )
}
