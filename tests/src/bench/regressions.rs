//! Every figure a run prints, compared with the one recorded last: `docs/benchmark.json`, the
//! machine-readable twin of `docs/benchmark.md`'s tables. A figure 1.3x worse than its recorded
//! value prints a `REGRESSION` line at the end of the run, so a slower reset is seen the day it
//! lands, not a round later. The run's own figures go to
//! `target/bench/latest.json`; `BENCH_RECORD=1` merges them into `docs/benchmark.json` (with the
//! machine, the commit and the date) once they are the ones to publish.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{json, Value};

/// How much worse than the recorded figure counts as a regression.
pub const REGRESSION_RATIO: f64 = 1.3;

/// Which way a figure gets better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Times, sizes, CPU per step.
    Lower,
    /// Steps per second.
    Higher,
}

impl Better {
    fn name(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
}

#[derive(Clone, Debug)]
struct Figure {
    value: f64,
    unit: &'static str,
    better: Better,
}

static FIGURES: Mutex<BTreeMap<String, Figure>> = Mutex::new(BTreeMap::new());

/// Note a figure of this run. A figure that could not be read (NaN, infinite) is kept out: it
/// printed as unknown and there is nothing to compare.
pub fn record(name: &str, value: f64, unit: &'static str, better: Better) {
    if !value.is_finite() {
        return;
    }
    if let Ok(mut figures) = FIGURES.lock() {
        figures.insert(
            name.to_string(),
            Figure {
                value,
                unit,
                better,
            },
        );
    }
}

/// A figure as a table cell: `unknown` when it could not be read.
pub fn cell(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "unknown".to_string()
    }
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn recorded_path() -> PathBuf {
    workspace().join("docs/benchmark.json")
}

/// How `new` compares with `old`: how many times worse (above 1) or better (below 1).
fn worse_by(old: f64, new: f64, better: Better) -> f64 {
    match better {
        Better::Lower => new / old,
        Better::Higher => old / new,
    }
}

/// The `REGRESSION` lines of `figures` against `recorded` (the `figures` object of
/// `docs/benchmark.json`).
fn regressions(figures: &BTreeMap<String, Figure>, recorded: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for (name, figure) in figures {
        let Some(old) = recorded[name]["value"].as_f64() else {
            continue;
        };
        // A figure too small to time well (under a millisecond) is compared from 1 ms up.
        let floor = if figure.unit == "ms" { 1.0 } else { 0.0 };
        let (old_cmp, new_cmp) = (old.max(floor), figure.value.max(floor));
        if old_cmp <= 0.0 || new_cmp <= 0.0 {
            continue;
        }
        let ratio = worse_by(old_cmp, new_cmp, figure.better);
        if ratio >= REGRESSION_RATIO {
            lines.push(format!(
                "REGRESSION: {name}: {} {unit} recorded, {} {unit} now ({ratio:.2}x worse; {} is better)",
                cell(old, 1),
                cell(figure.value, 1),
                figure.better.name(),
                unit = figure.unit,
            ));
        }
    }
    lines
}

fn as_json(figures: &BTreeMap<String, Figure>) -> Value {
    figures
        .iter()
        .map(|(name, figure)| {
            (
                name.clone(),
                json!({"value": figure.value, "unit": figure.unit, "better": figure.better.name()}),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(workspace())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// At the end of a run: the comparison with the recorded figures, this run's figures written to
/// `target/bench/latest.json` (and, with `BENCH_RECORD=1`, merged into the recorded ones).
/// Returns how many figures regressed.
pub fn finish(machine: &str) -> anyhow::Result<usize> {
    let figures = FIGURES.lock().map(|f| f.clone()).unwrap_or_default();
    let recorded: Value = std::fs::read_to_string(recorded_path())
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    println!();
    let lines = regressions(&figures, &recorded["figures"]);
    let compared = figures
        .keys()
        .filter(|name| recorded["figures"][name.as_str()].is_object())
        .count();
    println!(
        "Compared {compared} of this run's {} figures with docs/benchmark.json (recorded on {}, commit {}): {} regression(s) of {REGRESSION_RATIO}x or more.",
        figures.len(),
        recorded["date"].as_str().unwrap_or("never"),
        recorded["commit"].as_str().unwrap_or("none"),
        lines.len()
    );
    for line in &lines {
        println!("{line}");
    }
    let date = std::process::Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_default();
    let this_run = json!({
        "machine": machine,
        "commit": commit(),
        "date": date,
        "figures": as_json(&figures),
    });
    let latest = workspace().join("target/bench/latest.json");
    std::fs::create_dir_all(latest.parent().expect("a parent"))?;
    std::fs::write(&latest, serde_json::to_string_pretty(&this_run)?)?;
    if std::env::var("BENCH_RECORD").is_ok_and(|v| v == "1") {
        let mut merged = recorded["figures"].as_object().cloned().unwrap_or_default();
        for (name, figure) in this_run["figures"].as_object().into_iter().flatten() {
            merged.insert(name.clone(), figure.clone());
        }
        let mut published = this_run.clone();
        published["figures"] = merged.into();
        std::fs::write(
            recorded_path(),
            serde_json::to_string_pretty(&published)? + "\n",
        )?;
        println!("Recorded this run's figures in docs/benchmark.json (BENCH_RECORD=1).");
    }
    Ok(lines.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(entries: &[(&str, f64, Better)]) -> BTreeMap<String, Figure> {
        entries
            .iter()
            .map(|(name, value, better)| {
                (
                    name.to_string(),
                    Figure {
                        value: *value,
                        unit: "ms",
                        better: *better,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_figure_thirty_percent_worse_is_a_regression_either_way() {
        let recorded = json!({
            "reset": {"value": 100.0},
            "scroll": {"value": 50.0},
            "steps per second": {"value": 40.0},
            "throughput held": {"value": 40.0},
        });
        let now = figures(&[
            ("reset", 131.0, Better::Lower),
            ("scroll", 60.0, Better::Lower),
            ("steps per second", 30.0, Better::Higher),
            ("throughput held", 35.0, Better::Higher),
            ("new figure", 1000.0, Better::Lower),
        ]);
        let lines = regressions(&now, &recorded);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("REGRESSION: reset: 100.0 ms recorded, 131.0 ms now"));
        assert!(lines[1].starts_with("REGRESSION: steps per second"));
    }

    #[test]
    fn times_under_a_millisecond_do_not_regress_by_jitter() {
        let recorded = json!({"balancer round trip": {"value": 0.08}});
        let now = figures(&[("balancer round trip", 0.5, Better::Lower)]);
        assert!(regressions(&now, &recorded).is_empty());
    }

    #[test]
    fn an_unread_figure_prints_unknown_and_is_not_kept() {
        assert_eq!(cell(f64::NAN, 1), "unknown");
        assert_eq!(cell(-0.0 / 0.0, 0), "unknown");
        assert_eq!(cell(22.94, 1), "22.9");
    }
}
