//! From observations to records: each session's open episode; fields holding a secret covered
//! in saved frames (`browserenv::secrets`).

use super::*;

/// Turns a stream of observations into step and episode records: remembers each open episode's
/// last frame (the "before" of the next step) and writes the episode line when it ends.
/// Keyed by a session id, so one recorder serves many sessions (the server) or one (the UI).
pub struct Recorder {
    writer: TrajectoryWriter,
    actor: Actor,
    open: BTreeMap<String, OpenEpisode>,
    /// Each session's last recorded step, kept after its episode ends so a note can still go on it.
    last_steps: BTreeMap<String, StepRecord>,
    /// The newest episodes written whole (every step and the episode line), newest last, for
    /// `RecordEvent::Confirm`: at most `CONFIRMABLE`.
    written: std::collections::VecDeque<String>,
}

/// How many written episodes a recorder remembers for `RecordEvent::Confirm`: a confirmation is
/// asked for right after an episode ends, long before this many others end.
const CONFIRMABLE: usize = 1024;

pub(super) struct OpenEpisode {
    episode_id: String,
    task: Option<String>,
    person: Option<String>,
    start_url: String,
    started: String,
    frame: String,
    url: String,
    steps: u64,
    last: Option<StepRecord>,
    /// The task's whole verdict, once judged (`RecordEvent::Verdict`).
    verdict: Option<crate::tasks::Verdict>,
    /// Notes sent before the episode's first step, for that step.
    pending_notes: Vec<String>,
    /// A step of it could not be written: it is not on disk whole.
    lost_step: bool,
    /// The episode's web archive, as the newest observation names it.
    archive: Option<ArchiveRef>,
}

/// What a recorder is told. `session` keys the episode; everything else is what the wire carried,
/// except a task's whole verdict (`Verdict`), which only the server knows.
#[derive(Debug, Clone)]
pub enum RecordEvent {
    Reset {
        session: String,
        episode_id: String,
        task: Option<String>,
        /// The campaign's name for the person demonstrating (`EpisodeRecord::person`).
        person: Option<String>,
        observation: browserenv::models::StepResult,
    },
    Step {
        session: String,
        /// Who took the step, when not the recorder's own actor (a person who took control of
        /// an agent's session, or the agent of a watched session the person took over).
        actor: Option<Actor>,
        action: browserenv::models::BrowserAction,
        observation: browserenv::models::StepResult,
        latency_ms: f64,
        /// Replaces the action's text in the record (a secret typed into the page).
        recorded_text: Option<String>,
    },
    /// The whole verdict of the session's open task episode (with the details its observation
    /// leaves out), sent before the step that ends it: written on the episode line.
    Verdict {
        session: String,
        verdict: crate::tasks::Verdict,
    },
    /// Attach a note to the session's last step.
    Note { session: String, note: String },
    /// The session stopped (quit, disconnect, reset elsewhere): an open episode is abandoned.
    End { session: String },
    /// Whether episode `episode_id` is on disk whole (its steps and its episode line), answered
    /// on `reply` once every event sent before this one is written: the recorder works in order,
    /// so whoever saw the episode end and then asks learns whether it reached the disk.
    Confirm {
        episode_id: String,
        reply: std::sync::mpsc::Sender<bool>,
    },
}

impl Recorder {
    pub fn new(writer: TrajectoryWriter, actor: Actor) -> Self {
        Recorder {
            writer,
            actor,
            open: BTreeMap::new(),
            last_steps: BTreeMap::new(),
            written: std::collections::VecDeque::new(),
        }
    }

    /// Save a frame with the fields holding a secret covered (`secrets::cover_boxes`): a
    /// recording is an outlet like any other, whoever's view the frame came from.
    fn save_frame(
        writer: &TrajectoryWriter,
        observation: &browserenv::models::StepResult,
    ) -> io::Result<String> {
        let screenshot = &observation.observation.screenshot;
        let boxes = browserenv::secrets::secret_boxes(&observation.observation.metadata);
        if boxes.is_empty() || screenshot.is_empty() {
            return writer.save_screenshot(screenshot);
        }
        let png = base64::engine::general_purpose::STANDARD
            .decode(screenshot)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
        writer.save_png(&browserenv::secrets::cover_boxes(&png, &boxes)?)
    }

