//! Server-side recording (`--record-dir`): every session's episodes become trajectory records
//! with `actor: "agent"` (`"human"` for the steps of a person who took control), with no change
//! on the client. The session only hands events to the
//! recorder thread (a channel send); the disk is never on the step path.

use std::sync::mpsc::Sender;

use browserenv::models::{BrowserAction, StepResult};
use browserenv_collect::tasks::Verdict;
use browserenv_collect::trajectory::{Actor, RecordEvent};

/// One session's handle on the recorder (a no-op when the server does not record).
pub struct SessionRecorder {
    session: String,
    events: Option<Sender<RecordEvent>>,
}

impl SessionRecorder {
    pub fn new(session: String, events: Option<Sender<RecordEvent>>) -> Self {
        SessionRecorder { session, events }
    }

    fn send(&self, event: impl FnOnce(String) -> RecordEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event(self.session.clone()));
        }
    }

    pub fn reset(
        &self,
        episode_id: Option<String>,
        task: Option<String>,
        person: Option<String>,
        observation: &StepResult,
    ) {
        self.send(|session| RecordEvent::Reset {
            session,
            episode_id: episode_id.unwrap_or_default(),
            task,
            person,
            observation: observation.clone(),
        });
    }

    pub fn step(
        &self,
        action: &BrowserAction,
        actor: Actor,
        observation: &StepResult,
        latency_ms: f64,
        recorded_text: Option<String>,
    ) {
        self.send(|session| RecordEvent::Step {
            session,
            actor: Some(actor),
            action: action.clone(),
            observation: observation.clone(),
            latency_ms,
            recorded_text,
        });
    }

    /// The whole verdict of the open task episode, before the step that ends it.
    pub fn verdict(&self, verdict: Verdict) {
        self.send(|session| RecordEvent::Verdict { session, verdict });
    }

    /// A note on the session's last recorded step (an agent's request for a person, its answer).
    pub fn note(&self, note: String) {
        self.send(|session| RecordEvent::Note { session, note });
    }

    pub fn end(&self) {
        self.send(|session| RecordEvent::End { session });
    }
}

impl Drop for SessionRecorder {
    fn drop(&mut self) {
        self.end();
    }
}
