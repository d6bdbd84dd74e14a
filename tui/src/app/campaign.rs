//! Collecting for a campaign (`browserenv-tui collect --token TOKEN`): the server hands this person
//! their next task (a lease), they do it, and after the episode ends they mark it (`P` done as
//! asked, `F` not); `S` skips a task with a reason, `V` shows where the campaign stands. The next
//! task follows by itself; the server records everything (`docs/campaigns.md`).

use super::{App, Effect, LineKind, Request, TaskView};

/// This UI's part in a campaign.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Collecting {
    /// The name this person collects under: the one their token stands for, as the server says
    /// with each lease.
    pub name: String,
    /// The lease of the task in hand.
    pub lease: Option<String>,
    /// The lease's episode ended: its demonstration waits for the person's mark.
    pub ended: bool,
    /// A call to the campaign is on its way (one at a time).
    pub waiting: bool,
    /// Nothing is left for this person.
    pub finished: bool,
    /// `V`: where the campaign stands, a line each, shown over the picture.
    pub progress: Option<Vec<String>>,
    /// Demonstrations this person saved since the UI started.
    pub saved: usize,
}

/// What the UI asks of the campaign (the event loop makes the HTTP call).
#[derive(Debug, Clone, PartialEq)]
pub enum CampaignCall {
    /// The next task for this person (the one they hold, if any).
    Lease,
    Skip {
        lease: String,
        reason: String,
    },
    /// Save the ended episode with the person's own mark (true: done as asked).
    Complete {
        lease: String,
        passed: bool,
    },
    Progress,
}

/// What the campaign answered.
#[derive(Debug, Clone, PartialEq)]
pub enum CampaignReply {
    /// Whose token asked (`person`), and a lease and its task; None when nothing is left for
    /// them.
    Leased {
        person: String,
        lease: Option<(String, TaskView)>,
    },
    /// The demonstration of `task` was saved; `check` is the task's check (None: no check).
    Saved {
        task: String,
        check: Option<bool>,
    },
    Skipped(String),
    Progress(Vec<String>),
    Failed(String),
}

impl App {
    pub fn collecting(&self) -> bool {
        self.collect.is_some()
    }

    /// An overlay covers the picture: the help, or the campaign's progress.
    pub fn overlay_open(&self) -> bool {
        self.help || self.collect.as_ref().is_some_and(|c| c.progress.is_some())
    }

    fn campaign_call(&mut self, call: CampaignCall) -> Vec<Effect> {
        if let Some(collect) = self.collect.as_mut() {
            collect.waiting = true;
        }
        vec![Effect::Campaign(call)]
    }

    /// Connected (first, or again): ask for the task in hand or the next one.
    pub(super) fn collect_on_connected(&mut self) -> Vec<Effect> {
        self.campaign_call(CampaignCall::Lease)
    }

    /// `P` / `F`: the person's mark on the ended episode, which saves it.
    pub(super) fn mark_demonstration(&mut self, passed: bool) -> Vec<Effect> {
        let Some(collect) = &self.collect else {
            self.error("P and F mark a campaign's demonstration (browserenv-tui collect)");
            return Vec::new();
        };
        match (&collect.lease, collect.ended) {
            _ if collect.waiting => Vec::new(),
            (Some(lease), true) => {
                let lease = lease.clone();
                self.campaign_call(CampaignCall::Complete { lease, passed })
            }
            (Some(_), false) => {
                self.error("finish the task first (f), then P (done as asked) or F (not)");
                Vec::new()
            }
            (None, _) => {
                self.error("no task in hand (N asks for the next one)");
                Vec::new()
            }
        }
    }

    /// `S` in a campaign: ask why, then skip.
    pub(super) fn ask_skip_reason(&mut self) -> Vec<Effect> {
        if self.collect.as_ref().is_some_and(|c| c.lease.is_some()) {
            self.line(LineKind::SkipReason, String::new())
        } else {
            self.error("no task in hand to skip");
            Vec::new()
        }
    }

    /// The reason line's Enter.
    pub(super) fn skip_with(&mut self, reason: String) -> Vec<Effect> {
        let reason = reason.trim().to_string();
        if reason.is_empty() {
            self.error("say why you skip it (the campaign keeps the reason)");
            return Vec::new();
        }
        match self.collect.as_ref().and_then(|c| c.lease.clone()) {
            Some(lease) => self.campaign_call(CampaignCall::Skip { lease, reason }),
            None => Vec::new(),
        }
    }

