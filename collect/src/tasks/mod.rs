//! Task sets: JSONL files, one task per line, each with an instruction for the actor and a check
//! that decides, when the episode finishes, whether it succeeded (reward 1.0) or not (0.0).
//!
//! ```json
//! {"id":"info-drill-price","category":"information","instruction":"What does the 18V drill cost?",
//!  "start_url":"index.html","max_steps":15,"check":{"answer":{"match":"normalized","value":"129.00"}}}
//! ```
//! `start_url` may be relative to a base (the demo site). A check has one or more parts, and all
//! of them must pass (`docs/tasks.md` has an example of each):
//! - `answer`: the `finish` text, matched `exact`, `normalized` or by `regex`;
//! - `url`: a regex the final URL must match; `page_text_contains`: text the final page shows;
//! - `element`: an element of the final page (a CSS selector), and its text;
//! - `field`: the value of a form field of the final page;
//! - `request`: a request a page of the episode made (method, URL, body);
//! - `cookie`, `local_storage`: a cookie or a `localStorage` item of the final page, and its value;
//! - `all_of`, `any_of`: checks of their own, all or at least one of which must pass.
//!
//! The parts: `check` (what a check may say and how it judges an episode), `page` (what it reads of
//! the final page and the episode), `verdict` (what it decides, and what of that is shown).

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

mod check;
mod page;
mod verdict;

pub use check::*;
pub use page::*;
pub use verdict::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Information,
    Navigation,
    Interaction,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: String,
    pub category: Category,
    pub instruction: String,
    pub start_url: String,
    #[serde(default = "default_max_steps")]
    pub max_steps: u64,
    pub check: Check,
    /// A web archive of the task's pages (a WARC file, relative to the task file): the task runs
    /// from it, with no network (docs/archives.md). `browserenv-tui tasks snapshot` writes these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
}

fn default_max_steps() -> u64 {
    20
}

/// What anyone but the server is told of a task: what to do, where it starts, its step limit, and
/// which parts its check has, by name only. Never what the parts expect: the answer, a pattern or
/// a text would let whoever reads it `finish` with reward 1.0 (the Task API, a campaign's lease and
/// its review all hand out tasks this way).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownTask {
    pub id: String,
    pub category: Category,
    pub instruction: String,
    /// Resolved against the base URL when the file gives a relative one (as written when there
    /// is nothing to resolve it against).
    pub start_url: String,
    pub max_steps: u64,
    /// `answer` means the `finish` text is judged.
    pub checks: Vec<CheckPart>,
}

impl Task {
    /// The task as it may leave the server (`ShownTask`): the one rule for that.
    pub fn shown(&self, base: Option<&url::Url>) -> ShownTask {
        ShownTask {
            id: self.id.clone(),
            category: self.category,
            instruction: self.instruction.clone(),
            start_url: self
                .resolve_start_url(base)
                .unwrap_or_else(|_| self.start_url.clone()),
            max_steps: self.max_steps,
            checks: self.check.parts(),
        }
    }

    /// The start URL, resolved against `base` when it is relative.
    pub fn resolve_start_url(&self, base: Option<&url::Url>) -> Result<String, String> {
        match url::Url::parse(&self.start_url) {
            Ok(url) => Ok(url.to_string()),
            Err(url::ParseError::RelativeUrlWithoutBase) => match base {
                Some(base) => base
                    .join(&self.start_url)
                    .map(|url| url.to_string())
                    .map_err(|err| format!("task {}: bad start_url: {err}", self.id)),
                None => Err(format!(
                    "task {} has a relative start_url ({}) and no base URL to resolve it against",
                    self.id, self.start_url
                )),
            },
            Err(err) => Err(format!("task {}: bad start_url: {err}", self.id)),
        }
    }

    /// Judge a finished episode.
    pub fn judge(&self, ending: &Ending) -> Verdict {
        let mut details = Vec::new();
        let failed = self.check.judge(ending, "", &mut details);
        Verdict {
            passed: failed.is_empty(),
            failed,
            details,
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.id.trim().is_empty() {
            return Err("id is empty".into());
        }
        if self.instruction.trim().is_empty() {
            return Err("instruction is empty".into());
        }
        if !(1..=200).contains(&self.max_steps) {
            return Err(format!("max_steps must be 1..=200, got {}", self.max_steps));
        }
        self.check.validate("check", 0)?;
        let parts = self.check.count_parts();
        if parts > MAX_CHECK_PARTS {
            return Err(format!(
                "check has {parts} parts; {MAX_CHECK_PARTS} at most"
            ));
        }
        Ok(())
    }
}

/// A loaded task file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskSet {
    /// The set's name: its file's stem (`demo` for `assets/tasks/demo.jsonl`). The server's Task
    /// API serves the set as the split of this name.
    pub name: String,
    pub tasks: Vec<Task>,
}

impl TaskSet {
    /// Load a JSONL task file. Every bad line is reported with the file and line number; a file
    /// with any bad line is refused as a whole (a task set is an experiment's definition).
    pub fn load(path: &Path) -> Result<TaskSet, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| format!("cannot read the task file {}: {err}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parse a task file's text; `name` is its path as the messages should name it, and its stem
    /// the set's name.
    pub fn parse(text: &str, name: &str) -> Result<TaskSet, String> {
        let mut tasks = Vec::new();
        let mut problems = Vec::new();
        let mut ids = BTreeSet::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("//") {
                continue;
            }
            let at = format!("{name}:{}", index + 1);
            match serde_json::from_str::<Task>(line) {
                Ok(task) => {
                    if let Err(err) = task.validate() {
                        problems.push(format!("{at}: task {}: {err}", task.id));
                    } else if !ids.insert(task.id.clone()) {
                        problems.push(format!("{at}: duplicate task id {:?}", task.id));
                    } else {
                        tasks.push(task);
                    }
                }
                Err(err) => {
                    // The line is the file's: serde's own "at line 1" would say otherwise.
                    let text = err.to_string();
                    let place = format!(" at line {} column {}", err.line(), err.column());
                    let message = text.strip_suffix(&place).unwrap_or(&text);
                    problems.push(format!("{at}: {message} (column {})", err.column()));
                }
            }
        }
        if !problems.is_empty() {
            // One line per problem: regex errors come with line breaks of their own.
            let lines: Vec<String> = problems
                .iter()
                .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            return Err(lines.join("\n"));
        }
        if tasks.is_empty() {
            return Err(format!("{name}: no tasks"));
        }
        let stem = Path::new(name).file_stem().map(|s| s.to_string_lossy());
        Ok(TaskSet {
            name: stem.map_or_else(|| name.to_string(), |s| s.into_owned()),
            tasks,
        })
    }

    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn ids(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| t.id.as_str()).collect()
    }
}

#[cfg(test)]
mod tests;
