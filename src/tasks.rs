//! Task sets: JSONL files, one task per line, each with an instruction for the actor and a check
//! that decides, when the episode finishes, whether it succeeded (reward 1.0) or not (0.0).
//!
//! ```json
//! {"id":"info-drill-price","category":"information","instruction":"What does the 18V drill cost?",
//!  "start_url":"index.html","max_steps":15,"check":{"answer":{"match":"normalized","value":"129.00"}}}
//! ```
//! `start_url` may be relative to a base (the demo site). A check has any of: `answer` (the
//! `finish` text, matched `exact`, `normalized` or by `regex`), `url` (a regex the final URL must
//! match) and `page_text_contains` (text the final page must show); all given parts must pass.

use std::collections::BTreeSet;
use std::path::Path;

use regex::Regex;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Information,
    Navigation,
    Interaction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    Exact,
    /// Case, punctuation and spacing do not matter: "$129.00" matches "129 00".
    Normalized,
    Regex,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerCheck {
    #[serde(rename = "match")]
    pub mode: MatchMode,
    pub value: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerCheck>,
    /// A regex the final URL must match (searched, so anchor it if needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_text_contains: Option<String>,
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
}

fn default_max_steps() -> u64 {
    20
}

/// A part of a task's check, named as in the task file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckPart {
    Answer,
    Url,
    PageTextContains,
}

impl CheckPart {
    /// Its name in the task file (and on the wire).
    pub fn name(self) -> &'static str {
        match self {
            CheckPart::Answer => "answer",
            CheckPart::Url => "url",
            CheckPart::PageTextContains => "page_text_contains",
        }
    }
}

/// The verdict of a check: whether it passed, the parts that failed, and one line per part so a
/// person can see why. The lines quote what the check expects (the answer, the pattern, the
/// text), so the whole verdict goes to the recording and the server's log only: the actor is
/// shown `Verdict::shown`, or it could read the answer off a failed attempt and finish again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub passed: bool,
    #[serde(default)]
    pub failed: Vec<CheckPart>,
    #[serde(default)]
    pub details: Vec<String>,
}

/// What the actor (every wire: the agent, the terminal UI, watchers) is told of a verdict: whether
/// it passed and which parts failed, nothing of what they expect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownVerdict {
    pub passed: bool,
    pub failed: Vec<CheckPart>,
}

impl Verdict {
    /// The verdict as it may leave the server in an observation. The one rule for that: the
    /// `details` never do.
    pub fn shown(&self) -> ShownVerdict {
        ShownVerdict {
            passed: self.passed,
            failed: self.failed.clone(),
        }
    }
}

/// The most characters of the final URL a verdict's details quote.
pub const DETAIL_URL_CHARS: usize = 2048;

