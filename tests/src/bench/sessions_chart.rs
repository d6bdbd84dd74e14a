//! The bench's picture, `docs/images/bench.svg`: the scroll step with 1 and 8 sessions stepping
//! at once (`concurrent`), resets back to back (`resets`, one session: resets are not measured
//! by session count) and Chromium's memory with 1, 4 and 8 sessions open (`memory`).

use std::path::PathBuf;

use crate::chart::{Bar, BarPanel, Chart, Line, LinePanel, Panel};

/// The scroll step's times with `sessions` stepping at once.
pub struct StepFigure {
    pub isolation: &'static str,
    pub sessions: usize,
    pub median: f64,
    pub p95: f64,
}

/// Back-to-back resets of one session in one way of isolating episodes.
pub struct ResetFigure {
    pub mode: &'static str,
    pub median: f64,
    pub p95: f64,
}

/// The PSS of every Chromium process with `sessions` open.
pub struct MemoryFigure {
    pub mode: &'static str,
    pub sessions: usize,
    pub mib: f64,
}

/// What the parts that feed the chart measured so far.
#[derive(Default)]
pub struct Figures {
    pub steps: Vec<StepFigure>,
    pub resets: Vec<ResetFigure>,
    pub memory: Vec<MemoryFigure>,
    written: bool,
}

impl Figures {
    /// Writes the chart once every part that feeds it has run, and only then: a run of other
    /// parts leaves the file as it was.
    pub fn write_when_complete(&mut self, machine: &str, rounds: usize) -> anyhow::Result<()> {
        if self.written || self.steps.is_empty() || self.resets.is_empty() || self.memory.is_empty()
        {
            return Ok(());
        }
        let path = path();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, crate::chart::render(&chart(self, machine, rounds)))?;
        eprintln!("The chart: {}", path.display());
        self.written = true;
        Ok(())
    }
}

/// `docs/images/bench.svg` in the repository.
fn path() -> PathBuf {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    tests
        .parent()
        .unwrap_or(tests)
        .join("docs/images/bench.svg")
}

/// Process isolation (a Chromium per session) in blue, a shared Chromium in vermillion.
fn color(mode: &str) -> &'static str {
    if mode.starts_with("shared") || mode.starts_with("context") {
        "#d55e00"
    } else {
        "#0072b2"
    }
}

pub fn chart(figures: &Figures, machine: &str, rounds: usize) -> Chart {
    Chart {
        title: "browserenv-bench: steps, resets and memory by sessions".into(),
        subtitle: format!("{machine}; BENCH_ROUNDS={rounds}"),
        panels: vec![
            steps(&figures.steps),
            resets(&figures.resets),
            memory(&figures.memory),
        ],
    }
}

/// Median and p95 by sessions stepping at once, a line each per isolation mode.
fn steps(figures: &[StepFigure]) -> Panel {
    let mut lines = Vec::new();
    for isolation in distinct(figures.iter().map(|f| f.isolation)) {
        let of_mode = || figures.iter().filter(move |f| f.isolation == isolation);
        for (statistic, dashed) in [("median", false), ("p95", true)] {
            lines.push(Line {
                label: format!("{isolation} isolation, {statistic}"),
                color: color(isolation),
                dashed,
                points: of_mode()
                    .map(|f| {
                        let ms = if dashed { f.p95 } else { f.median };
                        (f.sessions as f64, ms)
                    })
                    .collect(),
            });
        }
    }
    let open = figures.iter().map(|f| f.sessions).max().unwrap_or(0);
    Panel::Lines(LinePanel {
        title: "Scroll step".into(),
        note: format!("{open} sessions open; 1 of them alone, or all stepping at once"),
        x_label: "sessions stepping at once".into(),
        y_label: "round trip, ms".into(),
        lines,
    })
}

/// A bar per way of isolating episodes: the median, with the p95 as a whisker.
fn resets(figures: &[ResetFigure]) -> Panel {
    Panel::Bars(BarPanel {
        title: "Reset, back to back".into(),
        note: "1 session (not measured by session count); bar median, whisker p95".into(),
        x_label: "reset round trip, ms".into(),
        bars: figures
            .iter()
            .map(|f| Bar {
                label: format!("{}: {:.0} ms, p95 {:.0}", f.mode, f.median, f.p95),
                value: f.median,
                whisker: Some(f.p95),
                color: color(f.mode),
            })
            .collect(),
    })
}

