//! `browserenv-tui view DIR`: browse a recording without a server. A step list on the left; on
//! the right the frame before the step (with the action drawn on it: a cross at a click, an arrow
//! for a scroll) and the frame after. Pictures are encoded when the selection changes, not per frame.

use std::path::Path;

use image::{DynamicImage, Rgb, RgbImage};
use ratatui::backend::Backend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use ratatui::{Frame, Terminal};

use browserenv::trajectory::{read, read_frame, Recording, StepRecord};

use crate::graphics::{Graphics, GraphicsChoice};
use crate::painter::Slot;
use crate::picture::{Region, View, PAGE_HEIGHT, PAGE_WIDTH};
use crate::terminal::{enter, probe_graphics};

pub struct Viewer {
    pub recording: Recording,
    pub selected: usize,
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

/// Draw a wire action onto a frame: a cross at a click, an arrow for a scroll.
pub fn mark(frame: &DynamicImage, action: &serde_json::Value) -> DynamicImage {
    let mut image: RgbImage = frame.to_rgb8();
    let red = Rgb([230, 20, 20]);
    let mut dot = |x: i64, y: i64| {
        if (0..i64::from(image.width())).contains(&x) && (0..i64::from(image.height())).contains(&y)
        {
            image.put_pixel(x as u32, y as u32, red);
        }
    };
    match action["op"].as_str() {
        Some("click") => {
            let (x, y) = (
                action["x"].as_i64().unwrap_or(0),
                action["y"].as_i64().unwrap_or(0),
            );
            // Big enough to survive the scaling down to terminal cells.
            for d in -30..=30 {
                for w in -3..=3 {
                    dot(x + d, y + w);
                    dot(x + w, y + d);
                }
            }
        }
        Some("scroll") => {
            // An arrow at the right edge, pointing the way the page moved.
            let down = action["dy"].as_i64().unwrap_or(0) >= 0;
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
        _ => {}
    }
    DynamicImage::ImageRgb8(image)
}

impl Viewer {
    pub fn open(dir: &Path, graphics: Graphics) -> anyhow::Result<Viewer> {
        let recording = read(dir)?;
        Ok(Viewer {
            recording,
            selected: 0,
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
        let [body, bottom] =
            Layout::vertical([Constraint::Min(0), Constraint::Length(1)]).areas(frame.area());
        let [list_area, right] =
            Layout::horizontal([Constraint::Length(38), Constraint::Min(0)]).areas(body);
        let [header, pictures] =
            Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(right);
        // Side by side when the pictures get bigger that way (wide terminals), else stacked.
        let halves = [Constraint::Percentage(50), Constraint::Percentage(50)];
        let [before_area, after_area] = if pictures.width >= pictures.height.saturating_mul(5) {
            Layout::horizontal(halves).areas(pictures)
        } else {
            Layout::vertical(halves).areas(pictures)
        };

        let items: Vec<ListItem> = self
            .recording
            .steps
            .iter()
            .map(|s| {
                let id: String = s.episode_id.chars().take(8).collect();
                let what = crate::command::describe(
                    &browserenv::models::BrowserAction::from_value(&s.action)
                        .unwrap_or_else(|_| browserenv::models::BrowserAction::wait()),
                );
                let mut spans = vec![Span::raw(format!("{id} #{:<2} {what}", s.step))];
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
            })
            .collect();
        let title = format!(
            " {} steps, {} episodes ",
            self.recording.steps.len(),
            self.recording.episodes.len()
        );
        let list = List::new(items)
            .block(Block::default().borders(Borders::ALL).title(title))
            .highlight_style(
                Style::default()
                    .bg(Color::Blue)
                    .add_modifier(Modifier::BOLD),
            );
        let mut state = ListState::default().with_selected(Some(self.selected));
        frame.render_stateful_widget(list, list_area, &mut state);

        let details = match self.step() {
            Some(s) => vec![
                Line::from(format!("{} → {}", s.url, s.next_url)),
                Line::from(format!(
                    "action {}  error {:?}  reward {}  {} ms{}",
                    s.action,
                    s.error,
                    s.reward.map_or("-".to_string(), |r| r.to_string()),
                    s.latency_ms.round(),
                    s.note
                        .as_ref()
                        .map(|n| format!("  note: {n}"))
                        .unwrap_or_default()
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
            ],
            None => vec![Line::from("This recording has no steps.")],
        };
        frame.render_widget(Paragraph::new(details), header);

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
                crate::view::draw_cells(frame, view, cells);
            }
            // Pixel pictures are written after the frame (`draw`).
        }

        let status = match self.recording.problems.first() {
            Some(problem) => Span::styled(
                format!("{} problem(s): {problem}", self.recording.problems.len()),
                Style::default().fg(Color::Red),
            ),
            None => Span::raw("↑↓ step  PgUp/PgDn 10  Home/End  q quit"),
        };
        frame.render_widget(Paragraph::new(Line::from(status)), bottom);
    }
}

/// Run the viewer until q or Esc.
pub fn run_viewer(dir: &Path, choice: GraphicsChoice) -> anyhow::Result<()> {
    use crossterm::event::{self, Event, KeyCode, KeyEventKind};
    let mut guard = enter()?;
    let graphics = probe_graphics(choice);
    let mut viewer = Viewer::open(dir, graphics)?;
    let mut out = guard.output.clone();
    loop {
        draw(&mut guard.terminal, &mut viewer, Some(&mut out))?;
        if let Event::Key(key) = event::read()? {
            if key.kind == KeyEventKind::Release {
                continue;
            }
            match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                KeyCode::Down | KeyCode::Char('j') => viewer.select(1),
                KeyCode::Up | KeyCode::Char('k') => viewer.select(-1),
                KeyCode::PageDown => viewer.select(10),
                KeyCode::PageUp => viewer.select(-10),
                KeyCode::Home => viewer.select(i64::MIN / 2),
                KeyCode::End => viewer.select(i64::MAX / 2),
                _ => {}
            }
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
