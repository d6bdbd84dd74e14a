//! `browserenv-tui view DIR`: browse and review a recording without a server. A step list on the
//! left; on the right the frame before the step (with the action drawn on it: a cross at a click,
//! an arrow for a scroll) and the frame after. Pictures are encoded when the selection changes, not
//! per frame.
//!
//! Reviewing (`crate::review`): keys mark the selected step (lowercase) or set its episode's fields
//! (uppercase); each change is appended to `DIR/review.jsonl` before it shows, so what is on the
//! screen is what is on the disk.

use std::path::Path;

use image::{DynamicImage, Rgb, RgbImage};
use ratatui::backend::Backend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use ratatui::{Frame, Terminal};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use browserenv::models::{Action, BrowserAction, Point};
use browserenv_collect::trajectory::{read, read_frame, Outcome, Recording, StepRecord};

use crate::graphics::picture::{Region, View, PAGE_HEIGHT, PAGE_WIDTH};
use crate::graphics::{Graphics, GraphicsChoice};
use crate::review::{outcome_label, Change, Mark, Quality, Review, ReviewLog, OUTCOMES};
use crate::screen::painter::Slot;
use crate::screen::terminal::{enter, probe_graphics};

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

/// Draw the step's action onto the frame it was taken on, in page pixels.
pub fn mark_action(frame: &DynamicImage, step: &StepRecord) -> DynamicImage {
    mark(frame, &step.action)
}

/// Draw a wire action onto a frame: a cross where the pointer acted (a click, a hover, a button,
/// a `select`), a drag's path from a ring at its start to a cross at its end, an arrow for a
/// scroll. Keys, typing and navigation leave the frame as it was.
pub fn mark(frame: &DynamicImage, action: &serde_json::Value) -> DynamicImage {
    let mut image: RgbImage = frame.to_rgb8();
    let red = Rgb([230, 20, 20]);
    let mut dot = |x: i64, y: i64| {
        if (0..i64::from(image.width())).contains(&x) && (0..i64::from(image.height())).contains(&y)
        {
            image.put_pixel(x as u32, y as u32, red);
        }
    };
    let Ok(action) = BrowserAction::from_value(action) else {
        return DynamicImage::ImageRgb8(image);
    };
    match &action.action {
        Action::Click { at, .. }
        | Action::MouseDown { at, .. }
        | Action::MouseUp { at, .. }
        | Action::Select { at, .. } => cross(&mut dot, *at, 30),
        Action::Move { at } => cross(&mut dot, *at, 15),
        Action::Drag { path, .. } => {
            for pair in path.windows(2) {
                line(&mut dot, pair[0], pair[1]);
            }
            if let Some(first) = path.first() {
                for d in 0..360 {
                    let angle = f64::from(d).to_radians();
                    for r in 10..=13 {
                        dot(
                            first.x + (f64::from(r) * angle.cos()) as i64,
                            first.y + (f64::from(r) * angle.sin()) as i64,
                        );
                    }
                }
            }
            if let Some(last) = path.last() {
                cross(&mut dot, *last, 20);
            }
        }
        Action::Scroll { dy, .. } => {
            // An arrow at the right edge, pointing the way the page moved.
            let down = *dy >= 0;
            let (x, top, bottom) = (PAGE_WIDTH - 30, PAGE_HEIGHT / 2 - 60, PAGE_HEIGHT / 2 + 60);
            for y in top..bottom {
                for w in -2..=2 {
                    dot(x + w, y);
                }
            }
            let tip = if down { bottom } else { top };
            for d in 0..20 {
                let y = if down { tip - d } else { tip + d };
                for w in -1..=1 {
                    dot(x - d + w, y);
                    dot(x + d + w, y);
                }
            }
        }
        Action::Type { .. }
        | Action::Key { .. }
        | Action::Press { .. }
        | Action::Back
        | Action::Forward
        | Action::Goto { .. }
        | Action::Wait
        | Action::Finish { .. } => {}
    }
    DynamicImage::ImageRgb8(image)
}

/// A cross at `at`, big enough to survive the scaling down to terminal cells. The point is
/// whatever the recording (or the watched server) says: the sums saturate, and `dot` leaves out
/// what is off the frame.
fn cross(dot: &mut dyn FnMut(i64, i64), at: Point, arm: i64) {
    for d in -arm..=arm {
        for w in -3..=3 {
            dot(at.x.saturating_add(d), at.y.saturating_add(w));
            dot(at.x.saturating_add(w), at.y.saturating_add(d));
        }
    }
}

