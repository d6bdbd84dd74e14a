//! Hand-off: a person watching the session may take control (`control.rs`). The rule lives here,
//! in `agent_reset` and `agent_step`, the only way the transports drive a session: while a person
//! holds control the agent's request waits (without the lock, so the person's actions can run)
//! for at most `BROWSER_HANDOFF_WAIT_SECONDS`; a step still waiting then gets the current
//! observation with `metadata.control = "human"`, nothing done. The person's actions
//! (`human_step`) take the same step path, so they are counted, recorded and shown to watchers
//! like the agent's, with `actor: "human"`; the agent's next observation lists them in
//! `metadata.human_steps`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use browserenv::models::{BrowserAction, StepResult};
use browserenv::secrets::shown_action;
use browserenv_collect::trajectory::Actor;

use super::{Session, SharedSession};
use crate::browser::Launcher;
use crate::environment::EnvError;
use crate::session::control::Control;

/// The most characters of a URL in `metadata.human_steps`.
const HUMAN_STEP_URL_CHARS: usize = 2048;

/// Who may take the session over, how long the agent waits for the hand-back, and what the
/// person did meanwhile.
pub(super) struct HandOff {
    /// Who drives: the agent, or a person who took control.
    pub control: Arc<Control>,
    pub wait: Duration,
    /// The longest `request_human` waits.
    pub ask_wait: Duration,
    /// The person's steps since the agent's last observation, for its next one.
    pub human_steps: Vec<Value>,
}

/// The agent's reset: waits while a person holds control (see the module's documentation); still
/// waiting after `BROWSER_HANDOFF_WAIT_SECONDS`, it is refused and the episode is left as it is.
pub async fn agent_reset<L: Launcher>(
    shared: &SharedSession<L>,
    kwargs: &Map<String, Value>,
) -> Result<StepResult, EnvError> {
    match agents_turn(shared).await {
        Ok(mut session) => session.reset(kwargs).await,
        Err((session, waited)) => {
            let name = session.handoff.control.holder().map(|c| c.name.clone());
            Err(EnvError::HeldByAPerson {
                name: name.unwrap_or_else(|| "a person".into()),
                waited: waited.as_secs_f64(),
            })
        }
    }
}

/// The agent's step: waits while a person holds control; still waiting after
/// `BROWSER_HANDOFF_WAIT_SECONDS`, it gets the current observation (nothing done) with
/// `metadata.control = "human"`. Either way the person's steps so far are in `metadata.human_steps`.
pub async fn agent_step<L: Launcher>(
    shared: &SharedSession<L>,
    action: &BrowserAction,
) -> Result<StepResult, EnvError> {
    match agents_turn(shared).await {
        Ok(mut session) => session.step_as_agent(action).await,
        Err((mut session, _)) => session.while_human(),
    }
}

/// The agent asks for a person (`request_human`): watchers see who asks and why, and the call
/// waits (without the session's lock, so the person can act) until a person has taken control
/// and handed back, at most `wait`. Then the agent gets the current observation with what the
/// person did (`metadata.human_steps`), who they were (`human`) and their note (`human_note`).
pub async fn ask_for_a_person<L: Launcher>(
    shared: &SharedSession<L>,
    reason: &str,
    wait: Duration,
) -> Result<StepResult, EnvError> {
    let (control, wait, asking) = {
        let session = shared.lock().await;
        if session.outlets.is_closed() {
            return Err(session.closed());
        }
        if session.last.is_none() {
            return Err(EnvError::AskBeforeReset);
        }
        session
            .outlets
            .ask(Some(reason), None)
            .map_err(EnvError::Ask)?;
        // From here on a call cancelled while it waits (its socket closed, its client gone)
        // closes the request as it goes, and watchers are told (`registry::Asking`).
        let asking = session.outlets.registration.as_ref().map(|r| r.asking());
        (
            session.handoff.control.clone(),
            wait.min(session.handoff.ask_wait),
            asking,
        )
    };
    let person = control
        .handed_back(tokio::time::Instant::now() + wait)
        .await;
    let mut session = shared.lock().await;
    // Answered here, under the session's lock: no other request can open the next ask before
    // this one's is closed below.
    if let Some(asking) = asking {
        asking.answered();
    }
    let note = control.take_note();
    let answer = match (&person, &note) {
        (Some(person), Some(note)) => format!("{} answered: {note}", person.name),
        (Some(person), None) => format!("{} took control and handed back", person.name),
        (None, _) => format!("no person answered within {} s", wait.as_secs()),
    };
    session
        .outlets
        .ask(None, Some(answer))
        .map_err(EnvError::Ask)?;
    let Some(person) = person else {
        let still = match control.holder() {
            Some(holder) => format!("{} holds control and has not handed back", holder.name),
            None => "no person took control".to_string(),
        };
        return Err(EnvError::NotHandedBack {
            still,
            seconds: wait.as_secs(),
        });
    };
    let mut result = session.current_observation(None)?;
    let metadata = &mut result.observation.metadata;
    metadata.insert("human".into(), person.name.clone().into());
    metadata.insert("human_note".into(), note.map_or(Value::Null, Value::from));
    Ok(result)
}

