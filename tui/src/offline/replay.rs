//! `browserenv-tui replay DIR`: re-run every recorded episode against a fresh environment and
//! report, step by step, where the URL or the screenshot diverged from the recording. A recording
//! with web archives (`--archive`) replays offline: each episode is answered from its own archive
//! (docs/archives.md), so a divergence is the agent's or the page's code, never the site's
//! changes; `--live` replays against the site.

use std::path::{Path, PathBuf};

use browserenv::models::BrowserAction;
use browserenv::{Client, ResetOptions};
use browserenv_collect::trajectory::{read, read_frame, StepRecord};
use image::DynamicImage;

use crate::graphics::picture::decode;

/// Screenshots whose differing pixels stay under this fraction count as the same picture.
pub const DEFAULT_TOLERANCE: f64 = 0.01;

/// The fraction of pixels that differ (any channel by more than 16 levels) between two pictures;
/// 1.0 when their sizes differ.
pub fn difference(a: &DynamicImage, b: &DynamicImage) -> f64 {
    let (a, b) = (a.to_rgb8(), b.to_rgb8());
    if a.dimensions() != b.dimensions() {
        return 1.0;
    }
    let differing = a
        .pixels()
        .zip(b.pixels())
        .filter(|(p, q)| p.0.iter().zip(q.0.iter()).any(|(x, y)| x.abs_diff(*y) > 16))
        .count();
    differing as f64 / f64::from(a.width() * a.height()).max(1.0)
}

/// Recorded URLs point at the origin the recording was made on; an embedded replay serves the
/// demo site on a new port. This maps one origin onto the other.
#[derive(Debug, Clone, Default)]
pub struct OriginMap {
    pub from: Option<String>,
    pub to: Option<String>,
}

impl OriginMap {
    pub fn apply(&self, url: &str) -> String {
        match (&self.from, &self.to) {
            (Some(from), Some(to)) if url.starts_with(from.as_str()) => {
                format!("{to}{}", &url[from.len()..])
            }
            _ => url.to_string(),
        }
    }
}

pub fn origin(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    Some(parsed.origin().ascii_serialization())
}

/// What `replay` is asked: the recording, where to run it, how much of a screenshot may differ.
pub struct Asked {
    pub dir: PathBuf,
    /// Replay against this server (default: an embedded one).
    pub server: Option<String>,
    /// The token for `server`.
    pub token: Option<String>,
    /// An embedded server's demo site and Chromium.
    pub site: PathBuf,
    pub chromium: PathBuf,
    /// Against the live site even when the recording has archives.
    pub live: bool,
    pub tolerance: f64,
}

/// `replay DIR`: offline from the recording's archives when it has them (an embedded server
/// answering from them), else (or `live`) against `server` or an embedded server and the demo
/// site. Prints the report; returns whether anything diverged.
pub async fn command(asked: &Asked) -> anyhow::Result<bool> {
    use crate::net::embedded::{embedded_token, start_embedded};
    use browserenv_server::ServerConfig;
    let Asked {
        dir,
        server,
        live,
        tolerance,
        ..
    } = asked;
    let (dir, live, tolerance) = (dir.as_path(), *live, *tolerance);
    let recording = read(dir)?;
    let archived = recording.episodes.iter().any(|e| e.archive.is_some());
    let token = embedded_token();
    let outcome = if archived && !live && server.is_none() {
        let config = ServerConfig {
            token: Some(token.clone()),
            archive: browserenv_server::archive::ArchiveConfig {
                dir: Some(dir.to_path_buf()),
                ..Default::default()
            },
            ..ServerConfig::default()
        };
        let chromium = browserenv_server::chromium::ChromiumConfig {
            executable: asked.chromium.clone(),
            replays: true,
            ..Default::default()
        };
        let launcher = browserenv_server::chromium::ChromiumLauncher::new(chromium);
        let embedded = browserenv_server::start(launcher, config).await?;
        let outcome = replay_offline(dir, &embedded.base_url(), Some(&token), tolerance).await;
        embedded.stop().await?;
        outcome
    } else if let Some(server) = server {
        replay(dir, server, asked.token.as_deref(), tolerance, None).await
    } else {
        let site = asked.site.clone();
        let config = ServerConfig {
            token: Some(token.clone()),
            ..ServerConfig::default()
        };
        let started = start_embedded(site, asked.chromium.clone(), config, None).await?;
        let origin = origin(&started.site.url(""));
        let server = started.server.base_url();
        let outcome = replay(dir, &server, Some(&token), tolerance, origin).await;
        started.server.stop().await?;
        outcome
    };
    let (lines, diverged) = outcome?;
    // The lines quote the recording (episode ids, URLs, typed text) and the server.
    for line in lines {
        println!("{}", crate::output::printable(&line));
    }
    Ok(diverged)
}

