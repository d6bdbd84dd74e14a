//! Who drives a session: its agent (the client that opened it), or for a while a person who took
//! control from a watch connection (`/sessions/{id}/watch`, the terminal UI's `watch`) to get the
//! agent past a login, a cookie wall or a wrong turn.
//!
//! The slot holds at most one person. The session (`mod.rs`) applies what it means: an agent's
//! request waits while a person holds it, the person's actions run through the session's own step
//! path, and the agent's next observation lists them. The registry (`registry.rs`) keeps a
//! session's slot beside its entry, so a watch connection reaches it by the session's id without
//! waiting for the session's lock (a step in flight), and tells every watcher when it changes.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::watch;

/// A person holding control: an id for the connection that took it (only that connection may act
/// or hand back) and the name it gave, shown to the agent and to watchers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller {
    pub id: String,
    pub name: String,
}

/// An agent's request for a person (`request_human`): why, and since when.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Ask {
    pub reason: String,
    pub since: String,
}

/// One session's control slot: `None` is the agent. Beside it, the agent's request for a person
/// while one is open, and what the person said when they last handed back.
#[derive(Debug)]
pub struct Control {
    holder: watch::Sender<Option<Arc<Controller>>>,
    asking: Mutex<Option<Ask>>,
    note: Mutex<Option<String>>,
}

impl Default for Control {
    fn default() -> Self {
        Control {
            holder: watch::channel(None).0,
            asking: Mutex::new(None),
            note: Mutex::new(None),
        }
    }
}

impl Control {
    /// The person in control, if any.
    pub fn holder(&self) -> Option<Arc<Controller>> {
        self.holder.borrow().clone()
    }

    /// Take control for `name`; refused (with why) while someone holds it: one person at a time.
    pub fn take(&self, name: &str) -> Result<Arc<Controller>, String> {
        let controller = Arc::new(Controller {
            id: uuid::Uuid::new_v4().to_string(),
            name: name.to_string(),
        });
        let mut refused = None;
        self.holder.send_if_modified(|holder| match holder {
            Some(current) => {
                refused = Some(current.name.clone());
                false
            }
            None => {
                *holder = Some(controller.clone());
                true
            }
        });
        match refused {
            Some(name) => Err(format!(
                "{name} holds control of this session: one person at a time"
            )),
            None => Ok(controller),
        }
    }

    /// Hand back to the agent, if `id` still holds control (true when it did).
    pub fn release(&self, id: &str) -> bool {
        self.holder.send_if_modified(|holder| {
            if holder.as_ref().is_some_and(|c| c.id == id) {
                *holder = None;
                true
            } else {
                false
            }
        })
    }

    /// Wait until the agent has control again, at most until `deadline` (false: still a person's).
    pub async fn agents_turn(&self, deadline: tokio::time::Instant) -> bool {
        let mut holder = self.holder.subscribe();
        tokio::time::timeout_at(deadline, holder.wait_for(Option::is_none))
            .await
            .is_ok_and(|changed| changed.is_ok())
    }

    /// Who is in control, as watchers and `/sessions` show it; and the agent's request for a
    /// person, while it waits.
    pub fn view(&self) -> Value {
        let mut view = match self.holder() {
            Some(controller) => json!({"actor": "human", "name": controller.name}),
            None => json!({"actor": "agent"}),
        };
        if let Some(ask) = self.asking() {
            view["asking"] = json!(ask);
        }
        view
    }

    /// The agent's open request for a person.
    pub fn asking(&self) -> Option<Ask> {
        self.asking.lock().ok()?.clone()
    }

    /// Open the agent's request for a person (one at a time).
    pub fn ask(&self, reason: &str) -> Result<(), String> {
        let mut asking = self.asking.lock().map_err(|_| "unavailable".to_string())?;
        if asking.is_some() {
            return Err("this session is asking for a person already".into());
        }
        if let Ok(mut note) = self.note.lock() {
            *note = None;
        }
        *asking = Some(Ask {
            reason: reason.to_string(),
            since: browserenv_collect::trajectory::now(),
        });
        Ok(())
    }

    /// Close the agent's request for a person.
    pub fn answered(&self) {
        if let Ok(mut asking) = self.asking.lock() {
            *asking = None;
        }
    }

    /// What the person in control says to the agent as they hand back.
    pub fn leave_note(&self, note: String) {
        if let Ok(mut kept) = self.note.lock() {
            *kept = Some(note);
        }
    }

    /// The person's note, once.
    pub fn take_note(&self) -> Option<String> {
        self.note.lock().ok()?.take()
    }

    /// Wait, at most until `deadline`, for a person to take control and hand it back (one who
    /// holds it already need only hand back): who it was.
    pub async fn handed_back(&self, deadline: tokio::time::Instant) -> Option<Arc<Controller>> {
        let mut holder = self.holder.subscribe();
        let person = tokio::time::timeout_at(deadline, holder.wait_for(Option::is_some))
            .await
            .ok()?
            .ok()?
            .clone()?;
        tokio::time::timeout_at(deadline, holder.wait_for(Option::is_none))
            .await
            .ok()?
            .ok()?;
        Some(person)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_person_at_a_time_and_only_the_holder_hands_back() {
        let control = Control::default();
        let ana = control.take("ana").unwrap();
        assert_eq!(
            control.take("bo").unwrap_err(),
            "ana holds control of this session: one person at a time"
        );
        assert!(!control.release("someone else"));
        assert_eq!(control.view(), json!({"actor": "human", "name": "ana"}));
        let soon = tokio::time::Instant::now() + Duration::from_millis(20);
        assert!(!control.agents_turn(soon).await);
        assert!(control.release(&ana.id));
        assert!(!control.release(&ana.id));
        let soon = tokio::time::Instant::now() + Duration::from_millis(20);
        assert!(control.agents_turn(soon).await);
        assert_eq!(control.view(), json!({"actor": "agent"}));
    }
}