    /// `N` in a campaign: the next task, once the one in hand is saved or skipped.
    pub(super) fn ask_next_task(&mut self) -> Vec<Effect> {
        match &self.collect {
            Some(c) if c.ended => {
                self.error("mark the demonstration first: P (done as asked) or F (not)");
                Vec::new()
            }
            Some(c) if c.waiting => Vec::new(),
            _ if self.episode_in_progress() => {
                self.error("the task is in progress: finish it (f), or S skips it");
                Vec::new()
            }
            _ => self.campaign_call(CampaignCall::Lease),
        }
    }

    /// `V`: show where the campaign stands, or hide it.
    pub(super) fn toggle_progress(&mut self) -> Vec<Effect> {
        match self.collect.as_mut() {
            Some(collect) if collect.progress.is_some() => {
                collect.progress = None;
                vec![Effect::Redraw]
            }
            Some(_) => vec![Effect::Campaign(CampaignCall::Progress)],
            None => Vec::new(),
        }
    }

    /// `r` in a campaign: the task in hand starts over (any other page would leave the task).
    pub(super) fn restart_task(&mut self) -> Vec<Effect> {
        let lease = self.collect.as_ref().and_then(|c| c.lease.clone());
        match (lease, self.task().map(|t| t.id.clone())) {
            (Some(lease), Some(task)) => {
                if let Some(collect) = self.collect.as_mut() {
                    collect.ended = false;
                }
                self.request(Request::ResetLease { lease, task })
            }
            _ => self.ask_next_task(),
        }
    }

    /// An observation in a campaign: an ended episode waits for the mark.
    pub(super) fn collect_on_observation(&mut self, done: bool) {
        let Some(collect) = self.collect.as_mut() else {
            return;
        };
        if done && collect.lease.is_some() && !collect.ended {
            collect.ended = true;
            let said = self
                .notice
                .as_ref()
                .map(|n| n.text.clone())
                .unwrap_or_default();
            let text = format!(
                "{said}{}P: you did the task as asked, F: you did not (saves it; r starts over)",
                if said.is_empty() { "" } else { " — " }
            );
            self.notice(text);
        }
    }

    pub(super) fn on_campaign(&mut self, reply: CampaignReply) -> Vec<Effect> {
        let Some(collect) = self.collect.as_mut() else {
            return Vec::new();
        };
        collect.waiting = false;
        if let CampaignReply::Leased { person, .. } = &reply {
            collect.name = person.clone();
        }
        match reply {
            CampaignReply::Leased {
                lease: Some((lease, task)),
                ..
            } => {
                collect.lease = Some(lease.clone());
                collect.ended = false;
                collect.finished = false;
                let id = task.id.clone();
                self.tasks = vec![task];
                self.task_index = Some(0);
                self.notice(format!("your next task: {id}"));
                self.request(Request::ResetLease { lease, task: id })
            }
            CampaignReply::Leased { lease: None, .. } => {
                collect.lease = None;
                collect.ended = false;
                collect.finished = true;
                let (name, saved) = (collect.name.clone(), collect.saved);
                self.notice(format!(
                    "nothing left for {name}: every task has its demonstrations or was yours \
                     ({saved} saved now; V: where the campaign stands; N asks again; q quits)"
                ));
                Vec::new()
            }
            CampaignReply::Saved { task, check } => {
                collect.lease = None;
                collect.ended = false;
                collect.saved += 1;
                let check = match check {
                    Some(true) => " (its check passed)",
                    Some(false) => " (its check failed)",
                    None => "",
                };
                self.notice(format!("saved the demonstration of {task}{check}"));
                self.campaign_call(CampaignCall::Lease)
            }
            CampaignReply::Skipped(task) => {
                collect.lease = None;
                collect.ended = false;
                self.notice(format!("skipped {task}"));
                self.campaign_call(CampaignCall::Lease)
            }
            CampaignReply::Progress(lines) => {
                collect.progress = Some(lines);
                vec![Effect::Redraw]
            }
            CampaignReply::Failed(message) => {
                self.error(format!("campaign: {message}"));
                Vec::new()
            }
        }
    }
}