/// Replay one recording against the live site; returns the report lines and whether anything
/// diverged.
pub async fn replay(
    dir: &Path,
    server: &str,
    token: Option<&str>,
    tolerance: f64,
    site_origin: Option<String>,
) -> anyhow::Result<(Vec<String>, bool)> {
    replay_with(dir, server, token, tolerance, Against::Live(site_origin)).await
}

/// Replay one recording from its episodes' archives on `server` (whose `--archive-dir` is the
/// recording's folder); returns the report lines and whether anything diverged. An episode
/// recorded without an archive is reported, not replayed, and counts as diverged.
pub async fn replay_offline(
    dir: &Path,
    server: &str,
    token: Option<&str>,
    tolerance: f64,
) -> anyhow::Result<(Vec<String>, bool)> {
    replay_with(dir, server, token, tolerance, Against::Archives).await
}

/// What the episodes are replayed against.
enum Against {
    /// The site, its recorded origin mapped onto this one (an embedded demo site's).
    Live(Option<String>),
    /// Each episode's own archive.
    Archives,
}

async fn replay_with(
    dir: &Path,
    server: &str,
    token: Option<&str>,
    tolerance: f64,
    against: Against,
) -> anyhow::Result<(Vec<String>, bool)> {
    let recording = read(dir)?;
    let mut lines: Vec<String> = recording
        .problems
        .iter()
        .map(|p| format!("warning: {p}"))
        .collect();
    let mut diverged = false;
    let (mut episodes, mut steps_total) = (0, 0);
    for episode_id in recording.episode_ids() {
        let steps = recording.episode_steps(&episode_id);
        let Some(first) = steps.first() else { continue };
        let mut options = ResetOptions::new(first.url.clone());
        let origins = match &against {
            Against::Live(site_origin) => OriginMap {
                from: origin(&first.url).filter(|_| site_origin.is_some()),
                to: site_origin.clone(),
            },
            Against::Archives => {
                let episode = recording
                    .episodes
                    .iter()
                    .find(|e| e.episode_id == episode_id);
                let Some(archive) = episode.and_then(|e| e.archive.as_ref()) else {
                    lines.push(format!(
                        "episode {episode_id}: recorded without an archive: not replayed offline \
                         (replay it with --live)"
                    ));
                    diverged = true;
                    continue;
                };
                options
                    .extra
                    .insert("archive".into(), archive.file.clone().into());
                OriginMap::default()
            }
        };
        episodes += 1;
        let mut client = Client::connect_with_token(server, token).await?;
        let start = origins.apply(&first.url);
        options.start_url = start.clone();
        let reset = client.reset(options).await?;
        lines.push(format!(
            "episode {episode_id} ({} steps) from {}",
            steps.len(),
            first.url
        ));
        if reset.observation.url != start {
            lines.push(format!(
                "  reset: url differs: recorded {}, replayed {}",
                first.url, reset.observation.url
            ));
            diverged = true;
        }
        for step in steps {
            steps_total += 1;
            let (line, differs) = replay_step(&mut client, dir, step, &origins, tolerance).await;
            diverged |= differs;
            lines.push(line);
        }
        let _ = client.close().await;
    }
    lines.push(format!(
        "replayed {episodes} episode(s), {steps_total} step(s): {}",
        if diverged {
            "diverged (see above)"
        } else {
            "no divergence"
        }
    ));
    Ok((lines, diverged))
}

