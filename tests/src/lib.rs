//! Shared fixtures for the end-to-end tests and the benchmark: an in-process server on real
//! Chromium, the test pages on their own listener, and PNG helpers.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use browserenv::{Client, ResetOptions, StepResult};
use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
use browserenv_server::settings::EnvSettings;
use browserenv_server::site::{serve_dir, SiteHandle};
use browserenv_server::{start, ServerConfig, ServerHandle};

/// The repository's `assets/` folder.
pub fn assets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets")
}

pub fn chromium_path() -> PathBuf {
    std::env::var_os("BROWSER_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Settings for tests: adaptive settle with the seed's bound, short timeouts so failure tests end
/// quickly.
pub fn test_settings() -> EnvSettings {
    EnvSettings {
        action_timeout: Duration::from_secs(3),
        screenshot_timeout: Duration::from_secs(3),
        page_load_timeout: Duration::from_secs(5),
        explicit_wait: Duration::from_millis(200),
        ..EnvSettings::default()
    }
}

/// A server on real Chromium plus the test pages.
pub struct Harness {
    pub server: ServerHandle,
    pub pages: SiteHandle,
}

impl Harness {
    pub async fn start(settings: EnvSettings) -> Harness {
        Self::start_with(ServerConfig {
            settings,
            max_sessions: 4,
            warm_spare: true,
            record_dir: None,
            redact: false,
            token: None,
            tasks: None,
        })
        .await
    }

    pub async fn start_with(config: ServerConfig) -> Harness {
        Self::start_on(None, config).await
    }

    /// A server whose sessions run on the Chromium at `remote` (a DevTools endpoint) when given,
    /// else on browsers it launches.
    pub async fn start_on(remote: Option<String>, config: ServerConfig) -> Harness {
        let launcher = ChromiumLauncher::new(ChromiumConfig {
            executable: chromium_path(),
            remote,
            ..ChromiumConfig::default()
        });
        let server = start(launcher, config).await.expect("server starts");
        let pages = serve_dir(assets_dir().join("pages"))
            .await
            .expect("pages are served");
        Harness { server, pages }
    }

    /// A server with the demo site on its own listener and the bundled demo tasks.
    pub async fn with_demo_tasks(settings: EnvSettings) -> (Harness, SiteHandle) {
        let site = serve_dir(assets_dir().join("site"))
            .await
            .expect("the demo site is served");
        let tasks = browserenv::tasks::TaskSet::load(&assets_dir().join("tasks/demo.jsonl"))
            .expect("the demo tasks load");
        let catalog = browserenv_server::environment::TaskCatalog {
            tasks,
            base_url: Some(url::Url::parse(&site.url("")).expect("site URL")),
        };
        let harness = Self::start_with(ServerConfig {
            settings,
            max_sessions: 4,
            warm_spare: true,
            record_dir: None,
            redact: false,
            token: None,
            tasks: Some(std::sync::Arc::new(catalog)),
        })
        .await;
        (harness, site)
    }

    /// A server that records every session into `dir` (emptied first).
    pub async fn recording(dir: &std::path::Path, settings: EnvSettings, redact: bool) -> Harness {
        let _ = std::fs::remove_dir_all(dir);
        Self::start_with(ServerConfig {
            settings,
            record_dir: Some(dir.to_path_buf()),
            redact,
            ..ServerConfig::default()
        })
        .await
    }

    pub fn page(&self, name: &str) -> String {
        self.pages.url(name)
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.server.base_url())
            .await
            .expect("client connects")
    }

    /// A connected client already reset to the named page.
    pub async fn open(&self, page: &str) -> (Client, StepResult) {
        let mut client = self.client().await;
        let first = client
            .reset(ResetOptions::new(self.page(page)))
            .await
            .expect("reset");
        (client, first)
    }

    pub async fn stop(self) {
        self.server.stop().await.expect("server stops cleanly");
    }
}

/// A decoded screenshot.
pub struct Picture {
    pub width: u32,
    pub height: u32,
    /// RGBA, row-major.
    pub pixels: Vec<u8>,
}

impl Picture {
    pub fn from_base64(data: &str) -> Picture {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("screenshot is base64");
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::ALPHA);
        let mut reader = decoder.read_info().expect("screenshot is a PNG");
        let mut pixels = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut pixels).expect("PNG frame");
        pixels.truncate(info.buffer_size());
        Picture {
            width: info.width,
            height: info.height,
            pixels,
        }
    }

    pub fn rgb(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.width + x) * 4) as usize;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }
}

/// The page title the server reports in observation metadata.
pub fn title(result: &StepResult) -> String {
    result.observation.metadata["title"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
