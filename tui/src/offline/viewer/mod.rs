//! `browserenv-tui view DIR`: browse and review a recording without a server. A step list on the
//! left; on the right the frame before the step (with the action drawn on it: a cross at a click,
//! an arrow for a scroll) and the frame after. Pictures are encoded when the selection changes, not
//! per frame.
//!
//! Reviewing (`crate::review`): keys mark the selected step (lowercase) or set its episode's fields
//! (uppercase); each change is appended to `DIR/review.jsonl` before it shows, so what is on the
//! screen is what is on the disk.
//!
//! This module holds the viewer's state and keys; `panels` draws it, `overlay` draws an action on
//! its frame.

use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use browserenv_collect::trajectory::{read, Outcome, Recording, StepRecord};

use crate::graphics::picture::View;
use crate::graphics::{Graphics, GraphicsChoice};
use crate::review::{outcome_label, Change, Mark, Quality, Review, ReviewLog, OUTCOMES};
use crate::screen::painter::Slot;
use crate::screen::terminal::{enter, probe_graphics};

mod overlay;
mod panels;

pub use overlay::{mark, mark_action};
pub use panels::draw;

pub struct Viewer {
    pub recording: Recording,
    pub review: Review,
    pub selected: usize,
    /// The note being edited (`n`): Enter saves it, Esc cancels.
    pub editing: Option<String>,
    /// The last change's confirmation, or why it could not be saved.
    notice: Option<(String, bool)>,
    log: ReviewLog,
    dir: std::path::PathBuf,
    graphics: Graphics,
    /// The frame before the step (action drawn on it) and the frame after.
    slots: [Slot; 2],
    /// The step whose frames the slots hold.
    loaded: Option<usize>,
    /// Where each slot's picture goes in the current layout.
    views: [Option<View>; 2],
    /// The terminal size of the last frame: a new one means the screen was cleared.
    size: Option<ratatui::layout::Size>,
}

impl Viewer {
    /// Open a recording and its review; `reviewer` names the changes made here.
    pub fn open(
        dir: &Path,
        graphics: Graphics,
        reviewer: Option<String>,
    ) -> anyhow::Result<Viewer> {
        let recording = read(dir)?;
        let review = crate::review::read(dir)?;
        Ok(Viewer {
            recording,
            review,
            selected: 0,
            editing: None,
            notice: None,
            log: ReviewLog::new(dir, reviewer),
            dir: dir.to_path_buf(),
            graphics,
            slots: [Slot::new(11), Slot::new(13)],
            loaded: None,
            views: [None, None],
            size: None,
        })
    }

    fn step(&self) -> Option<&StepRecord> {
        self.recording.steps.get(self.selected)
    }

    pub fn select(&mut self, delta: i64) {
        let last = self.recording.steps.len().saturating_sub(1) as i64;
        self.selected = (self.selected as i64 + delta).clamp(0, last.max(0)) as usize;
    }

    /// Select the first step of the next (`forward`) or the previous episode in the list.
    fn select_episode(&mut self, forward: bool) {
        let steps = &self.recording.steps;
        if steps.is_empty() {
            return;
        }
        let starts = |i: usize| i == 0 || steps[i - 1].episode_id != steps[i].episode_id;
        let target = if forward {
            (self.selected + 1..steps.len()).find(|&i| starts(i))
        } else {
            // The start of the run before this one; in the first run, its own start.
            let own = (0..=self.selected).rev().find(|&i| starts(i)).unwrap_or(0);
            (0..own).rev().find(|&i| starts(i)).or(Some(own))
        };
        if let Some(target) = target {
            self.selected = target;
        }
    }

    /// What a key does. Returns false when the viewer should end.
    pub fn on_key(&mut self, key: KeyEvent) -> bool {
        if key.kind == KeyEventKind::Release {
            return true;
        }
        if let Some(text) = &mut self.editing {
            match key.code {
                KeyCode::Enter => {
                    let note = std::mem::take(text).trim().to_string();
                    self.editing = None;
                    self.change_step(Change::Note(note));
                }
                KeyCode::Esc => {
                    self.editing = None;
                    self.notice = Some(("note not changed".into(), false));
                }
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
                _ => {}
            }
            return true;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return false,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return false,
            KeyCode::Down | KeyCode::Char('j') => self.select(1),
            KeyCode::Up | KeyCode::Char('k') => self.select(-1),
            KeyCode::PageDown => self.select(10),
            KeyCode::PageUp => self.select(-10),
            KeyCode::Home => self.select(i64::MIN / 2),
            KeyCode::End => self.select(i64::MAX / 2),
            KeyCode::Char(']') => self.select_episode(true),
            KeyCode::Char('[') => self.select_episode(false),
            // A reviewer goes through steps in order: a mark moves on to the next one.
            KeyCode::Char('g') => self.mark(Some(Mark::Good)),
            KeyCode::Char('w') => self.mark(Some(Mark::Wrong)),
            KeyCode::Char('r') => self.mark(Some(Mark::Redundant)),
            KeyCode::Char('c') => self.mark(None),
            KeyCode::Char('n') => {
                if let Some(step) = self.step() {
                    self.editing = Some(self.review.note(step).unwrap_or_default());
                }
            }
            KeyCode::Char('G') => self.quality(Quality::Good),
            KeyCode::Char('B') => self.quality(Quality::Bad),
            KeyCode::Char('U') => self.quality(Quality::Unsure),
            KeyCode::Char('O') => {
                let next = next_outcome(self.episode_outcome());
                self.change_episode(Change::Outcome(Some(next)));
            }
            KeyCode::Char('C') => {
                self.change_episode(Change::Quality(None));
                self.change_episode(Change::Outcome(None));
            }
            _ => {}
        }
        true
    }