/// Chromium's PSS by sessions open, a line per mode; the legend says what each session adds.
fn memory(figures: &[MemoryFigure]) -> Panel {
    let lines = distinct(figures.iter().map(|f| f.mode))
        .into_iter()
        .map(|mode| {
            let points: Vec<(f64, f64)> = figures
                .iter()
                .filter(|f| f.mode == mode)
                .map(|f| (f.sessions as f64, f.mib))
                .collect();
            // As the table's "MiB per additional session": from the first count to the last.
            let per_session = match (points.first(), points.last()) {
                (Some(first), Some(last)) if last.0 > first.0 => {
                    format!(
                        ": +{:.0} MiB per session",
                        (last.1 - first.1) / (last.0 - first.0)
                    )
                }
                _ => String::new(),
            };
            Line {
                label: format!("{mode}{per_session}"),
                color: color(mode),
                dashed: mode.contains("NO_WARM_SPARE"),
                points,
            }
        })
        .collect();
    Panel::Lines(LinePanel {
        title: "Chromium memory".into(),
        note: "PSS of every Chromium process, 3 s after the last reset".into(),
        x_label: "sessions open".into(),
        y_label: "Chromium PSS, MiB".into(),
        lines,
    })
}

/// Each value once, in the order first seen.
fn distinct(values: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
    let mut seen = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::tests::assert_well_formed;

    /// The figures of the full run in docs/benchmark.md.
    fn measured() -> Figures {
        let step = |isolation, sessions, median, p95| StepFigure {
            isolation,
            sessions,
            median,
            p95,
        };
        let reset = |mode, median, p95| ResetFigure { mode, median, p95 };
        let mut memory = Vec::new();
        for (mode, mibs) in [
            ("process", [312.0, 587.0, 948.0]),
            ("process, BROWSER_NO_WARM_SPARE", [215.0, 458.0, 775.0]),
            ("context", [225.0, 279.0, 351.0]),
            ("context, BROWSER_NO_WARM_SPARE", [214.0, 267.0, 340.0]),
        ] {
            for (sessions, mib) in [1, 4, 8].into_iter().zip(mibs) {
                memory.push(MemoryFigure {
                    mode,
                    sessions,
                    mib,
                });
            }
        }
        Figures {
            steps: vec![
                step("process", 1, 50.0, 56.0),
                step("process", 8, 113.0, 160.0),
                step("context", 1, 50.0, 55.0),
                step("context", 8, 104.0, 139.0),
            ],
            resets: vec![
                reset("new context, no spare context", 166.0, 189.0),
                reset("new Chromium per episode", 245.0, 375.0),
                reset("new context (process, default)", 127.0, 154.0),
                reset("shared Chromium (context)", 122.0, 157.0),
            ],
            memory,
            written: false,
        }
    }

    #[test]
    fn the_chart_shows_every_figure() {
        let svg = crate::chart::render(&chart(&measured(), "2 cores, a CPU; Chromium 1", 30));
        assert_well_formed(&svg);
        assert!(svg.contains("2 cores, a CPU; Chromium 1; BENCH_ROUNDS=30"));
        // Two lines a mode on the steps panel, one a mode on the memory panel.
        assert_eq!(svg.matches("<polyline").count(), 4 + 4);
        // Points: 2 counts x 4 lines, 3 counts x 4 lines, and one in each legend entry.
        assert_eq!(svg.matches("<circle").count(), 8 + 12 + 8);
        assert!(svg.contains("process: +91 MiB per session"));
        assert!(svg.contains("context, BROWSER_NO_WARM_SPARE: +18 MiB per session"));
        assert!(svg.contains("shared Chromium (context): 122 ms, p95 157"));
        assert!(svg.contains("8 sessions open; 1 of them alone, or all stepping at once"));
    }

    #[test]
    fn the_chart_waits_for_every_part() {
        let mut figures = measured();
        figures.resets.clear();
        // Nothing to write yet: the file is not touched.
        figures.write_when_complete("machine", 30).unwrap();
        assert!(!figures.written);
    }
}
