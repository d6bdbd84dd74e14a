//! Drawing: rulers around the picture, the picture, the crosshair, the status bar, the bottom line
//! and the help overlay. `layout` is shared with mouse mapping so a click maps to what is drawn.

use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, Wrap};
use ratatui::Frame;
use ratatui_image::protocol::Protocol;
use ratatui_image::{FontSize, Image};

use crate::app::{App, LineKind, Link, Mode, BINDINGS};
use crate::picture::{fit, page_to_cell, GRID_STEP, PAGE_HEIGHT, PAGE_WIDTH};

/// Width of the left ruler: three digits and a tick.
const RULER_WIDTH: u16 = 4;
const SPINNER: [char; 8] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧'];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub top_ruler: Rect,
    pub left_ruler: Rect,
    /// The pane the picture may use.
    pub pane: Rect,
    /// Where the picture is drawn: the pane's largest 4:3 rectangle.
    pub picture: Option<Rect>,
    pub task: Rect,
    pub status: Rect,
    pub line: Rect,
}

/// `task_row`: one more row above the status bar for the task's instruction.
pub fn layout(area: Rect, font: FontSize, task_row: bool) -> Areas {
    let [pane_with_rulers, task, status, line] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(u16::from(task_row)),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let inner = Rect {
        x: pane_with_rulers.x + RULER_WIDTH.min(pane_with_rulers.width),
        y: pane_with_rulers.y + 1.min(pane_with_rulers.height),
        width: pane_with_rulers.width.saturating_sub(RULER_WIDTH),
        height: pane_with_rulers.height.saturating_sub(1),
    };
    let picture = fit(inner, font);
    let drawn = picture.unwrap_or(inner);
    Areas {
        top_ruler: Rect::new(
            inner.x,
            pane_with_rulers.y,
            drawn.width,
            1.min(pane_with_rulers.height),
        ),
        left_ruler: Rect::new(
            pane_with_rulers.x,
            inner.y,
            RULER_WIDTH.min(pane_with_rulers.width),
            drawn.height,
        ),
        pane: inner,
        picture,
        task,
        status,
        line,
    }
}

pub fn draw(frame: &mut Frame, app: &App, picture: Option<&Protocol>, font: FontSize) {
    let areas = layout(frame.area(), font, !app.tasks.is_empty());
    draw_rulers(frame, app, &areas);
    draw_task(frame, app, areas.task);
    draw_picture(frame, app, &areas, picture);
    draw_status(frame, app, areas.status);
    draw_line(frame, app, areas.line);
    if app.help {
        draw_help(frame, frame.area());
    }
}

fn ruler_style() -> Style {
    Style::default().fg(Color::DarkGray)
}

fn marker_style() -> Style {
    Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD)
}

fn draw_rulers(frame: &mut Frame, app: &App, areas: &Areas) {
    let Some(picture) = areas.picture else { return };
    let buffer = frame.buffer_mut();
    // Top: a label at every GRID_STEP px that has room (every other one on narrow panes).
    let mut next_free = picture.x;
    for x in (0..PAGE_WIDTH).step_by(GRID_STEP as usize) {
        let (column, _) = page_to_cell(picture, x, 0);
        let label = format!("{x}");
        if column < next_free || column + label.len() as u16 > picture.right() {
            continue;
        }
        buffer.set_string(
            column,
            areas.top_ruler.y,
            format!("╵{label}"),
            ruler_style(),
        );
        next_free = column + label.len() as u16 + 2;
    }
    // Left: labels right-aligned against a tick.
    let mut next_row = picture.y;
    for y in (0..PAGE_HEIGHT).step_by(GRID_STEP as usize) {
        let (_, row) = page_to_cell(picture, 0, y);
        if row < next_row {
            continue;
        }
        let label = format!("{y:>3}╶");
        buffer.set_string(areas.left_ruler.x, row, label, ruler_style());
        next_row = row + 1;
    }
    // The crosshair's position on both rulers.
    let (column, row) = page_to_cell(picture, app.crosshair.0, app.crosshair.1);
    buffer.set_string(column, areas.top_ruler.y, "▼", marker_style());
    buffer.set_string(
        areas.left_ruler.x + RULER_WIDTH - 1,
        row,
        "▶",
        marker_style(),
    );
}

