//! Real terminals for the UI's tests: an X server (Xvfb), xterm and kitty windows running the UI,
//! window screenshots (ImageMagick `import`), mouse clicks (xdotool), and the similarity measure
//! that decides whether the picture on screen is the page.
//!
//! Everything here runs real programs; a missing one is a failed test with the package to install
//! (`make test` and `.ci/run` install them).

#![allow(dead_code)]

use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use image::{GrayImage, RgbImage};

/// The UI binary under test.
pub const TUI: &str = env!("CARGO_BIN_EXE_browserenv-tui");

pub fn require(program: &str, package: &str) {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{program} is missing: sudo apt-get install {package} (make test installs it)"
    );
}

/// Where a test keeps what it leaves behind for a person to look at (screenshots, logs).
pub fn artifacts(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/terminal-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An X server of the test's own, on a display number it picked itself (`-displayfd`).
pub struct Display {
    child: Child,
    pub name: String,
}

impl Display {
    pub fn start() -> Display {
        require("Xvfb", "xvfb");
        let mut fds = [0; 2];
        // SAFETY: a pipe for Xvfb to write its display number into.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let child = Command::new("Xvfb")
            .args([
                "-screen",
                "0",
                "2400x1500x24",
                "-nolisten",
                "tcp",
                // An X server resets when its last client leaves, and refuses connections
                // meanwhile: between two terminals of a test there is no client.
                "-noreset",
                "-displayfd",
            ])
            .arg(fds[1].to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts");
        // SAFETY: our ends of the pipe; the write end stays open only in Xvfb.
        unsafe { libc::close(fds[1]) };
        let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut number = String::new();
        let mut byte = [0u8; 1];
        while reader.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
            number.push(byte[0] as char);
        }
        assert!(!number.is_empty(), "Xvfb reported no display");
        Display {
            child,
            name: format!(":{}", number.trim()),
        }
    }

    pub fn alive(&self) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(self.child.id() as libc::pid_t, 0) == 0 }
    }

    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("DISPLAY", &self.name);
        command
    }

    /// A window screenshot.
    pub fn screenshot(&self, window: &str) -> RgbImage {
        let output = self
            .command("import")
            .args(["-window", window, "png:-"])
            .output()
            .expect("ImageMagick's import runs");
        image::load_from_memory(&output.stdout)
            .unwrap_or_else(|err| {
                panic!(
                    "import gave no picture: {err}: {}",
                    String::from_utf8_lossy(&output.stderr)
                )
            })
            .to_rgb8()
    }

    pub fn xdotool(&self, args: &[&str]) -> String {
        let output = self
            .command("xdotool")
            .args(args)
            .output()
            .expect("xdotool");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emulator {
    /// `xterm -ti vt340`: sixel graphics, SGR-Pixels mouse.
    Xterm,
    /// kitty (Debian 12: 0.26.5), software GL.
    Kitty,
}

impl Emulator {
    pub fn name(self) -> &'static str {
        match self {
            Emulator::Xterm => "xterm",
            Emulator::Kitty => "kitty",
        }
    }
}

/// A terminal window running the UI.
pub struct Window {
    child: Child,
    pub id: String,
    pub log: PathBuf,
}

