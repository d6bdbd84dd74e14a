//! The UI's side of recording (`--record DIR`): what the person did, or what the watched agent
//! did, becomes `RecordEvent`s for the recorder thread, while recording is on.

use browserenv::models::StepResult;
use browserenv_collect::trajectory::{Actor, RecordEvent, RecorderHandle};
use tokio::sync::mpsc;

use crate::app::Request;

/// One recorder session per connection, fed from the link's replies.
pub struct ActiveRecording {
    pub handle: RecorderHandle,
    pub errors: mpsc::UnboundedReceiver<String>,
    /// One recorder session per connection: a reconnect starts a new one.
    pub session: String,
}

impl ActiveRecording {
    /// `actor`: who took the step when the link knows (a watched session's frames say whether
    /// the agent or a person in control acted); otherwise the recorder's own.
    pub fn reply(
        &self,
        request: Request,
        actor: Option<Actor>,
        result: StepResult,
        latency_ms: f64,
        episode_id: Option<String>,
    ) {
        let session = self.session.clone();
        let event = match request {
            Request::Reset(_) => RecordEvent::Reset {
                session,
                episode_id: episode_id.unwrap_or_default(),
                task: None,
                person: None,
                observation: result,
            },
            Request::ResetTask(task) | Request::ResetLease { task, .. } => RecordEvent::Reset {
                session,
                episode_id: episode_id.unwrap_or_default(),
                task: Some(task),
                person: None,
                observation: result,
            },
            Request::Step(action) => RecordEvent::Step {
                session,
                actor,
                action,
                observation: result,
                latency_ms,
                recorded_text: None,
            },
            Request::Secret { name, action } => RecordEvent::Step {
                session,
                actor,
                action,
                observation: result,
                latency_ms,
                recorded_text: Some(browserenv::secrets::named(&name)),
            },
        };
        self.handle.send(event);
    }

    pub fn end(&mut self) {
        self.handle.send(RecordEvent::End {
            session: self.session.clone(),
        });
    }

    pub fn new_session(&mut self) {
        self.end();
        self.session = uuid::Uuid::new_v4().to_string();
    }
}

impl ActiveRecording {
    pub fn new(handle: RecorderHandle, errors: mpsc::UnboundedReceiver<String>) -> Self {
        ActiveRecording {
            handle,
            errors,
            session: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// A note on the last recorded step.
    pub fn note(&self, note: String) {
        self.handle.send(RecordEvent::Note {
            session: self.session.clone(),
            note,
        });
    }

    /// An episode still open when the UI stops is recorded as abandoned; everything reaches
    /// the disk.
    pub fn finish(mut self) {
        self.end();
        self.handle.finish();
    }
}