fn draw_picture(frame: &mut Frame, app: &App, areas: &Areas, picture: Option<&Protocol>) {
    let Some(rect) = areas.picture else {
        let message =
            Paragraph::new("The terminal is too small to show the page.").wrap(Wrap { trim: true });
        frame.render_widget(message, areas.pane);
        return;
    };
    let placeholder = |frame: &mut Frame, text: String| {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(ruler_style());
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        let lines = vec![Line::from(""), Line::from(text)];
        frame.render_widget(
            Paragraph::new(lines)
                .alignment(Alignment::Center)
                .wrap(Wrap { trim: true }),
            inner,
        );
    };
    // Kitty/sixel images would paint over the help text: hide the picture while help is open.
    if app.help && !app.text_picture {
        return;
    }
    match (picture, &app.link) {
        (Some(protocol), _) => {
            frame.render_widget(Image::new(protocol).allow_clipping(true), rect);
            if app.text_picture {
                // Half-block cells can carry the crosshair itself (inverted colours).
                let (column, row) = page_to_cell(rect, app.crosshair.0, app.crosshair.1);
                if let Some(cell) = frame.buffer_mut().cell_mut((column, row)) {
                    cell.modifier.insert(Modifier::REVERSED);
                }
            }
        }
        (None, Link::Connecting) => {
            placeholder(frame, format!("Connecting to {}…", app.server_label))
        }
        (None, Link::Lost(reason)) => placeholder(
            frame,
            format!("Disconnected: {reason}. Press r to reconnect, q to quit."),
        ),
        (None, Link::Connected) => placeholder(frame, format!("Opening {}…", app.start_url)),
    }
}

