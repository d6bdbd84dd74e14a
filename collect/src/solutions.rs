//! Reference solutions of a task set (`assets/tasks/demo-solutions.jsonl`): per task, the wire
//! actions a person would take, one JSON line each:
//! `{"task_id": "nav-bar-clamp", "actions": [{"op": "click", "x": 298, "y": 567}, ...]}`.
//! Tests replay them (every bundled task is doable), and `browserenv-tui tasks snapshot` runs
//! them to archive what a task's pages load.

use std::path::{Path, PathBuf};

use browserenv::models::BrowserAction;

#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    pub task_id: String,
    pub actions: Vec<BrowserAction>,
}

/// Where a task file's solutions are by convention: `NAME-solutions.jsonl` beside `NAME.jsonl`.
pub fn beside(task_file: &Path) -> PathBuf {
    let stem = task_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    task_file.with_file_name(format!("{stem}-solutions.jsonl"))
}

/// Read a solutions file; every bad line is reported with the file and line number.
pub fn load(path: &Path) -> Result<Vec<Solution>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read the solutions {}: {err}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Parse a solutions file's text; `name` is how the messages call it.
pub fn parse(text: &str, name: &str) -> Result<Vec<Solution>, String> {
    let mut solutions = Vec::new();
    let mut problems = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let at = format!("{name}:{}", index + 1);
        let value: serde_json::Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(err) => {
                problems.push(format!("{at}: {err}"));
                continue;
            }
        };
        let Some(task_id) = value["task_id"].as_str() else {
            problems.push(format!("{at}: no task_id"));
            continue;
        };
        let Some(actions) = value["actions"].as_array() else {
            problems.push(format!("{at}: no actions"));
            continue;
        };
        let mut parsed = Vec::new();
        for (n, action) in actions.iter().enumerate() {
            match BrowserAction::from_value(action) {
                Ok(action) => parsed.push(action),
                Err(errors) => problems.push(format!("{at}: action {}: {}", n + 1, errors[0])),
            }
        }
        solutions.push(Solution {
            task_id: task_id.to_string(),
            actions: parsed,
        });
    }
    if problems.is_empty() {
        Ok(solutions)
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solutions_are_read_and_bad_lines_named() {
        let text = "{\"task_id\": \"a\", \"actions\": [{\"op\": \"click\", \"x\": 1, \"y\": 2}, {\"op\": \"finish\", \"text\": \"\"}]}\n\n// a comment\n";
        let solutions = parse(text, "s.jsonl").unwrap();
        assert_eq!(solutions.len(), 1);
        assert_eq!(solutions[0].actions.len(), 2);
        let why = parse(
            "{\"task_id\": \"a\", \"actions\": [{\"op\": \"fly\"}]}\nnot json",
            "s.jsonl",
        )
        .unwrap_err();
        assert!(
            why.contains("s.jsonl:1: action 1") && why.contains("s.jsonl:2:"),
            "{why}"
        );
        assert_eq!(
            beside(Path::new("assets/tasks/demo.jsonl")),
            Path::new("assets/tasks/demo-solutions.jsonl")
        );
    }
}