    fn quality(&mut self, quality: Quality) {
        self.change_episode(Change::Quality(Some(quality)));
    }

    fn mark(&mut self, mark: Option<Mark>) {
        if self.change_step(Change::Mark(mark)) && mark.is_some() {
            self.select(1);
        }
    }

    /// The recorded outcome of the selected step's episode.
    fn recorded_outcome(&self, episode_id: &str) -> Option<Outcome> {
        self.recording
            .episodes
            .iter()
            .find(|e| e.episode_id == episode_id)
            .map(|e| e.outcome)
    }

    fn episode_outcome(&self) -> Option<Outcome> {
        let id = &self.step()?.episode_id;
        self.review.outcome(id, self.recorded_outcome(id))
    }

    fn change_step(&mut self, change: Change) -> bool {
        let Some(step) = self.step() else {
            return false;
        };
        let (id, number) = (step.episode_id.clone(), step.step);
        self.save(&id, Some(number), change)
    }

    fn change_episode(&mut self, change: Change) -> bool {
        let Some(step) = self.step() else {
            return false;
        };
        let id = step.episode_id.clone();
        self.save(&id, None, change)
    }

    /// Append the change to the review file; only once it is there does it show.
    fn save(&mut self, episode_id: &str, step: Option<u64>, change: Change) -> bool {
        match self.log.record(episode_id, step, change) {
            Ok(event) => {
                self.review.apply(&event);
                let short: String = episode_id.chars().take(12).collect();
                let what = match (&event.change, step) {
                    (Change::Mark(mark), Some(n)) => format!(
                        "step #{n} of {short}: {}",
                        mark.map_or("mark cleared", Mark::label)
                    ),
                    (Change::Note(note), Some(n)) if note.is_empty() => {
                        format!("step #{n} of {short}: note removed")
                    }
                    (Change::Note(_), Some(n)) => format!("step #{n} of {short}: note saved"),
                    (Change::Quality(quality), _) => format!(
                        "episode {short}: quality {}",
                        quality.map_or("cleared", Quality::label)
                    ),
                    (Change::Outcome(outcome), _) => format!(
                        "episode {short}: outcome {}",
                        outcome.map_or("as recorded".to_string(), outcome_label)
                    ),
                    _ => String::new(),
                };
                self.notice = Some((format!("{what} (saved)"), false));
                true
            }
            Err(err) => {
                self.notice = Some((
                    format!(
                        "not saved: {}: {err}; the review is unchanged",
                        self.log.path().display()
                    ),
                    true,
                ));
                false
            }
        }
    }
}

/// The viewer's keys, on its bottom line.
pub const HELP: &str = "↑↓ step [ ] episode  g/w/r good/wrong/redundant c clear n note  G/B/U quality O outcome C clear  q quit";

/// The outcome after `current` in the order `O` cycles through.
fn next_outcome(current: Option<Outcome>) -> Outcome {
    let at = current.and_then(|c| OUTCOMES.iter().position(|o| *o == c));
    at.map_or(OUTCOMES[0], |i| OUTCOMES[(i + 1) % OUTCOMES.len()])
}

/// Run the viewer until q or Esc.
pub fn run_viewer(
    dir: &Path,
    choice: GraphicsChoice,
    reviewer: Option<String>,
) -> anyhow::Result<()> {
    use crossterm::event::{self, Event};
    let mut guard = enter()?;
    let graphics = probe_graphics(choice);
    let mut viewer = Viewer::open(dir, graphics, reviewer)?;
    let mut out = guard.output.clone();
    loop {
        draw(&mut guard.terminal, &mut viewer, Some(&mut out))?;
        match event::read()? {
            Event::Key(key) if !viewer.on_key(key) => return Ok(()),
            Event::Paste(text) => {
                if let Some(note) = &mut viewer.editing {
                    note.push_str(&text.replace(['\r', '\n'], " "));
                }
            }
            _ => {}
        }
    }
}