    pub fn record(&mut self, event: RecordEvent) -> io::Result<()> {
        match event {
            RecordEvent::Reset {
                session,
                episode_id,
                task,
                person,
                observation,
            } => {
                self.abandon(&session)?;
                let frame = Self::save_frame(&self.writer, &observation)?;
                let time = now();
                self.open.insert(
                    session,
                    OpenEpisode {
                        episode_id,
                        task,
                        person,
                        start_url: observation.observation.url.clone(),
                        started: time,
                        frame,
                        url: observation.observation.url,
                        steps: 0,
                        last: None,
                        verdict: None,
                        pending_notes: Vec::new(),
                        lost_step: false,
                        archive: ArchiveRef::from_metadata(&observation.observation.metadata),
                    },
                );
                Ok(())
            }
            RecordEvent::Step {
                session,
                actor,
                action,
                observation,
                latency_ms,
                recorded_text,
            } => self.step(
                &session,
                actor.unwrap_or(self.actor),
                action,
                observation,
                latency_ms,
                recorded_text,
            ),
            RecordEvent::Verdict { session, verdict } => {
                if let Some(episode) = self.open.get_mut(&session) {
                    episode.verdict = Some(verdict);
                }
                Ok(())
            }
            RecordEvent::Note { session, note } => {
                // Before the episode's first step (an agent that asks for a person at once):
                // the note waits for that step.
                let first_step_pending = self
                    .open
                    .get(&session)
                    .is_some_and(|episode| episode.last.is_none());
                let Some(last) = self
                    .last_steps
                    .get_mut(&session)
                    .filter(|_| !first_step_pending)
                else {
                    if let Some(episode) = self.open.get_mut(&session) {
                        episode.pending_notes.push(note);
                        return Ok(());
                    }
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "no recorded step to attach the note to",
                    ));
                };
                let mut record = last.clone();
                // A step's notes add up (an agent's request for a person, then its answer).
                record.note = Some(match record.note.take() {
                    Some(before) if before != note => format!("{before}\n{note}"),
                    _ => note,
                });
                // Remembered only once on disk, so a note that failed is not carried on.
                self.writer.rewrite_last_step(&record).map_err(|err| {
                    io::Error::new(err.kind(), format!("the note was not attached: {err}"))
                })?;
                *last = record.clone();
                if let Some(episode) = self.open.get_mut(&session) {
                    episode.last = Some(record);
                }
                Ok(())
            }
            RecordEvent::End { session } => self.abandon(&session),
            RecordEvent::Confirm { episode_id, reply } => {
                // Nobody waiting any more is no failure of the recording.
                let _ = reply.send(self.written.contains(&episode_id));
                Ok(())
            }
        }
    }

    fn step(
        &mut self,
        session: &str,
        actor: Actor,
        action: browserenv::models::BrowserAction,
        observation: browserenv::models::StepResult,
        latency_ms: f64,
        recorded_text: Option<String>,
    ) -> io::Result<()> {
        let Some(episode) = self.open.get_mut(session) else {
            // A step without a recorded reset (recording switched on mid-episode): start here.
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "step without a recorded reset; it starts recording at the next reset",
            ));
        };
        // A frame that cannot be stored (a full disk) costs the step its picture, not the step.
        let (next_frame, frame_error) = match Self::save_frame(&self.writer, &observation) {
            Ok(frame) => (frame, None),
            Err(err) => (String::new(), Some(err)),
        };
        episode.steps += 1;
        let metadata = &observation.observation.metadata;
        if let Some(archive) = ArchiveRef::from_metadata(metadata) {
            episode.archive = Some(archive);
        }
        // Whatever goes into a password field never reaches the disk.
        let mut wire = browserenv::secrets::shown_action(&action, &observation, false);
        if let Some(text) = recorded_text {
            if let Some(field) = wire.action.secret_text_mut() {
                *field = text;
            }
        }
        let record = StepRecord {
            schema: SCHEMA.into(),
            episode_id: episode.episode_id.clone(),
            step: episode.steps,
            time: now(),
            actor,
            file_name: std::mem::replace(&mut episode.frame, next_frame.clone()),
            url: std::mem::replace(&mut episode.url, observation.observation.url.clone()),
            action: wire.to_value(),
            next_file_name: next_frame,
            next_url: observation.observation.url.clone(),
            error: observation.observation.error.clone(),
            reward: observation.reward,
            done: observation.done,
            latency_ms,
            task: episode.task.clone(),
            note: (!episode.pending_notes.is_empty())
                .then(|| std::mem::take(&mut episode.pending_notes).join("\n")),
            element: metadata.get("element").cloned(),
        };
        // The episode has moved past the step even if its line is lost: the next step starts
        // from this observation, as the actor did.
        let appended = self.writer.append_step(&record).map_err(|err| {
            io::Error::new(
                err.kind(),
                format!(
                    "step {} of episode {} was not recorded (the steps before it are): {err}",
                    record.step, record.episode_id
                ),
            )
        });
        if appended.is_ok() {
            episode.last = Some(record.clone());
            self.last_steps.insert(session.to_string(), record.clone());
        } else {
            episode.lost_step = true;
        }
        // A done episode's end is recorded even when its last step could not be.
        let closed = if observation.done {
            let outcome = Outcome::of_done_step(action.op().name(), &record.error);
            let answer = (action.op() == browserenv::models::Op::Finish).then(|| {
                record.action["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            });
            self.close(session, outcome, answer)
        } else {
            Ok(())
        };
        appended?;
        closed?;
        match frame_error {
            Some(err) => Err(io::Error::new(
                err.kind(),
                format!(
                    "step {} of episode {} was recorded without its screenshot: {err}",
                    record.step, record.episode_id
                ),
            )),
            None => Ok(()),
        }
    }

    fn abandon(&mut self, session: &str) -> io::Result<()> {
        if self.open.contains_key(session) {
            self.close(session, Outcome::Abandoned, None)?;
        }
        Ok(())
    }

    fn close(&mut self, session: &str, outcome: Outcome, answer: Option<String>) -> io::Result<()> {
        let Some(episode) = self.open.remove(session) else {
            return Ok(());
        };
        let whole = !episode.lost_step;
        let record = EpisodeRecord {
            schema: SCHEMA.into(),
            episode_id: episode.episode_id,
            actor: self.actor,
            person: episode.person,
            task: episode.task,
            start_url: episode.start_url,
            started: episode.started,
            ended: now(),
            steps: episode.steps,
            outcome,
            answer,
            reward: episode.last.as_ref().and_then(|l| l.reward),
            verdict: episode.verdict,
            archive: episode.archive,
        };
        self.writer.append_episode(&record)?;
        if whole {
            if self.written.len() == CONFIRMABLE {
                self.written.pop_front();
            }
            self.written.push_back(record.episode_id);
        }
        Ok(())
    }
}

/// A recorder on a thread of its own: callers hand it events and never wait for the disk.
pub struct RecorderHandle {
    events: std::sync::mpsc::Sender<RecordEvent>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RecorderHandle {
    /// Start the recorder thread. Write failures are reported through `on_error` (a log line,
    /// a status message) and recording goes on with the next event.
    pub fn spawn(
        mut recorder: Recorder,
        on_error: impl Fn(io::Error) + Send + 'static,
    ) -> io::Result<Self> {
        let (events, inbox) = std::sync::mpsc::channel::<RecordEvent>();
        let thread = std::thread::Builder::new()
            .name("trajectory-recorder".into())
            .spawn(move || {
                for event in inbox {
                    if let Err(err) = recorder.record(event) {
                        on_error(err);
                    }
                }
            })?;
        Ok(RecorderHandle {
            events,
            thread: Some(thread),
        })
    }

    pub fn send(&self, event: RecordEvent) {
        let _ = self.events.send(event);
    }

    pub fn sender(&self) -> std::sync::mpsc::Sender<RecordEvent> {
        self.events.clone()
    }

    /// Wait until every event sent so far is on disk.
    pub fn finish(mut self) {
        let (events, _) = std::sync::mpsc::channel();
        drop(std::mem::replace(&mut self.events, events));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