impl Window {
    /// Open `emulator` at `columns` x `rows` running the UI with `args` (`--log` is added).
    pub fn open(
        display: &Display,
        emulator: Emulator,
        (columns, rows): (u16, u16),
        dir: &Path,
        args: &[String],
    ) -> Window {
        // A title of its own: a window closed just before may still be found by the same name.
        static OPENED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let title = format!(
            "browserenv-test-{}-{}-{}",
            std::process::id(),
            dir.file_name().unwrap().to_string_lossy(),
            OPENED.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let log = dir.join("tui.log");
        let _ = std::fs::remove_file(&log);
        let mut tui: Vec<String> = vec![TUI.into(), "--log".into(), log.display().to_string()];
        tui.extend(args.iter().cloned());
        let mut command = match emulator {
            Emulator::Xterm => {
                require("xterm", "xterm");
                let mut command = display.command("xterm");
                command
                    .args(["-ti", "vt340", "-geometry"])
                    .arg(format!("{columns}x{rows}+0+0"))
                    .args(["-T", &title, "-e"]);
                command
            }
            Emulator::Kitty => {
                require("kitty", "kitty");
                let mut command = display.command("kitty");
                command
                    .args(["--config", "NONE", "-o"])
                    .arg(format!("initial_window_width={columns}c"))
                    .arg("-o")
                    .arg(format!("initial_window_height={rows}c"))
                    .args(["-o", "remember_window_size=no", "-T", &title])
                    .env("LIBGL_ALWAYS_SOFTWARE", "1");
                command
            }
        };
        let stderr =
            std::fs::File::create(dir.join(format!("{}.stderr", emulator.name()))).unwrap();
        let child = command
            .args(&tui)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|err| panic!("{} starts: {err}", emulator.name()));
        let deadline = Instant::now() + Duration::from_secs(30);
        let id = loop {
            let found = display.xdotool(&["search", "--name", &title]);
            if let Some(id) = found.lines().next().filter(|l| !l.is_empty()) {
                break id.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "no {} window (X server {} alive: {}, {} descriptors open, sockets {:?}): {}",
                emulator.name(),
                display.name,
                display.alive(),
                std::fs::read_dir(format!("/proc/{}/fd", display.child.id()))
                    .map(|d| d.count())
                    .unwrap_or(0),
                std::fs::read_dir("/tmp/.X11-unix")
                    .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
                    .unwrap_or_default(),
                std::fs::read_to_string(dir.join(format!("{}.stderr", emulator.name())))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Window { child, id, log }
    }

    /// The UI's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last log line starting with `what: `, once there is one.
    pub fn wait_log(&self, what: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let log = self.log();
            let needle = format!("{what}: ");
            if let Some(line) = log.lines().rev().find_map(|l| l.split_once(&needle)) {
                return line.1.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "the UI logged no {what:?} line:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn running(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the UI says its picture is (its `picture:` log line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub column: u32,
    pub row: u32,
    pub columns: u32,
    pub rows: u32,
    pub width: u32,
    pub height: u32,
}

impl Placement {
    /// `halfblocks at cell 4,1 size 98x37 cells, 784x592 px, region 0,0 800x600`
    pub fn parse(line: &str) -> Placement {
        let numbers: Vec<u32> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        let [column, row, columns, rows, width, height, ..] = numbers[..] else {
            panic!("not a picture line: {line}");
        };
        Placement {
            column,
            row,
            columns,
            rows,
            width,
            height,
        }
    }
}

/// The cell size the UI's `graphics:` line reports (`cell 6x13 px`).
pub fn cell_size(graphics: &str) -> (u32, u32) {
    let after = graphics.split("cell ").nth(1).expect("a cell size");
    let (w, rest) = after.split_once('x').unwrap();
    let h: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (w.parse().unwrap(), h.parse().unwrap())
}

pub fn gray(image: &RgbImage) -> GrayImage {
    image::DynamicImage::ImageRgb8(image.clone()).to_luma8()
}

/// Normalized cross-correlation of two same-size grey images: 1 for the same picture (whatever
/// its brightness and contrast), about 0 for unrelated ones, 0 for a flat (blank) one.
pub fn ncc(a: &GrayImage, b: &GrayImage) -> f64 {
    assert_eq!(a.dimensions(), b.dimensions());
    let n = f64::from(a.width() * a.height());
    let mean = |img: &GrayImage| img.pixels().map(|p| f64::from(p.0[0])).sum::<f64>() / n;
    let (ma, mb) = (mean(a), mean(b));
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (pa, pb) in a.pixels().zip(b.pixels()) {
        let (da, db) = (f64::from(pa.0[0]) - ma, f64::from(pb.0[0]) - mb);
        cov += da * db;
        va += da * da;
        vb += db * db;
    }
    if va == 0.0 || vb == 0.0 {
        return 0.0;
    }
    cov / (va * vb).sqrt()
}

/// NCC of `expected` against the part of `screen` at `(x, y)`, on every `step`-th pixel.
fn ncc_at(screen: &GrayImage, expected: &GrayImage, (x, y): (u32, u32), step: usize) -> f64 {
    let (w, h) = expected.dimensions();
    let samples = || {
        (0..h).step_by(step).flat_map(move |j| {
            (0..w).step_by(step).map(move |i| {
                (
                    f64::from(screen.get_pixel(x + i, y + j).0[0]),
                    f64::from(expected.get_pixel(i, j).0[0]),
                )
            })
        })
    };
    let (mut n, mut sa, mut sb) = (0.0, 0.0, 0.0);
    for (a, b) in samples() {
        n += 1.0;
        sa += a;
        sb += b;
    }
    let (ma, mb) = (sa / n, sb / n);
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (a, b) in samples() {
        cov += (a - ma) * (b - mb);
        va += (a - ma) * (a - ma);
        vb += (b - mb) * (b - mb);
    }
    if va == 0.0 || vb == 0.0 {
        return 0.0;
    }
    cov / (va * vb).sqrt()
}

/// Find `expected` in `screen` near `around` (the picture's corner by the UI's cell geometry;
/// terminals add a border of a few pixels): the best similarity and where.
pub fn locate(screen: &GrayImage, expected: &GrayImage, around: (u32, u32)) -> (f64, (u32, u32)) {
    let (w, h) = expected.dimensions();
    // The likely borders first (kitty has none, xterm two pixels), then the rest.
    let mut offsets = vec![(0, 0), (2, 2), (1, 1)];
    offsets.extend((0..=8u32).flat_map(|dy| (0..=8u32).map(move |dx| (dx, dy))));
    let mut best = (f64::MIN, around);
    for (dx, dy) in offsets {
        let at = (around.0 + dx, around.1 + dy);
        if at.0 + w > screen.width() || at.1 + h > screen.height() {
            continue;
        }
        // Every sixth pixel is enough to find the offset; the score is then taken whole.
        let score = ncc_at(screen, expected, at, 6);
        if score > best.0 {
            best = (score, at);
        }
        if score > 0.99 {
            break;
        }
    }
    if best.0 == f64::MIN {
        return (0.0, around);
    }
    (ncc_at(screen, expected, best.1, 1), best.1)
}

/// What a half-block picture of `page` looks like at `placement`: two picture pixels per cell,
/// each a half cell tall.
pub fn half_block_look(page: &RgbImage, placement: &Placement, cell: (u32, u32)) -> RgbImage {
    let small = image::imageops::resize(
        page,
        placement.columns,
        placement.rows * 2,
        image::imageops::FilterType::Triangle,
    );
    image::imageops::resize(
        &small,
        placement.columns * cell.0,
        placement.rows * cell.1,
        image::imageops::FilterType::Nearest,
    )
}