/// A thick line from `a` to `b`.
fn line(dot: &mut dyn FnMut(i64, i64), a: Point, b: Point) {
    let steps = (b.x - a.x).abs().max((b.y - a.y).abs()).max(1);
    for i in 0..=steps {
        let x = a.x + (b.x - a.x) * i / steps;
        let y = a.y + (b.y - a.y) * i / steps;
        for w in -2..=2 {
            dot(x + w, y);
            dot(x, y + w);
        }
    }
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

    /// Load the selected step's frames into the slots, once per selection, and encode them for
    /// the panels (again only when a panel's size changed).
    fn prepare_pictures(&mut self, panels: [Rect; 2]) {
        if self.loaded != Some(self.selected) {
            let step = self.step().cloned();
            let frame = |name: &str, marked: bool| -> Option<std::sync::Arc<DynamicImage>> {
                let step = step.as_ref()?;
                if name.is_empty() {
                    return None;
                }
                // Under the trajectory's rule: a recording is untrusted input, and a refused
                // frame is shown as none (the reader's problem says why).
                let bytes = read_frame(&self.dir, name).ok()?;
                let frame = image::load_from_memory(&bytes).ok()?;
                Some(std::sync::Arc::new(if marked {
                    mark_action(&frame, step)
                } else {
                    frame
                }))
            };
            let before = step.as_ref().and_then(|s| frame(&s.file_name, true));
            let after = step.as_ref().and_then(|s| frame(&s.next_file_name, false));
            self.slots[0].set_image(before);
            self.slots[1].set_image(after);
            self.loaded = Some(self.selected);
        }
        for ((slot, panel), current) in self.slots.iter_mut().zip(panels).zip(&mut self.views) {
            let view = View::fit(panel, &self.graphics, Region::PAGE);
            *current = view;
            let wanted = slot.wanted(view, false, false);
            slot.encode_now(wanted, &self.graphics);
        }
    }

    pub fn draw(&mut self, frame: &mut Frame) {
        let [body, notice_area, bottom] = Layout::vertical([
            Constraint::Min(0),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let [list_area, right] =
            Layout::horizontal([Constraint::Length(40), Constraint::Min(0)]).areas(body);
        let [header, pictures] =
            Layout::vertical([Constraint::Length(5), Constraint::Min(0)]).areas(right);
        // Side by side when the pictures get bigger that way (wide terminals), else stacked.
        let halves = [Constraint::Percentage(50), Constraint::Percentage(50)];
        let [before_area, after_area] = if pictures.width >= pictures.height.saturating_mul(5) {
            Layout::horizontal(halves).areas(pictures)
        } else {
            Layout::vertical(halves).areas(pictures)
        };

        let mut state = ListState::default().with_selected(Some(self.selected));
        frame.render_stateful_widget(self.step_list(), list_area, &mut state);
        frame.render_widget(Paragraph::new(self.step_details()), header);
        self.draw_pictures(frame, before_area, after_area);

        frame.render_widget(Paragraph::new(self.notice_line()), notice_area);
        let help = if self.editing.is_some() {
            "Enter save the note  Esc cancel"
        } else {
            HELP
        };
        frame.render_widget(Paragraph::new(Line::from(help)), bottom);
    }

    /// The steps, one a line, under a title that counts them, their episodes and the marked.
    fn step_list(&self) -> List<'static> {
        let items: Vec<ListItem> = self
            .recording
            .steps
            .iter()
            .map(|s| self.step_item(s))
            .collect();
        let marked = self
            .recording
            .steps
            .iter()
            .filter(|s| self.review.mark(s).is_some())
            .count();
        let title = format!(
            " {} steps, {} episodes, {marked} marked ",
            self.recording.steps.len(),
            self.recording.episodes.len()
        );
        List::new(items)
            .block(Block::default().borders(Borders::ALL).title(title))
            .highlight_style(
                Style::default()
                    .bg(Color::Blue)
                    .add_modifier(Modifier::BOLD),
            )
    }

    fn step_item(&self, s: &StepRecord) -> ListItem<'static> {
        let id: String = s.episode_id.chars().take(8).collect();
        let what = crate::command::describe_recorded(&s.action);
        // Two columns before the id: the mark, and ✎ for a note (recorded or edited).
        let (symbol, colour) = match self.review.mark(s) {
            Some(Mark::Good) => ("✓", Color::Green),
            Some(Mark::Wrong) => ("✗", Color::Red),
            Some(Mark::Redundant) => ("≡", Color::Yellow),
            None => (" ", Color::Reset),
        };
        let noted = if self.review.note(s).is_some() {
            "✎ "
        } else {
            "  "
        };
        let id_style = match self.review.quality(&s.episode_id) {
            Some(Quality::Good) => Style::default().fg(Color::Green),
            Some(Quality::Bad) => Style::default().fg(Color::Red),
            Some(Quality::Unsure) => Style::default().fg(Color::Yellow),
            None => Style::default(),
        };
        let mut spans = vec![
            Span::styled(
                symbol,
                Style::default().fg(colour).add_modifier(Modifier::BOLD),
            ),
            Span::raw(noted),
            Span::styled(id, id_style),
            Span::raw(format!(" #{:<2} {what}", s.step)),
        ];
        if !s.error.is_empty() {
            spans.push(Span::styled(
                format!(" {}", s.error),
                Style::default().fg(Color::Red),
            ));
        }
        if s.done {
            spans.push(Span::styled(" done", Style::default().fg(Color::Yellow)));
        }
        ListItem::new(Line::from(spans))
    }

    /// The header: the selected step's pages, action, element and reviews.
    fn step_details(&self) -> Vec<Line<'static>> {
        let Some(s) = self.step() else {
            return vec![Line::from("This recording has no steps.")];
        };
        vec![
            Line::from(format!("{} → {}", s.url, s.next_url)),
            Line::from(format!(
                "action {}  error {:?}  reward {}  {} ms",
                s.action,
                s.error,
                s.reward.map_or("-".to_string(), |r| r.to_string()),
                s.latency_ms.round(),
            )),
            Line::from(
                s.element
                    .as_ref()
                    .map(|e| {
                        format!(
                            "element {} {:?} {:?}",
                            e["tag"].as_str().unwrap_or(""),
                            e["role"].as_str().unwrap_or(""),
                            e["name"].as_str().unwrap_or("")
                        )
                    })
                    .unwrap_or_default(),
            ),
            self.step_review_line(s),
            self.episode_review_line(&s.episode_id),
        ]
    }

    /// The before and after panels, with their pictures' cells (pixel pictures are written
    /// after the frame, by `draw`).
    fn draw_pictures(&mut self, frame: &mut Frame, before_area: Rect, after_area: Rect) {
        let panel = |area: Rect, title: &str| {
            let block = Block::default()
                .borders(Borders::ALL)
                .title(title.to_string());
            (block.inner(area), block)
        };
        let (before_inner, before_block) = panel(before_area, " before (action drawn) ");
        let (after_inner, after_block) = panel(after_area, " after ");
        frame.render_widget(before_block, before_area);
        frame.render_widget(after_block, after_area);
        self.prepare_pictures([before_inner, after_inner]);
        for (slot, area) in self.slots.iter().zip([before_inner, after_inner]) {
            if !slot.has_image() {
                frame.render_widget(Paragraph::new("(no screenshot)"), area);
            } else if let Some((view, cells)) = slot.cells() {
                crate::screen::view::draw_cells(frame, view, cells);
            }
        }
    }

    /// The note editor, else the last change's notice, else the first problem found.
    fn notice_line(&self) -> Line<'static> {
        if let Some(text) = &self.editing {
            return Line::from(vec![
                Span::styled("note> ", Style::default().add_modifier(Modifier::BOLD)),
                Span::raw(text.clone()),
                Span::raw("█"),
            ]);
        }
        match &self.notice {
            Some((text, true)) => {
                return Line::from(Span::styled(
                    text.clone(),
                    Style::default().fg(Color::White).bg(Color::Red),
                ))
            }
            Some((text, false)) => return Line::from(text.clone()),
            None => {}
        }
        let problems: Vec<_> = self
            .recording
            .problems
            .iter()
            .chain(&self.review.problems)
            .collect();
        match problems.first() {
            Some(problem) => Line::from(Span::styled(
                format!("{} problem(s): {problem}", problems.len()),
                Style::default().fg(Color::Red),
            )),
            None => Line::from(""),
        }
    }

    fn step_review_line(&self, step: &StepRecord) -> Line<'static> {
        let mark = match self.review.mark(step) {
            Some(mark) => Span::styled(
                format!("mark {}", mark.label()),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            None => Span::raw("unmarked"),
        };
        let note = match (self.review.note(step), self.review.note_edited(step)) {
            (Some(note), true) => format!("  note (edited): {note}"),
            (Some(note), false) => format!("  note: {note}"),
            (None, true) => "  note removed".to_string(),
            (None, false) => String::new(),
        };
        Line::from(vec![Span::raw("step: "), mark, Span::raw(note)])
    }

    /// Quality first: it decides what an export keeps, and a long line is cut at its end.
    fn episode_review_line(&self, episode_id: &str) -> Line<'static> {
        let recorded = self.recorded_outcome(episode_id);
        let episode = self.review.episode(episode_id);
        let quality = match episode.quality {
            Some(quality) => format!("quality {}", quality.label()),
            None => "quality not reviewed".to_string(),
        };
        let outcome = match (recorded, episode.outcome) {
            (recorded, Some(reviewed)) if Some(reviewed) != recorded => format!(
                "outcome {} (recorded {})",
                outcome_label(reviewed),
                recorded.map_or("none".to_string(), outcome_label)
            ),
            (Some(recorded), _) => format!("outcome {}", outcome_label(recorded)),
            (None, _) => "outcome none (not ended)".to_string(),
        };
        let by = episode
            .reviewer
            .filter(|_| episode.quality.is_some())
            .map(|r| format!("  by {r}"))
            .unwrap_or_default();
        // A campaign's episode says whose it is: its reviewer must not be its demonstrator.
        let whose = self
            .recording
            .episodes
            .iter()
            .find(|e| e.episode_id == episode_id)
            .and_then(|e| e.person.as_deref())
            .map(|person| format!(" (demonstrated by {person})"))
            .unwrap_or_default();
        Line::from(format!(
            "episode {episode_id}{whose}: {quality}  {outcome}{by}"
        ))
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