type Locked<'a, L> = tokio::sync::MutexGuard<'a, Session<L>>;
type Turn<'a, L> = Result<Locked<'a, L>, (Locked<'a, L>, Duration)>;

/// The session, locked, once the agent may act; or, after the hand-off wait, locked with a person
/// still in control, and how long it waited.
async fn agents_turn<L: Launcher>(shared: &SharedSession<L>) -> Turn<'_, L> {
    let started = tokio::time::Instant::now();
    loop {
        let session = shared.lock().await;
        if session.handoff.control.holder().is_none() {
            return Ok(session);
        }
        let (control, deadline) = (
            session.handoff.control.clone(),
            started + session.handoff.wait,
        );
        // Waiting without the lock: the person's actions need it.
        drop(session);
        if !control.agents_turn(deadline).await {
            let session = shared.lock().await;
            // Handed back just as the wait ran out: the agent goes on.
            if session.handoff.control.holder().is_none() {
                return Ok(session);
            }
            return Err((session, started.elapsed()));
        }
    }
}

impl<L: Launcher> Session<L> {
    /// The agent's action, once it has control: its observation lists the person's steps since
    /// its last one. An episode the person ended is not stepped again: the agent gets how it ended.
    async fn step_as_agent(&mut self, action: &BrowserAction) -> Result<StepResult, EnvError> {
        let ended_by_person = !self.handoff.human_steps.is_empty()
            && self.last.as_ref().is_some_and(|last| last.done);
        if ended_by_person {
            return self.current_observation(None);
        }
        let mut result = self.step(action, Actor::Agent, false).await?;
        self.hand_over_human_steps(&mut result);
        Ok(result)
    }

    /// An action of the person holding control as `controller`; a `secret` one's text leaves the
    /// server as `<redacted:N characters>` only (`shown_action`). The person gets their own page
    /// back, fields holding a secret uncovered.
    pub(super) async fn human_step(
        &mut self,
        controller: &str,
        action: &BrowserAction,
        secret: bool,
    ) -> Result<StepResult, EnvError> {
        if self
            .handoff
            .control
            .holder()
            .is_none_or(|holder| holder.id != controller)
        {
            return Err(EnvError::NotInControl);
        }
        let result = self.step(action, Actor::Human, secret).await?;
        // The agent learns that a person typed, never what they typed into a secret field.
        let shown = shown_action(action, &result, secret);
        self.handoff.human_steps.push(serde_json::json!({
            "step": self.env.state().step_count,
            "action": shown.to_value(),
            // A page can make its URL 2 MiB long (Chromium's limit); the agent has it whole in
            // the observation, and a start of it here, once per human step.
            "url": crate::browser::first_chars(&result.observation.url, HUMAN_STEP_URL_CHARS),
            "error": result.observation.error,
        }));
        Ok(result)
    }

    /// What an agent that waited in vain for the hand-back gets: the current observation, no
    /// action performed, `metadata.control = "human"` and who holds it.
    fn while_human(&mut self) -> Result<StepResult, EnvError> {
        let name = self.handoff.control.holder().map(|c| c.name.clone());
        self.current_observation(name)
    }

    /// The newest observation again, with the person's steps since the agent's last observation
    /// (and, while a person holds control, `control` and `controller`).
    fn current_observation(&mut self, controller: Option<String>) -> Result<StepResult, EnvError> {
        if self.outlets.is_closed() {
            return Err(self.closed());
        }
        let Some(mut result) = self.last.clone() else {
            return Err(EnvError::NotReset);
        };
        let metadata = &mut result.observation.metadata;
        metadata.insert("step".into(), self.env.state().step_count.into());
        if let Some(name) = controller {
            metadata.insert("control".into(), "human".into());
            metadata.insert("controller".into(), name.into());
        }
        self.hand_over_human_steps(&mut result);
        Ok(result)
    }

    fn hand_over_human_steps(&mut self, result: &mut StepResult) {
        if !self.handoff.human_steps.is_empty() {
            let steps = std::mem::take(&mut self.handoff.human_steps);
            result
                .observation
                .metadata
                .insert("human_steps".into(), Value::Array(steps));
        }
    }
}
