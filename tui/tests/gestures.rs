//! A person's gestures through the whole UI against real Chromium: terminal mouse events (press,
//! motion with the button held, release, motion alone) and keys go through the event loop, and
//! what the page recorded (its title, as JSON) is checked.

use std::time::Duration;

use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
use browserenv_server::site::serve_dir;
use browserenv_server::{start, ServerConfig};
use browserenv_tui::app::App;
use browserenv_tui::graphics::picture::{Region, View};
use browserenv_tui::graphics::Graphics;
use browserenv_tui::live::event_loop::{run, Exit, FrameReport, GraphicsSource, LoopOptions};
use browserenv_tui::screen::layout::layout;
use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use futures_util::stream;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use serde_json::Value;
use tokio::sync::mpsc;

const SIZE: (u16, u16) = (120, 40);

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent {
        code,
        modifiers: KeyModifiers::NONE,
        kind: KeyEventKind::Press,
        state: KeyEventState::NONE,
    })
}

fn mouse(kind: MouseEventKind, (column, row): (u16, u16)) -> Event {
    Event::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    })
}

/// The picture's place on the test terminal (as the event loop lays it out).
fn picture() -> View {
    layout(
        Rect::new(0, 0, SIZE.0, SIZE.1),
        &Graphics::halfblocks(),
        false,
        Region::PAGE,
    )
    .picture
    .unwrap()
}

/// The cell over page pixel `at`, and the page pixel the UI maps that cell to.
fn cell(at: (i64, i64)) -> ((u16, u16), (i64, i64)) {
    let picture = picture();
    let cell = picture.page_to_cell(at.0, at.1).unwrap();
    (cell, picture.cell_to_page(cell.0, cell.1).unwrap())
}

/// The page's state: its title, which these pages keep as JSON.
fn state(frame: &FrameReport) -> Value {
    let title = frame.observed.as_ref().map(|o| o.title.as_str());
    serde_json::from_str(title.unwrap_or("")).unwrap_or(Value::Null)
}

struct Ui {
    input: mpsc::UnboundedSender<Event>,
    frames: mpsc::UnboundedReceiver<FrameReport>,
}

impl Ui {
    fn send(&self, events: impl IntoIterator<Item = Event>) {
        for event in events {
            self.input.send(event).unwrap();
        }
    }

    /// Wait (generously: a functional check, not a timing one) for a frame that satisfies `done`.
    async fn until(&mut self, what: &str, done: impl Fn(&FrameReport) -> bool) -> FrameReport {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut last = Value::Null;
        loop {
            match tokio::time::timeout_at(deadline, self.frames.recv()).await {
                Ok(Some(frame)) if done(&frame) => return frame,
                Ok(Some(frame)) => last = state(&frame),
                Ok(None) => panic!("the UI stopped while waiting for: {what}"),
                Err(_) => panic!("timed out waiting for: {what}; the page said {last}"),
            }
        }
    }

    async fn reset(&mut self, url: &str) {
        self.send([key(KeyCode::Char(':'))]);
        self.send(
            format!("reset {url}")
                .chars()
                .map(|c| key(KeyCode::Char(c))),
        );
        self.send([key(KeyCode::Enter)]);
        let page = url.rsplit('/').next().unwrap().to_string();
        self.until(&page, |f| {
            f.observed.as_ref().is_some_and(|o| o.url.ends_with(&page))
                && !f.in_flight
                && f.picture_current
        })
        .await;
    }
}

/// The pages' site, a server on real Chromium, and the UI's event loop on a test terminal.
struct Running {
    pages: browserenv_server::site::SiteHandle,
    server: browserenv_server::ServerHandle,
    task: tokio::task::JoinHandle<Exit>,
}

impl Running {
    async fn quit(self, ui: &Ui) {
        ui.send([key(KeyCode::Char('q')), key(KeyCode::Char('y'))]);
        let exit = self.task.await.unwrap();
        self.server.stop().await.unwrap();
        assert_eq!(exit, Exit::Quit);
    }
}

async fn start_ui(page: &str) -> (Ui, Running) {
    let pages = serve_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/pages"))
        .await
        .unwrap();
    let launcher = ChromiumLauncher::new(ChromiumConfig {
        executable: std::env::var_os("BROWSER_CHROMIUM")
            .map(Into::into)
            .unwrap_or_else(browserenv_server::chromium::default_executable),
        ..ChromiumConfig::default()
    });
    let server = start(launcher, ServerConfig::default()).await.unwrap();
    let (input, mut input_rx) = mpsc::unbounded_channel::<Event>();
    let events = Box::pin(stream::poll_fn(move |cx| input_rx.poll_recv(cx)));
    let (frames_tx, frames) = mpsc::unbounded_channel();
    let mut app = App::new(pages.url(page), server.base_url());
    let options = LoopOptions {
        server: server.base_url(),
        token: None,
        graphics: GraphicsSource::Ready(Graphics::halfblocks()),
        out: None,
        frames: Some(frames_tx),
        recorder: None,
        watch: None,
        collect: false,
        stop: None,
        typed_secrets: None,
    };
    let ui_task = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(SIZE.0, SIZE.1)).unwrap();
        let exit = run(&mut terminal, &mut app, events, options).await.unwrap();
        exit
    });
    (
        Ui { input, frames },
        Running {
            pages,
            server,
            task: ui_task,
        },
    )
}