/// Draw the viewer; with `out` (a real terminal), pixel pictures are written after the cells.
pub fn draw<B: Backend>(
    terminal: &mut Terminal<B>,
    viewer: &mut Viewer,
    out: Option<&mut dyn std::io::Write>,
) -> anyhow::Result<()> {
    let pixels = !viewer.graphics.is_text();
    let size = terminal
        .size()
        .map_err(|err| anyhow::anyhow!("terminal size: {err:?}"))?;
    if viewer.size.is_some_and(|s| s != size) {
        // ratatui clears the screen on a resize: the pictures must be drawn again.
        viewer.slots.iter_mut().for_each(Slot::forget_screen);
    }
    viewer.size = Some(size);
    let views = viewer.views;
    let stale = viewer
        .slots
        .iter()
        .zip(views)
        .any(|(slot, view)| slot.needs_clear(true, view));
    if pixels && stale {
        terminal
            .clear()
            .map_err(|err| anyhow::anyhow!("clear: {err:?}"))?;
        viewer.slots.iter_mut().for_each(Slot::forget_screen);
    }
    terminal
        .draw(|frame| viewer.draw(frame))
        .map_err(|err| anyhow::anyhow!("draw: {err:?}"))?;
    if let (Some(out), true) = (out, pixels) {
        let views = viewer.views;
        for (slot, view) in viewer.slots.iter_mut().zip(views) {
            slot.draw_pixels(out, true, view, viewer.graphics.passthrough)?;
        }
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red_pixels(image: &DynamicImage) -> usize {
        image
            .to_rgb8()
            .pixels()
            .filter(|p| p.0 == [230, 20, 20])
            .count()
    }

    #[test]
    fn a_click_anywhere_is_drawn_only_on_the_frame() {
        let frame = DynamicImage::ImageRgb8(RgbImage::new(100, 80));
        let click = |x: i64, y: i64| serde_json::json!({"op": "click", "x": x, "y": y});
        let (max, min) = (i64::MAX, i64::MIN);
        for (x, y) in [
            (max, max),
            (min, min),
            (max, min),
            (min, max),
            (max, 10),
            (10, min),
        ] {
            assert_eq!(red_pixels(&mark(&frame, &click(x, y))), 0, "{x},{y}");
        }
        // At a corner, the part of the cross on the frame.
        assert_eq!(red_pixels(&mark(&frame, &click(0, 0))), 2 * 31 * 4 - 16);
        assert_eq!(red_pixels(&mark(&frame, &click(99, 79))), 2 * 31 * 4 - 16);
    }
}
