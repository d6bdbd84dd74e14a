//! The terminal UI (`BENCH_ONLY=tui`): the demo catalog's screenshots and text layers from a real
//! server (timing the text layer route), then the terminal UI's frames drawn from them, per
//! protocol and terminal size.

use std::time::Instant;

use browserenv::text_layer::TextLayer;
use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::Harness;

use crate::common::{long_episodes, Series};

/// The demo site's catalog, scrolled a screen at a time: screenshots with their text layers,
/// what the terminal UI shows. Also times the text layer route.
pub async fn catalog_frames(rounds: usize) -> anyhow::Result<Vec<(String, TextLayer)>> {
    let site = browserenv_server::site::serve_dir(browserenv_tests::assets_dir().join("site"))
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let harness = Harness::start(long_episodes()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(site.url("catalog.html")).episode_id("bench-text"))
        .await?;
    let base = harness.server.base_url();
    let sessions: Vec<serde_json::Value> = reqwest::get(format!("{base}/sessions"))
        .await?
        .json()
        .await?;
    let id = sessions
        .iter()
        .find(|s| s["episode_id"] == "bench-text")
        .and_then(|s| s["id"].as_str())
        .ok_or_else(|| anyhow::anyhow!("the session is not listed"))?
        .to_string();
    let mut route = Series::new("text layer: GET /sessions/{id}/text (catalog page)");
    let mut frames = Vec::new();
    for round in 0..rounds {
        let dy = if round % 6 < 3 { 300 } else { -300 };
        let step = client.step(BrowserAction::scroll(dy)).await?;
        let started = Instant::now();
        let layer: TextLayer = reqwest::get(format!("{base}/sessions/{id}/text"))
            .await?
            .json()
            .await?;
        route.add(started.elapsed());
        frames.push((step.observation.screenshot, layer));
    }
    println!("{}", route.row());
    client.close().await?;
    harness.stop().await;
    Ok(frames)
}

/// From an observation's PNG arriving to its frame written out, per protocol and terminal size:
/// decode, crop and scale, encode (half-blocks with and without the text layer, sixel, kitty,
/// iTerm2), draw, and the bytes a real terminal would receive (counted here).
pub fn frames(frames: &[(String, TextLayer)]) -> anyhow::Result<()> {
    use browserenv_tui::app::{App, Msg};
    use browserenv_tui::graphics::picture::decode_png;
    use browserenv_tui::graphics::{Graphics, Protocol};
    use browserenv_tui::live::event_loop::render;
    use browserenv_tui::screen::painter::Painter;
    use ratatui::backend::CrosstermBackend;
    use ratatui::layout::Size;

    /// A common cell size for the pixel protocols (kitty in Debian 12 reports 9x20, xterm 6x13).
    const CELL: (u16, u16) = (8, 16);
    println!(
        "| measure | n | median ms | p95 ms | floor ms (raw CDP) | median / floor | median KB per frame |"
    );
    println!("|---|---|---|---|---|---|---|");
    let kinds: [(&str, Graphics, bool); 5] = [
        ("kitty", Graphics::pixels(Protocol::Kitty, CELL), false),
        ("sixel", Graphics::pixels(Protocol::Sixel, CELL), false),
        ("iTerm2", Graphics::pixels(Protocol::Iterm2, CELL), false),
        ("half-blocks", Graphics::halfblocks(), false),
        ("half-blocks + text", Graphics::halfblocks(), true),
    ];
    for (width, height) in [(120u16, 40u16), (200, 60)] {
        for (name, graphics, text) in &kinds {
            let written = std::rc::Rc::new(std::cell::Cell::new(0usize));
            let mut terminal = ratatui::Terminal::with_options(
                CrosstermBackend::new(CountingWriter(written.clone())),
                ratatui::TerminalOptions {
                    viewport: ratatui::Viewport::Fixed(ratatui::layout::Rect::new(
                        0, 0, width, height,
                    )),
                },
            )?;
            let mut raw = CountingWriter(written.clone());
            let mut app = App::new("http://127.0.0.1/".into(), "bench".into());
            app.update(Msg::Connected);
            app.text_picture = graphics.is_text();
            app.text_layer = *text;
            let mut painter = Painter::new(graphics.clone());
            let mut series = Series::new(&format!("TUI frame {width}x{height}: {name}"));
            let mut bytes = Vec::new();
            for (index, (screenshot, layer)) in frames.iter().enumerate() {
                let started = Instant::now();
                let (image, png) = decode_png(screenshot).map_err(anyhow::Error::msg)?;
                painter.slot.set_picture(
                    Some(std::sync::Arc::new(image)),
                    Some(std::sync::Arc::new(png)),
                );
                if *text {
                    painter
                        .slot
                        .set_text(Some(std::sync::Arc::new(layer.clone())));
                }
                painter.encode_now(&app, Size::new(width, height));
                written.set(0);
                render(&mut terminal, &mut app, &mut painter, Some(&mut raw))?;
                // The first frame paints the whole screen; the rest are changed frames.
                if index > 0 {
                    series.add(started.elapsed());
                    bytes.push(written.get());
                }
            }
            bytes.sort_unstable();
            println!(
                "{} {:.0} |",
                series.row(),
                bytes[bytes.len() / 2] as f64 / 1000.0
            );
        }
    }
    println!();
    let shown = |width: u16, height: u16| {
        let area = ratatui::layout::Rect::new(0, 0, width, height);
        let graphics = Graphics::pixels(Protocol::Kitty, CELL);
        browserenv_tui::screen::layout::layout(
            area,
            &graphics,
            false,
            browserenv_tui::graphics::picture::Region::PAGE,
        )
        .picture
        .map_or((0, 0), |view| view.pixels)
    };
    let (small, large) = (shown(120, 40), shown(200, 60));
    println!(
        "Pixel protocols at a {}x{} px cell: the page at 1:1, {}x{} px at 120x40 (the rows past \
         the pane cut) and {}x{} px at 200x60. Frames are the demo catalog scrolled 300 px at a time.",
        CELL.0, CELL.1, small.0, small.1, large.0, large.1
    );
    Ok(())
}

/// Counts what a terminal would receive.
struct CountingWriter(std::rc::Rc<std::cell::Cell<usize>>);

impl std::io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.set(self.0.get() + buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