fn draw_task(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let line = match (app.task(), app.task_index) {
        (Some(task), Some(index)) => Line::from(vec![
            Span::styled(
                format!(
                    " task {}/{} {} [{}] ",
                    index + 1,
                    app.tasks.len(),
                    task.id,
                    task.category
                ),
                Style::default().fg(Color::Black).bg(Color::Cyan),
            ),
            Span::styled(
                format!(" {}", task.instruction),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ]),
        _ => Line::from(format!(" {} tasks loaded", app.tasks.len())),
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let mut spans = Vec::new();
    let (link, link_style) = match &app.link {
        Link::Connecting => ("connecting".to_string(), Style::default().fg(Color::Yellow)),
        Link::Connected => ("connected".to_string(), Style::default().fg(Color::Green)),
        Link::Lost(_) => (
            "disconnected".to_string(),
            Style::default().fg(Color::White).bg(Color::Red),
        ),
    };
    spans.push(Span::styled(format!(" {link} "), link_style));
    if let Some(session) = &app.watching {
        let short: String = session.chars().take(13).collect();
        spans.push(Span::styled(
            format!(" watching {short} "),
            Style::default().fg(Color::Black).bg(Color::Magenta),
        ));
        spans.push(Span::raw(" "));
    }
    if app.recording {
        spans.push(Span::styled(
            " ● REC ",
            Style::default()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::raw(" "));
    }
    if app.in_flight.is_some() {
        let spinner = SPINNER[app.spinner % SPINNER.len()];
        spans.push(Span::styled(
            format!("{spinner} "),
            Style::default().fg(Color::Cyan),
        ));
    }
    if let Some(observed) = &app.observed {
        let steps = match observed.max_steps.or(app.max_steps) {
            Some(max) => format!("step {}/{max}", observed.step),
            None => format!("step {}", observed.step),
        };
        spans.push(Span::raw(format!("{steps} │ ")));
        if observed.done {
            spans.push(Span::styled(
                " done ",
                Style::default().fg(Color::Black).bg(Color::Yellow),
            ));
            spans.push(Span::raw(" │ "));
        }
        if !observed.error.is_empty() {
            spans.push(Span::styled(
                format!(" {} ", observed.error),
                Style::default()
                    .fg(Color::White)
                    .bg(Color::Red)
                    .add_modifier(Modifier::BOLD),
            ));
            spans.push(Span::raw(" │ "));
        }
        spans.push(Span::raw(format!("{} ms │ ", observed.latency.as_millis())));
    }
    spans.push(Span::styled(
        format!("x,y {},{}", app.crosshair.0, app.crosshair.1),
        marker_style(),
    ));
    if app.grid {
        spans.push(Span::raw(" │ grid"));
    }
    if !app.queue.is_empty() {
        spans.push(Span::styled(
            format!(" │ queued {}", app.queue.len()),
            Style::default().fg(Color::Cyan),
        ));
    }
    if let Some(observed) = &app.observed {
        spans.push(Span::raw(" │ "));
        spans.push(Span::styled(
            observed.url.clone(),
            Style::default().add_modifier(Modifier::UNDERLINED),
        ));
        if !observed.title.is_empty() {
            spans.push(Span::raw(format!(" — {}", observed.title)));
        }
    }
    let bar = Paragraph::new(Line::from(spans)).style(Style::default().bg(Color::Rgb(30, 30, 40)));
    frame.render_widget(bar, area);
}

fn draw_line(frame: &mut Frame, app: &App, area: Rect) {
    let line = match &app.mode {
        Mode::Line { kind, text } => {
            let style = match kind {
                LineKind::Type => Style::default().fg(Color::Green),
                _ => Style::default().fg(Color::Cyan),
            };
            let hint = match kind {
                LineKind::Type => "  (Enter sends, Esc cancels)",
                _ => "  (Enter runs, Esc cancels)",
            };
            Line::from(vec![
                Span::styled(kind.prompt(), style.add_modifier(Modifier::BOLD)),
                Span::raw(kind.shown(text)),
                Span::styled("█", style),
                Span::styled(hint, ruler_style()),
            ])
        }
        Mode::KeyPrefix => Line::from(Span::styled(
            "key: Enter  Tab  Esc  Backspace  a (CTRL+A)  ↑ ↓ ← →",
            Style::default().fg(Color::Cyan),
        )),
        Mode::ConfirmQuit => Line::from(Span::styled(
            "The episode is in progress. Quit and abandon it? (y/n)",
            Style::default().fg(Color::Black).bg(Color::Yellow),
        )),
        Mode::Normal => match &app.notice {
            Some(notice) if notice.is_error => Line::from(Span::styled(
                notice.text.clone(),
                Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            )),
            Some(notice) => Line::from(notice.text.clone()),
            None => Line::from(Span::styled(
                "click/arrows+Enter  i type  k key  j/u scroll  b back  w wait  f finish  r reset  : command  g grid  ? help  q quit",
                ruler_style(),
            )),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let width = area.width.min(84);
    let height = (BINDINGS.len() as u16 + 4).min(area.height);
    let rect = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    );
    frame.render_widget(Clear, rect);
    let rows = BINDINGS.iter().map(|(keys, what)| {
        Row::new(vec![
            Span::styled(*keys, Style::default().fg(Color::Yellow)),
            Span::raw(*what),
        ])
    });
    let keys_width = BINDINGS
        .iter()
        .map(|(keys, _)| keys.chars().count())
        .max()
        .unwrap_or(10) as u16
        + 1;
    let table = Table::new(rows, [Constraint::Length(keys_width), Constraint::Min(10)]).block(
        Block::default()
            .borders(Borders::ALL)
            .title(" browserenv — keys (any key closes) "),
    );
    frame.render_widget(table, rect);
}
