//! What the viewer shows: the step list, the selected step's header, the before and after
//! pictures, the notice line and the keys; and `draw`, which puts them on a terminal.

use image::DynamicImage;
use ratatui::backend::Backend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use ratatui::{Frame, Terminal};

use browserenv_collect::trajectory::{read_frame, StepRecord};

use super::{mark_action, Viewer, HELP};
use crate::graphics::picture::{Region, View};
use crate::review::{outcome_label, Mark, Quality};
use crate::screen::painter::Slot;

impl Viewer {
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
