//! Tasks and demonstrations: the task list from `--tasks` (`TaskView`; starting one, `N` next,
//! `S` skip, the verdict at finish) and recording from `--record DIR` (`R` on/off, `n` a note on
//! the last step).

use super::{App, Effect, Notice, Request};

/// A task as the UI shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskView {
    pub id: String,
    pub category: String,
    pub instruction: String,
}

impl App {
    /// The task being worked on.
    pub fn task(&self) -> Option<&TaskView> {
        self.tasks.get(self.task_index?)
    }

    /// Start the task at `index` (or say that the list is done).
    pub(super) fn start_task(&mut self, index: usize) -> Vec<Effect> {
        match self.tasks.get(index) {
            Some(task) => {
                let id = task.id.clone();
                self.task_index = Some(index);
                self.request(Request::ResetTask(id))
            }
            None => {
                self.notice(format!("all {} tasks done", self.tasks.len()));
                Vec::new()
            }
        }
    }

    fn next_task(&mut self) -> usize {
        self.task_index.map_or(0, |i| i + 1)
    }

    /// `N` (next task) or `S` (skip this one). Only `S` may abandon an episode in progress, so
    /// a stray `N` cannot throw away work.
    pub(super) fn advance_task(&mut self, skip: bool) -> Vec<Effect> {
        if self.tasks.is_empty() {
            self.error("no task list (start with --tasks FILE)");
            return Vec::new();
        }
        if !skip && self.episode_in_progress() {
            self.error("the episode is in progress: finish it (f), or S skips the task");
            return Vec::new();
        }
        let next = self.next_task();
        self.start_task(next)
    }

    /// The verdict of a finished task episode, as the notice line.
    pub(super) fn say_verdict(&mut self, passed: bool, why: &str, reward: Option<f64>) {
        let reward = reward.unwrap_or_default();
        let next = if self.next_task() < self.tasks.len() {
            " (N: next task)"
        } else {
            ""
        };
        let text = if passed {
            format!("task passed, reward {reward}{next}")
        } else if why.is_empty() {
            format!("task failed, reward {reward}{next}")
        } else {
            format!("task failed, reward {reward}: {why}{next}")
        };
        self.notice = Some(Notice {
            text,
            is_error: !passed,
        });
    }

    /// `R`: recording on or off.
    pub(super) fn toggle_recording(&mut self) -> Vec<Effect> {
        if !self.can_record {
            self.error("start with --record DIR to record demonstrations");
            return Vec::new();
        }
        self.recording = !self.recording;
        self.notice(if self.recording {
            "recording on (from the next reset if an episode is under way)"
        } else {
            "recording off"
        });
        vec![Effect::Record(self.recording)]
    }

    /// The note line's Enter: attach `text` to the last recorded step.
    pub(super) fn attach_note(&mut self, text: String) -> Vec<Effect> {
        if !self.recording {
            self.error("recording is off: nothing to attach a note to (R records)");
            return Vec::new();
        }
        if text.trim().is_empty() {
            return Vec::new();
        }
        self.notice("note attached to the last step");
        vec![Effect::Note(text)]
    }
}
