//! The renderer memory limit (`BROWSER_RENDERER_MEMORY_MB`). A page can allocate until the
//! machine swaps (measured: a renderer passed 4.8 GB of array buffers without stopping), taking
//! every other session with it. Two guards: V8's own heap limit (`--js-flags=--max-old-space-size`,
//! passed at launch, which ends a heap bomb at once), and this watchdog for what lives outside
//! V8's heap (array buffers, images, canvases): every 250 ms it reads each renderer's private
//! resident memory and kills a renderer past the limit. The session then sees `renderer_crashed`,
//! with the reason as its detail. Local browsers only: a remote one is out of our reach.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

const INTERVAL: Duration = Duration::from_millis(250);

/// Why a browser's renderer was killed, if it was; shared with the browser's owner.
pub type KillReport = Arc<Mutex<Option<String>>>;

struct Watched {
    limit_bytes: u64,
    report: KillReport,
}

fn watched() -> &'static Mutex<HashMap<u32, Watched>> {
    static WATCHED: OnceLock<Mutex<HashMap<u32, Watched>>> = OnceLock::new();
    WATCHED.get_or_init(|| {
        std::thread::Builder::new()
            .name("renderer-memory".into())
            .spawn(|| loop {
                std::thread::sleep(INTERVAL);
                enforce();
            })
            .expect("cannot start the renderer memory watchdog");
        Mutex::new(HashMap::new())
    })
}

/// Hold the renderers of the browser `pid` (the leader of their process group) to `limit_mb`.
pub fn watch(pid: u32, limit_mb: u64) -> KillReport {
    let report = KillReport::default();
    if let Ok(mut map) = watched().lock() {
        map.insert(
            pid,
            Watched {
                limit_bytes: limit_mb << 20,
                report: report.clone(),
            },
        );
    }
    report
}

pub fn unwatch(pid: u32) {
    if let Ok(mut map) = watched().lock() {
        map.remove(&pid);
    }
}

fn enforce() {
    let limits: HashMap<u32, (u64, KillReport)> = match watched().lock() {
        Ok(map) if !map.is_empty() => map
            .iter()
            .map(|(pid, w)| (*pid, (w.limit_bytes, w.report.clone())))
            .collect(),
        _ => return,
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Some(group) = process_group(pid) else {
            continue;
        };
        let Some((limit, report)) = limits.get(&group) else {
            continue;
        };
        let Some(used) = private_resident_bytes(pid) else {
            continue;
        };
        if used <= *limit || !is_renderer(pid) {
            continue;
        }
        if let Ok(mut report) = report.lock() {
            *report = Some(format!(
                "the page's renderer used {} MiB, over the limit of {} MiB (BROWSER_RENDERER_MEMORY_MB), and was stopped",
                used >> 20,
                limit >> 20
            ));
        }
        tracing::warn!(
            "killed renderer {pid} of browser {group}: {} MiB over the limit of {} MiB",
            used >> 20,
            limit >> 20
        );
        // SAFETY: a renderer of a browser we launched (same process group).
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
}

/// Field 5 of `/proc/<pid>/stat`.
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// Resident pages not shared with other processes (what the page itself made), from statm.
fn private_resident_bytes(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let mut fields = statm.split_whitespace().skip(1);
    let resident: u64 = fields.next()?.parse().ok()?;
    let shared: u64 = fields.next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(resident.saturating_sub(shared) * page)
}

fn is_renderer(pid: u32) -> bool {
    // Chromium rewrites a renderer's command line as one string of space-separated arguments
    // (its process title), so this looks for the text, not for one NUL-separated argument.
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmdline| String::from_utf8_lossy(&cmdline).contains("--type=renderer"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_measured_and_grouped() {
        let me = std::process::id();
        assert!(process_group(me).is_some());
        assert!(private_resident_bytes(me).unwrap() > 0);
        assert!(!is_renderer(me));
    }
}