#[tokio::test]
async fn a_persons_mouse_drags_the_slider_hovers_the_menu_and_double_clicks() {
    let (mut ui, running) = start_ui("shop.html").await;
    ui.until("the shop on screen", |f| {
        state(f)["max"] == 300 && f.picture_current
    })
    .await;

    // The slider's thumb (page 612..628 x 58..78) pressed, dragged left through three cells,
    // released: the page's pointer-event slider follows and reports where it was let go.
    let (start, on_thumb) = cell((620, 68));
    assert!((612..=628).contains(&on_thumb.0) && (58..=78).contains(&on_thumb.1));
    let (through, _) = cell((540, 68));
    let (end, released) = cell((420, 70));
    ui.send([
        mouse(MouseEventKind::Down(MouseButton::Left), start),
        mouse(MouseEventKind::Drag(MouseButton::Left), through),
        mouse(MouseEventKind::Drag(MouseButton::Left), end),
        mouse(MouseEventKind::Up(MouseButton::Left), end),
    ]);
    let max = released.0 - 320;
    let slid = ui
        .until("the slider let go", |f| {
            state(f)["events"].as_array().is_some_and(|e| {
                e.iter()
                    .any(|e| e.as_str() == Some(&format!("slider-up:{max}")))
            })
        })
        .await;
    assert_eq!(state(&slid)["max"], max);
    assert!(
        state(&slid)["moves"].as_i64().unwrap() >= 2,
        "{}",
        state(&slid)
    );

    // The mega-menu opens on the pointer resting over "Products" (page 20..120 x 0..40).
    ui.reset(&running.pages.url("menu.html")).await;
    let (products, _) = cell((70, 20));
    let (near, _) = cell((300, 250));
    ui.send([
        mouse(MouseEventKind::Moved, near),
        mouse(MouseEventKind::Moved, products),
    ]);
    ui.until("the mega-menu open", |f| state(f)["mega"] == true)
        .await;

    // A double click (two clicks at one place) is one double click: the name goes to editing.
    let (name, _) = cell((60, 250));
    let click = [
        mouse(MouseEventKind::Down(MouseButton::Left), name),
        mouse(MouseEventKind::Up(MouseButton::Left), name),
    ];
    ui.send(click.clone());
    ui.send(click);
    let edited = ui
        .until("the name editing", |f| state(f)["editing"] == true)
        .await;
    let seen = state(&edited)["seen"].to_string();
    assert!(seen.contains("dblclick:0:2"), "{seen}");

    // A right click on the file area opens the page's own menu there.
    let (files, at) = cell((200, 400));
    ui.send([
        mouse(MouseEventKind::Down(MouseButton::Right), files),
        mouse(MouseEventKind::Up(MouseButton::Right), files),
    ]);
    let opened = ui
        .until("the file menu", |f| state(f)["ctx"].is_array())
        .await;
    assert_eq!(state(&opened)["ctx"], serde_json::json!([at.0, at.1]));

    running.quit(&ui).await;
}

#[tokio::test]
async fn the_keyboard_drags_from_a_mark_and_hovers_at_the_crosshair() {
    let (mut ui, running) = start_ui("shop.html").await;
    ui.until("the shop on screen", |f| {
        state(f)["max"] == 300 && f.picture_current
    })
    .await;

    // The crosshair starts at the centre (400, 300): up 230 and right 220 to the thumb (620, 70).
    let arrows = |code, n| std::iter::repeat_n(key(code), n);
    ui.send(arrows(KeyCode::Up, 23));
    ui.send(arrows(KeyCode::Right, 22));
    ui.send([key(KeyCode::Char('m'))]);
    ui.send(arrows(KeyCode::Left, 15));
    ui.send([key(KeyCode::Char('v'))]);
    ui.until("the slider dragged to 150", |f| state(f)["max"] == 150)
        .await;

    // Hover from the keyboard: the crosshair over "Products", then h.
    ui.reset(&running.pages.url("menu.html")).await;
    // The crosshair is where the drag ended (470, 70): left 40 and up 5 to (70, 20).
    ui.send(arrows(KeyCode::Left, 40));
    ui.send(arrows(KeyCode::Up, 5));
    ui.send([key(KeyCode::Char('h'))]);
    ui.until("the mega-menu open", |f| state(f)["mega"] == true)
        .await;

    running.quit(&ui).await;
}

#[tokio::test]
async fn the_dropdown_drawn_in_the_picture_is_chosen_by_click_and_by_keys() {
    let (mut ui, running) = start_ui("shop.html").await;
    ui.until("the shop on screen", |f| {
        state(f)["max"] == 300 && f.picture_current
    })
    .await;
    let left_click = |at| {
        [
            mouse(MouseEventKind::Down(MouseButton::Left), at),
            mouse(MouseEventKind::Up(MouseButton::Left), at),
        ]
    };
    // The "sort by" select (page 90..270 x 56..80) clicked open; the server draws its options
    // below it, rows 20 px tall from y=81: the third, "Price: high to low", clicked.
    let (select, _) = cell((180, 68));
    let (option, on_option) = cell((150, 131));
    assert!((121..141).contains(&on_option.1), "{on_option:?}");
    ui.send(left_click(select));
    ui.send(left_click(option));
    let chosen = ui
        .until("price: high to low", |f| state(f)["sort"] == "price-desc")
        .await;
    assert_eq!(
        state(&chosen)["events"],
        serde_json::json!(["input:price-desc:true", "change:price-desc:true"])
    );

    // Open again; DOWN (past the disabled "Newest") and ENTER from the keys.
    ui.send(left_click(select));
    ui.send([key(KeyCode::Char('k')), key(KeyCode::Down)]);
    ui.send([key(KeyCode::Char('p'))]);
    ui.send("enter".chars().map(|c| key(KeyCode::Char(c))));
    ui.send([key(KeyCode::Enter)]);
    ui.until("best rated", |f| state(f)["sort"] == "rating")
        .await;
    running.quit(&ui).await;
}
