//! Drawing: rulers around the picture, the picture, the crosshair, the status bar, the bottom line
//! and the help overlay, where `crate::screen::layout` puts them (the layout the painter and mouse mapping
//! use too, so a click maps to what is drawn).
//!
//! Colours: everything on the status bar sets both its foreground and its background, so it reads
//! the same on a light or a dark terminal theme (a test holds it to a 4.5:1 contrast); the rest
//! uses the terminal's own foreground.

use ratatui::layout::{Alignment, Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use crate::app::{help_pages, help_rows, App, LinkState, Mode, BINDINGS};
use crate::graphics::Graphics;
use crate::screen::layout::RULER_WIDTH;
// Where things go on the screen: shared with the painter and mouse mapping (`crate::screen::layout`).
use crate::graphics::picture::View;
use crate::screen::layout::{layout, Areas};
use crate::screen::painter::Slot;

/// The most characters of an ask's reason on the status bar (the notice line shows it whole
/// when the ask comes).
const REASON_SHOWN: usize = 60;

const SPINNER: [char; 8] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧'];

/// The status bar's colours: light text on a dark bar, whatever the terminal's theme.
pub const BAR_BG: Color = Color::Rgb(32, 36, 52);
const BAR_FG: Color = Color::Rgb(236, 236, 236);
const BAR_GREEN: Color = Color::Rgb(130, 224, 130);
const BAR_YELLOW: Color = Color::Rgb(250, 212, 96);
const BAR_CYAN: Color = Color::Rgb(128, 214, 236);
const ALERT_BG: Color = Color::Rgb(176, 30, 30);
const BADGE_BG: Color = Color::Rgb(250, 212, 96);
const WATCH_BG: Color = Color::Rgb(206, 150, 232);
/// An agent asking for a person: the one badge meant to pull the eye from across the room.
const ASK_BG: Color = Color::Rgb(255, 150, 50);
const BLACK: Color = Color::Rgb(0, 0, 0);
const WHITE: Color = Color::Rgb(255, 255, 255);

pub fn draw(frame: &mut Frame, app: &App, slot: &Slot, graphics: &Graphics) {
    let areas = layout(frame.area(), graphics, !app.tasks.is_empty(), app.region());
    draw_rulers(frame, app, &areas);
    draw_task(frame, app, areas.task);
    draw_picture(frame, app, &areas, slot);
    draw_status(frame, app, areas.status);
    draw_line(frame, app, areas.line);
    if app.help {
        draw_help(frame, frame.area(), app.help_page);
    } else if let Some(lines) = app.collect.as_ref().and_then(|c| c.progress.as_ref()) {
        draw_progress(frame, frame.area(), lines);
    }
}

fn ruler_style() -> Style {
    Style::default()
}

fn marker_style() -> Style {
    Style::default()
        .fg(BLACK)
        .bg(BADGE_BG)
        .add_modifier(Modifier::BOLD)
}

fn draw_rulers(frame: &mut Frame, app: &App, areas: &Areas) {
    let Some(view) = areas.picture else { return };
    let region = view.region;
    let cells = view.cells;
    let buffer = frame.buffer_mut();
    let step = region.step() as usize;
    // Top: a label at every step that has room (fewer on narrow panes).
    let mut next_free = cells.x;
    for x in (region.first_step(region.x)..region.x + region.width).step_by(step) {
        let Some((column, _)) = view.page_to_cell(x, region.y) else {
            continue;
        };
        let label = format!("{x}");
        if column < next_free || column + label.len() as u16 > cells.right() {
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
    let mut next_row = cells.y;
    for y in (region.first_step(region.y)..region.y + region.height).step_by(step) {
        let Some((_, row)) = view.page_to_cell(region.x, y) else {
            continue;
        };
        if row < next_row {
            continue;
        }
        let label = format!("{y:>3}╶");
        buffer.set_string(areas.left_ruler.x, row, label, ruler_style());
        next_row = row + 1;
    }
    // The crosshair's position on both rulers.
    if let Some((column, row)) = view.page_to_cell(app.crosshair.0, app.crosshair.1) {
        buffer.set_string(column, areas.top_ruler.y, "▼", marker_style());
        buffer.set_string(
            areas.left_ruler.x + RULER_WIDTH - 1,
            row,
            "▶",
            marker_style(),
        );
    }
}

fn draw_picture(frame: &mut Frame, app: &App, areas: &Areas, slot: &Slot) {
    let Some(view) = areas.picture else {
        let message =
            Paragraph::new("The terminal is too small to show the page.").wrap(Wrap { trim: true });
        frame.render_widget(message, areas.pane);
        return;
    };
    let rect = view.cells;
    let placeholder = |frame: &mut Frame, text: String| {
        let block = Block::default().borders(Borders::ALL);
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
    if app.overlay_open() && !app.text_picture {
        // Pixel pictures are taken off while an overlay (the help, the progress) is open.
        return;
    }
    if slot.has_image() {
        if let Some((shown, cells)) = slot.cells() {
            draw_cells(frame, shown, cells);
            // Half-block cells carry the crosshair itself (inverted colours).
            if let Some(at) = shown.page_to_cell(app.crosshair.0, app.crosshair.1) {
                if let Some(cell) = frame.buffer_mut().cell_mut(at) {
                    cell.modifier.insert(Modifier::REVERSED);
                }
            }
        }
        // Pixel pictures are drawn over these cells after the frame (see painter).
        return;
    }
    match &app.link {
        LinkState::Connecting => placeholder(frame, format!("Connecting to {}…", app.server_label)),
        LinkState::Lost(reason) => placeholder(
            frame,
            format!("Disconnected: {reason}. Press r to reconnect, q to quit."),
        ),
        LinkState::Connected => placeholder(frame, format!("Opening {}…", app.start_url)),
    }
}

/// Half-block cells into the buffer, clipped to the frame.
pub fn draw_cells(frame: &mut Frame, view: View, cells: &[crate::screen::painter::Paint]) {
    let area = frame.area();
    let buffer = frame.buffer_mut();
    let width = usize::from(view.cells.width);
    for (index, paint) in cells.iter().enumerate() {
        let column = view.cells.x + (index % width) as u16;
        let row = view.cells.y + (index / width) as u16;
        if column >= area.right() || row >= area.bottom() {
            continue;
        }
        if let Some(cell) = buffer.cell_mut((column, row)) {
            cell.set_char(paint.symbol)
                .set_fg(paint.fg)
                .set_bg(paint.bg)
                .set_style(Style::default().add_modifier(paint.modifier));
        }
    }
}

fn draw_task(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let Some((task, index)) = app.task().zip(app.task_index) else {
        let line = Line::from(format!(" {} tasks loaded", app.tasks.len()));
        frame.render_widget(Paragraph::new(line), area);
        return;
    };
    // A campaign's task comes one at a time from the server, for the person collecting.
    let place = match &app.collect {
        Some(collect) => format!("{} · task", collect.name),
        None => format!("task {}/{}", index + 1, app.tasks.len()),
    };
    let line = Line::from(vec![
        Span::styled(
            format!(" {place} {} [{}] ", task.id, task.category),
            Style::default().fg(BLACK).bg(BAR_CYAN),
        ),
        Span::styled(
            format!(" {}", task.instruction),
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

/// Text on the bar in the bar's colours.
fn bar(text: impl Into<String>) -> Span<'static> {
    Span::styled(text.into(), Style::default().fg(BAR_FG).bg(BAR_BG))
}

/// A badge: `fg` on `bg`, bold.
fn badge(text: impl Into<String>, fg: Color, bg: Color) -> Span<'static> {
    Span::styled(
        text.into(),
        Style::default().fg(fg).bg(bg).add_modifier(Modifier::BOLD),
    )
}

/// The status bar: the link and who drives, the step, what the next input carries, the page.
fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let mut spans = link_spans(app);
    spans.extend(step_spans(app));
    spans.extend(input_spans(app));
    if let Some(observed) = &app.observed {
        spans.push(bar(" │ "));
        spans.push(Span::styled(
            observed.url.clone(),
            on_bar(BAR_FG).add_modifier(Modifier::UNDERLINED),
        ));
        if !observed.title.is_empty() {
            spans.push(bar(format!(" — {}", observed.title)));
        }
    }
    let bar = Paragraph::new(Line::from(spans)).style(Style::default().fg(BAR_FG).bg(BAR_BG));
    frame.render_widget(bar, area);
}

fn on_bar(fg: Color) -> Style {
    Style::default().fg(fg).bg(BAR_BG)
}

/// The link's state, the session watched and who drives it, who asks for a person, recording.
fn link_spans(app: &App) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    match &app.link {
        LinkState::Connecting => spans.push(Span::styled(" connecting ", on_bar(BAR_YELLOW))),
        LinkState::Connected => spans.push(Span::styled(" connected ", on_bar(BAR_GREEN))),
        LinkState::Lost(_) => spans.push(badge(" disconnected ", WHITE, ALERT_BG)),
    }
    if let Some(session) = &app.watching {
        let short: String = session.chars().take(13).collect();
        spans.push(badge(format!(" watching {short} "), BLACK, WATCH_BG));
        spans.push(bar(" "));
    } else if app.watch_mode {
        spans.push(badge(" waiting for a session ", BLACK, WATCH_BG));
        spans.push(bar(" "));
    }
    if app.watch_mode && app.watching.is_some() {
        // Who drives: the one fact a person about to press a key must not miss.
        let (text, fg, bg) = match (&app.controller, app.in_control) {
            (_, true) => (
                " YOU ARE IN CONTROL (c: hand back) ".to_string(),
                WHITE,
                ALERT_BG,
            ),
            (Some(name), false) => (format!(" {name} in control "), BLACK, BADGE_BG),
            (None, false) => (" agent in control ".to_string(), BLACK, WATCH_BG),
        };
        spans.push(badge(text, fg, bg));
        spans.push(bar(" "));
    }
    if let Some(ask) = &app.asking {
        let reason = ask.short_reason(REASON_SHOWN);
        spans.push(badge(format!(" ASKING: {reason} "), BLACK, ASK_BG));
        spans.push(bar(" "));
    }
    let elsewhere = app.others_asking().count();
    if app.watch_mode && elsewhere > 0 {
        spans.push(badge(
            format!(" {elsewhere} asking elsewhere: Tab "),
            BLACK,
            ASK_BG,
        ));
        spans.push(bar(" "));
    }
    if app.recording {
        spans.push(badge(" ● REC ", WHITE, ALERT_BG));
        spans.push(bar(" "));
    }
    spans
}

/// The spinner while a request is in flight, and the step on screen: its number, whether it
/// ended the episode, its error, how long it took.
fn step_spans(app: &App) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    if app.in_flight.is_some() {
        let spinner = SPINNER[app.spinner % SPINNER.len()];
        spans.push(Span::styled(format!("{spinner} "), on_bar(BAR_CYAN)));
    }
    if let Some(observed) = &app.observed {
        let steps = match observed.max_steps.or(app.max_steps) {
            Some(max) => format!("step {}/{max}", observed.step),
            None => format!("step {}", observed.step),
        };
        spans.push(bar(format!("{steps} │ ")));
        if observed.done {
            spans.push(badge(" done ", BLACK, BADGE_BG));
            spans.push(bar(" │ "));
        }
        if !observed.error.is_empty() {
            spans.push(badge(format!(" {} ", observed.error), WHITE, ALERT_BG));
            spans.push(bar(" │ "));
        }
        spans.push(bar(format!("{} ms │ ", observed.latency.as_millis())));
    }
    spans
}

/// The crosshair and what the next input carries or shows: the mark, the modifiers held, the
/// zoom, the grid and text layers, the actions queued.
fn input_spans(app: &App) -> Vec<Span<'static>> {
    let mut spans = vec![Span::styled(
        format!("x,y {},{}", app.crosshair.0, app.crosshair.1),
        on_bar(BAR_YELLOW).add_modifier(Modifier::BOLD),
    )];
    // What the keyboard's next drag or click carries: the mark (`m`), the modifiers held (`M`).
    if let Some((x, y)) = app.gestures.mark {
        spans.push(Span::styled(format!(" │ mark {x},{y}"), on_bar(BAR_YELLOW)));
    }
    if !app.gestures.held.is_empty() {
        let held: Vec<&str> = app.gestures.held.iter().map(|m| m.name()).collect();
        spans.push(Span::styled(
            format!(" │ hold {}", held.join("+")),
            on_bar(BAR_YELLOW),
        ));
    }
    if app.zoom > 1 {
        spans.push(Span::styled(
            format!(" │ zoom {}x", app.zoom),
            on_bar(BAR_YELLOW),
        ));
    }
    if app.grid {
        spans.push(bar(" │ grid"));
    }
    if app.wants_text() {
        spans.push(bar(" │ text"));
    }
    if !app.queue.is_empty() {
        spans.push(Span::styled(
            format!(" │ queued {}", app.queue.len()),
            on_bar(BAR_CYAN),
        ));
    }
    spans
}

fn draw_line(frame: &mut Frame, app: &App, area: Rect) {
    let line = match &app.mode {
        Mode::Line { kind, text } => {
            let hint = kind.hint();
            Line::from(vec![
                Span::styled(kind.prompt(), Style::default().add_modifier(Modifier::BOLD)),
                Span::raw(kind.shown(text)),
                Span::styled("█", Style::default()),
                Span::styled(hint, Style::default().add_modifier(Modifier::DIM)),
            ])
        }
        Mode::KeyPrefix => Line::from(Span::styled(
            "key: Enter  Tab  Esc  Backspace  a (CTRL+A)  ↑ ↓ ← →",
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Mode::ConfirmQuit => Line::from(badge(
            "The episode is in progress. Quit and abandon it? (y/n)",
            BLACK,
            BADGE_BG,
        )),
        Mode::Normal => match &app.notice {
            Some(notice) if notice.is_error => {
                Line::from(badge(format!(" {} ", notice.text), WHITE, ALERT_BG))
            }
            Some(notice) => Line::from(notice.text.clone()),
            None => Line::from(Span::styled(
                "click/arrows+Enter  i type  k key  j/u scroll  b back  w wait  f finish  r reset  : command  g grid  z zoom  T text  ? help  q quit",
                Style::default(),
            )),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// An overlay of at most `width` x `height` cells in the middle of `area`, cleared.
fn overlay(frame: &mut Frame, area: Rect, width: u16, height: u16) -> Rect {
    let (width, height) = (area.width.min(width), height.min(area.height));
    let rect = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    frame.render_widget(Clear, rect);
    rect
}

fn draw_help(frame: &mut Frame, area: Rect, page: u16) {
    let per_page = help_rows(area.height);
    let pages = help_pages(area.height);
    let page = usize::from(page).min(pages - 1);
    let shown = &BINDINGS[page * per_page..BINDINGS.len().min((page + 1) * per_page)];
    let rect = overlay(frame, area, 84, shown.len() as u16 + 2);
    let rows = shown.iter().map(|(keys, what)| {
        Row::new(vec![
            Span::styled(*keys, Style::default().add_modifier(Modifier::BOLD)),
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
        Block::default().borders(Borders::ALL).title(if pages == 1 {
            " browserenv — keys (any key closes) ".to_string()
        } else if page + 1 < pages {
            format!(" browserenv — keys {}/{pages} (any key: more) ", page + 1)
        } else {
            format!(" browserenv — keys {pages}/{pages} (any key closes) ")
        }),
    );
    frame.render_widget(table, rect);
}

/// `V` in a campaign: where it stands, a line each (long lines wrap).
fn draw_progress(frame: &mut Frame, area: Rect, lines: &[String]) {
    let rect = overlay(frame, area, 100, lines.len() as u16 + 4);
    let text: Vec<Line> = lines.iter().map(|l| Line::from(l.as_str())).collect();
    let paragraph = Paragraph::new(text).wrap(Wrap { trim: false }).block(
        Block::default()
            .borders(Borders::ALL)
            .title(" campaign — where it stands (V closes) "),
    );
    frame.render_widget(paragraph, rect);
}