async fn replay_step(
    client: &mut Client,
    dir: &Path,
    step: &StepRecord,
    origins: &OriginMap,
    tolerance: f64,
) -> (String, bool) {
    let action: BrowserAction = match BrowserAction::from_value(&step.action) {
        Ok(action) => action,
        Err(errors) => {
            return (
                format!(
                    "  step {}: the recorded action is invalid: {}",
                    step.step, errors[0]
                ),
                true,
            )
        }
    };
    let described = crate::command::describe(&action);
    let secret = action
        .action
        .secret_text()
        .is_some_and(browserenv::secrets::is_hidden);
    let result = match client.step(action).await {
        Ok(result) => result,
        Err(err) => {
            return (
                format!("  step {} {described}: failed: {err}", step.step),
                true,
            )
        }
    };
    let mut problems = Vec::new();
    if secret {
        problems.push("typed a secret's placeholder (the value was never recorded)".to_string());
    }
    let expected = origins.apply(&step.next_url);
    if result.observation.url != expected {
        problems.push(format!(
            "url: recorded {expected}, replayed {}",
            result.observation.url
        ));
    }
    if result.observation.error != step.error {
        problems.push(format!(
            "error: recorded {:?}, replayed {:?}",
            step.error, result.observation.error
        ));
    }
    match (
        recorded_picture(dir, &step.next_file_name),
        decode(&result.observation.screenshot),
    ) {
        (Ok(Some(recorded)), Ok(replayed)) => {
            let share = difference(&recorded, &replayed);
            if share > tolerance {
                problems.push(format!(
                    "screenshot: {:.1}% of pixels differ (tolerance {:.1}%)",
                    share * 100.0,
                    tolerance * 100.0
                ));
            }
        }
        (Ok(Some(_)), Err(err)) => problems.push(format!("screenshot: replay gave none ({err})")),
        (Ok(None), _) => {}
        (Err(why), _) => problems.push(why),
    }
    if problems.is_empty() {
        (format!("  step {} {described}: same", step.step), false)
    } else {
        (
            format!("  step {} {described}: {}", step.step, problems.join("; ")),
            true,
        )
    }
}

/// The frame a step recorded, read under the trajectory's rule (`read_frame`: a recording is
/// untrusted input, nothing outside its folder is read); `None` when it recorded none.
fn recorded_picture(dir: &Path, name: &str) -> Result<Option<DynamicImage>, String> {
    if name.is_empty() {
        return Ok(None);
    }
    let bytes = read_frame(dir, name).map_err(|err| err.to_string())?;
    image::load_from_memory(&bytes)
        .map(Some)
        .map_err(|err| format!("screenshot {name} is not a picture: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    #[test]
    fn difference_counts_clearly_changed_pixels() {
        let white = DynamicImage::ImageRgb8(RgbImage::from_pixel(10, 10, Rgb([255, 255, 255])));
        let mut changed = white.to_rgb8();
        for x in 0..10 {
            changed.put_pixel(x, 0, Rgb([0, 0, 0]));
        }
        changed.put_pixel(0, 5, Rgb([250, 250, 250])); // within the noise threshold
        assert_eq!(difference(&white, &white), 0.0);
        assert!((difference(&white, &DynamicImage::ImageRgb8(changed)) - 0.1).abs() < 1e-9);
        let small = DynamicImage::ImageRgb8(RgbImage::new(5, 5));
        assert_eq!(difference(&white, &small), 1.0);
    }

    #[test]
    fn replay_reads_no_frame_from_outside_the_recording() {
        use std::os::unix::fs::symlink;
        let base = std::env::temp_dir().join(format!(
            "browserenv-replay-frames-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let dir = base.join("rec");
        std::fs::create_dir_all(dir.join("screenshots")).unwrap();
        let mut png = Vec::new();
        DynamicImage::ImageRgb8(RgbImage::new(4, 4))
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let own = browserenv_collect::trajectory::frame_name(&png);
        std::fs::write(dir.join(&own), &png).unwrap();
        std::fs::write(base.join("outside.png"), &png).unwrap();
        let linked = format!("screenshots/{}.png", "ef".repeat(32));
        symlink(base.join("outside.png"), dir.join(&linked)).unwrap();

        assert!(recorded_picture(&dir, &own).unwrap().is_some());
        assert!(recorded_picture(&dir, "").unwrap().is_none());
        for name in [
            "../outside.png",
            "/etc/passwd",
            "../../../../../../etc/passwd",
        ] {
            let why = recorded_picture(&dir, name).unwrap_err();
            assert!(
                why.starts_with("screenshot name") && why.contains("is refused"),
                "{why}"
            );
        }
        let why = recorded_picture(&dir, &linked).unwrap_err();
        assert!(why.contains("is refused: it is a symlink"), "{why}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn origins_map_onto_the_new_site() {
        let map = OriginMap {
            from: Some("http://127.0.0.1:4000".into()),
            to: Some("http://127.0.0.1:5000".into()),
        };
        assert_eq!(
            map.apply("http://127.0.0.1:4000/a.html?q=1"),
            "http://127.0.0.1:5000/a.html?q=1"
        );
        assert_eq!(map.apply("https://example.com/"), "https://example.com/");
        assert_eq!(
            origin("http://127.0.0.1:4000/x").as_deref(),
            Some("http://127.0.0.1:4000")
        );
    }
}
