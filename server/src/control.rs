//! Who drives a session: its agent (the client that opened it), or for a while a person who took
//! control from a watch connection (`/sessions/{id}/watch`, the terminal UI's `watch`) to get the
//! agent past a login, a cookie wall or a wrong turn.
//!
//! The slot holds at most one person. The session (`session.rs`) applies what it means: an agent's
//! request waits while a person holds it, the person's actions run through the session's own step
//! path, and the agent's next observation lists them. The registry (`registry.rs`) keeps a
//! session's slot beside its entry, so a watch connection reaches it by the session's id without
//! waiting for the session's lock (a step in flight), and tells every watcher when it changes.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::watch;

/// A person holding control: an id for the connection that took it (only that connection may act
/// or hand back) and the name it gave, shown to the agent and to watchers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller {
    pub id: String,
    pub name: String,
}

/// One session's control slot: `None` is the agent.
#[derive(Debug)]
pub struct Control {
    holder: watch::Sender<Option<Arc<Controller>>>,
}

impl Default for Control {
    fn default() -> Self {
        Control {
            holder: watch::channel(None).0,
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

    /// Who is in control, as watchers and `/sessions` show it.
    pub fn view(&self) -> Value {
        match self.holder() {
            Some(controller) => json!({"actor": "human", "name": controller.name}),
            None => json!({"actor": "agent"}),
        }
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