/// Lower case, letters and digits only, single spaces.
pub fn normalize(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Task {
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

    /// Judge a finished episode: the `finish` text, the final URL and the final page's text.
    pub fn judge(&self, answer: &str, final_url: &str, page_text: &str) -> Verdict {
        let mut details = Vec::new();
        let mut failed = Vec::new();
        let mut judged = |part: CheckPart, ok: bool| {
            if !ok {
                failed.push(part);
            }
        };
        if let Some(check) = &self.check.answer {
            let ok = match check.mode {
                MatchMode::Exact => answer.trim() == check.value,
                MatchMode::Normalized => normalize(answer) == normalize(&check.value),
                MatchMode::Regex => Regex::new(&check.value).is_ok_and(|re| re.is_match(answer)),
            };
            judged(CheckPart::Answer, ok);
            details.push(format!(
                "answer {answer:?} {} {:?} ({:?})",
                if ok { "matches" } else { "does not match" },
                check.value,
                check.mode
            ));
        }
        if let Some(pattern) = &self.check.url {
            let ok = Regex::new(pattern).is_ok_and(|re| re.is_match(final_url));
            judged(CheckPart::Url, ok);
            // A page can make its URL megabytes long; the details go to the log once an episode.
            let shown_url: String = match final_url.char_indices().nth(DETAIL_URL_CHARS) {
                Some((cut, _)) => format!("{}…", &final_url[..cut]),
                None => final_url.to_string(),
            };
            details.push(format!(
                "final URL {shown_url} {} /{pattern}/",
                if ok { "matches" } else { "does not match" }
            ));
        }
        if let Some(text) = &self.check.page_text_contains {
            let ok = normalize(page_text).contains(&normalize(text));
            judged(CheckPart::PageTextContains, ok);
            details.push(format!(
                "final page {} {text:?}",
                if ok { "shows" } else { "does not show" }
            ));
        }
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
        let check = &self.check;
        if check.answer.is_none() && check.url.is_none() && check.page_text_contains.is_none() {
            return Err("check needs at least one of answer, url, page_text_contains".into());
        }
        if let Some(AnswerCheck {
            mode: MatchMode::Regex,
            value,
        }) = &check.answer
        {
            Regex::new(value).map_err(|err| format!("check.answer regex: {err}"))?;
        }
        if let Some(pattern) = &check.url {
            Regex::new(pattern).map_err(|err| format!("check.url regex: {err}"))?;
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
                Err(err) => problems.push(format!("{at}: {err}")),
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
mod tests {
    use super::*;

    fn task(check: &str) -> Task {
        serde_json::from_str(&format!(
            r#"{{"id":"t","category":"information","instruction":"Do it","start_url":"index.html","check":{check}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn answer_checks_match_exact_normalized_and_regex() {
        let exact = task(r#"{"answer":{"match":"exact","value":"1968"}}"#);
        assert!(exact.judge(" 1968 ", "", "").passed);
        assert!(!exact.judge("in 1968", "", "").passed);
        let loose = task(r#"{"answer":{"match":"normalized","value":"$129.00"}}"#);
        assert!(loose.judge("129.00", "", "").passed);
        assert!(loose.judge(" $129.00 ", "", "").passed);
        assert!(!loose.judge("129", "", "").passed);
        let pattern =
            task(r#"{"answer":{"match":"regex","value":"(?i)^\\s*(10|10:00|10 am)\\s*$"}}"#);
        assert!(pattern.judge("10:00", "", "").passed);
        assert!(!pattern.judge("11:00", "", "").passed);
    }

    #[test]
    fn url_and_page_text_checks_and_all_parts_must_pass() {
        let both = task(r#"{"url":"catalog\\.html\\?q=clamp","page_text_contains":"3 products"}"#);
        let verdict = both.judge(
            "",
            "http://h/catalog.html?q=clamp",
            "Search\n3 products\n...",
        );
        assert!(verdict.passed, "{verdict:?}");
        assert_eq!(verdict.details.len(), 2);
        assert!(!both.judge("", "http://h/catalog.html", "3 products").passed);
        assert!(
            !both
                .judge("", "http://h/catalog.html?q=clamp", "2 products")
                .passed
        );
    }

    #[test]
    fn the_shown_verdict_names_the_failed_parts_and_nothing_they_expect() {
        let all = task(
            r#"{"answer":{"match":"regex","value":"^19(68)$"},"url":"about\\.html","page_text_contains":"Founded in 1968"}"#,
        );
        let verdict = all.judge("1979", "http://h/about.html", "Nothing here");
        assert!(!verdict.passed);
        assert_eq!(
            verdict.failed,
            [CheckPart::Answer, CheckPart::PageTextContains]
        );
        assert_eq!(verdict.details.len(), 3);
        assert!(verdict.details[0].contains("^19(68)$"), "{verdict:?}");
        assert_eq!(
            serde_json::to_string(&verdict.shown()).unwrap(),
            r#"{"passed":false,"failed":["answer","page_text_contains"]}"#
        );
        let long = format!("http://h/about.html?{}", "x".repeat(3 * DETAIL_URL_CHARS));
        let cut = &all.judge("1968", &long, "").details[1];
        assert!(
            cut.contains(&format!("{}… matches", &long[..DETAIL_URL_CHARS])),
            "{cut}"
        );
        let passed = all.judge("1968", "http://h/about.html", "Founded in 1968.");
        assert_eq!(
            serde_json::to_value(passed.shown()).unwrap(),
            serde_json::json!({"passed": true, "failed": []})
        );
    }

    #[test]
    fn relative_start_urls_resolve_against_the_base() {
        let task = task(r#"{"url":"x"}"#);
        let base = url::Url::parse("http://127.0.0.1:9/site/").unwrap();
        assert_eq!(
            task.resolve_start_url(Some(&base)).unwrap(),
            "http://127.0.0.1:9/site/index.html"
        );
        assert!(task
            .resolve_start_url(None)
            .unwrap_err()
            .contains("relative start_url"));
    }

    #[test]
    fn bad_task_files_name_the_file_and_line() {
        let text = [
            r#"{"id":"a","category":"information","instruction":"x","start_url":"i.html","check":{"url":"ok"}}"#,
            r#"{"id":"a","category":"information","instruction":"x","start_url":"i.html","check":{"url":"ok"}}"#,
            r#"{"id":"b","category":"shopping","instruction":"x","start_url":"i.html","check":{"url":"ok"}}"#,
            r#"{"id":"c","category":"navigation","instruction":"x","start_url":"i.html","check":{}}"#,
            r#"{"id":"d","category":"navigation","instruction":"x","start_url":"i.html","check":{"url":"("}}"#,
            r#"not json"#,
            r#"{"id":"e","category":"navigation","instruction":"x","start_url":"i.html","check":{"url":"a"},"extra":1}"#,
        ]
        .join("\n");
        let err = TaskSet::parse(&text, "tasks.jsonl").unwrap_err();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 6, "{err}");
        assert!(lines[0].starts_with("tasks.jsonl:2: duplicate task id"));
        assert!(lines[1].starts_with("tasks.jsonl:3: unknown variant `shopping`"));
        assert!(lines[2].starts_with("tasks.jsonl:4: task c: check needs"));
        assert!(lines[3].starts_with("tasks.jsonl:5: task d: check.url regex"));
        assert!(lines[4].starts_with("tasks.jsonl:6: expected ident"));
        assert!(lines[5].starts_with("tasks.jsonl:7: unknown field `extra`"));
        assert!(TaskSet::parse("", "empty.jsonl")
            .unwrap_err()
            .contains("no tasks"));
    }

    #[test]
    fn the_bundled_demo_tasks_are_valid_and_cover_every_category() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/demo.jsonl");
        let set = TaskSet::load(&path).unwrap();
        assert_eq!(set.name, "demo");
        assert!(set.tasks.len() >= 15, "{} tasks", set.tasks.len());
        for category in [
            Category::Information,
            Category::Navigation,
            Category::Interaction,
        ] {
            let count = set.tasks.iter().filter(|t| t.category == category).count();
            assert!(count >= 5, "{category:?}: {count}");
        }
        let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/site");
        let base = url::Url::parse("http://127.0.0.1:1/").unwrap();
        for task in &set.tasks {
            let start = task.resolve_start_url(Some(&base)).unwrap();
            let page = url::Url::parse(&start)
                .unwrap()
                .path()
                .trim_start_matches('/')
                .to_string();
            assert!(
                site.join(&page).is_file(),
                "task {}: {page} is not in the demo site",
                task.id
            );
        }
    }
}
