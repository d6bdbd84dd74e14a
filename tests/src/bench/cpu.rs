//! Where Chromium's CPU goes: the CPU time (user and system, from `/proc/<pid>/stat`) of every
//! Chromium process this benchmark launched, by the kind of process (`--type=`): the browser
//! (DevTools, the PNG encoding of a screenshot), renderers (the page, the probe's scripts, its
//! frames), the GPU process (the display compositor, drawing frames in software and copying
//! them), utilities (the network service), zygotes (where renderers that ended left their time).
//!
//! A process's figure counts its children that ended (`cutime`, `cstime`): a renderer of a
//! disposed context is reaped by its zygote, so its time stays in the total instead of leaving
//! with it; it is then the zygote's.

use std::collections::{BTreeMap, HashMap, HashSet};

/// Every Chromium process this benchmark launched: each browser (its profile names this process)
/// and everything in its process group (renderers, GPU, network and storage services).
pub fn chromium_processes() -> Vec<i32> {
    processes().into_iter().map(|(pid, _)| pid).collect()
}

/// The bench's Chromium processes with their command lines.
fn processes() -> Vec<(i32, String)> {
    let marker = format!("browserenv-{}-", std::process::id());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let all: Vec<(i32, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&cmdline).to_string()))
        })
        .collect();
    let browsers: HashSet<i32> = all
        .iter()
        .filter(|(_, cmdline)| cmdline.contains(&marker) && !cmdline.contains("--type="))
        .map(|(pid, _)| *pid)
        .collect();
    all.into_iter()
        // SAFETY: getpgid on an arbitrary pid only reads.
        .filter(|(pid, _)| browsers.contains(&unsafe { libc::getpgid(*pid) }))
        .collect()
}

/// A process's kind, from its `--type=` switch (Chromium's helpers rewrite their command line
/// into one string: the arguments are separated by spaces or NULs).
fn kind(cmdline: &str) -> &'static str {
    let switch = cmdline
        .split(['\0', ' '])
        .find_map(|arg| arg.strip_prefix("--type="))
        .unwrap_or("");
    match switch {
        "" => "browser",
        "renderer" => "renderer",
        "gpu-process" => "gpu",
        "zygote" => "zygote",
        "utility" => "utility",
        _ => "other",
    }
}

/// A process's parent, and the clock ticks of CPU it and its ended children used (utime, stime,
/// cutime, cstime).
fn ticks(pid: i32) -> Option<(i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may hold spaces): the parent is the 2nd; utime, stime,
    // cutime and cstime are the 12th to the 15th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let parent = fields.get(1)?.parse().ok()?;
    let ticks = (11..15)
        .map(|at| fields.get(at)?.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some((parent, ticks))
}

fn ms_per_tick() -> f64 {
    // SAFETY: sysconf only reads a constant.
    1000.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// The CPU time of each Chromium process running now (in clock ticks), with its kind and parent.
pub struct CpuReading(HashMap<i32, Process>);

struct Process {
    kind: &'static str,
    parent: i32,
    ticks: u64,
}

/// CPU milliseconds spent between two readings, by kind of process.
#[derive(Debug, Clone, Default)]
pub struct CpuSpent {
    pub by_kind: BTreeMap<&'static str, f64>,
}

impl CpuSpent {
    pub fn total(&self) -> f64 {
        self.by_kind.values().sum()
    }

    /// The same, divided among `count` steps (or resets).
    pub fn per(&self, count: usize) -> CpuSpent {
        let count = count.max(1) as f64;
        CpuSpent {
            by_kind: self
                .by_kind
                .iter()
                .map(|(kind, ms)| (*kind, ms / count))
                .collect(),
        }
    }

    /// `browser 3.1, renderer 2.0, ...`: the kinds that spent any, largest first.
    pub fn breakdown(&self) -> String {
        let mut kinds: Vec<(&str, f64)> = self
            .by_kind
            .iter()
            .filter(|(_, ms)| **ms >= 0.05)
            .map(|(kind, ms)| (*kind, *ms))
            .collect();
        kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
        kinds
            .iter()
            .map(|(kind, ms)| format!("{kind} {ms:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl CpuReading {
    pub fn now() -> CpuReading {
        CpuReading(
            processes()
                .into_iter()
                .filter_map(|(pid, cmdline)| {
                    let (parent, ticks) = ticks(pid)?;
                    let kind = kind(&cmdline);
                    Some((
                        pid,
                        Process {
                            kind,
                            parent,
                            ticks,
                        },
                    ))
                })
                .collect(),
        )
    }

    /// What the Chromium processes spent since this reading. A process that ended since left its
    /// time with its parent (counted, as the parent's kind) when the parent is one of ours and
    /// still there; one that took its time elsewhere (a browser, with its whole tree) makes the
    /// figure None, so that it prints as unknown rather than short (as a round's "-11.0" was).
    pub fn spent_since(&self) -> Option<CpuSpent> {
        let later = CpuReading::now();
        let ended: Vec<&Process> = self
            .0
            .iter()
            .filter(|(pid, _)| !later.0.contains_key(pid))
            .map(|(_, process)| process)
            .collect();
        if ended
            .iter()
            .any(|process| !later.0.contains_key(&process.parent))
        {
            return None;
        }
        let mut spent = CpuSpent::default();
        let per_tick = ms_per_tick();
        for (pid, process) in &later.0 {
            let before = self.0.get(pid).map_or(0, |process| process.ticks);
            *spent.by_kind.entry(process.kind).or_default() +=
                process.ticks.saturating_sub(before) as f64 * per_tick;
        }
        // A process that ended is now in its parent's time, whole: what it had used before this
        // reading comes off again (and off the parent's kind, where it was added).
        for process in ended {
            let parent = later.0[&process.parent].kind;
            *spent.by_kind.entry(parent).or_default() -= process.ticks as f64 * per_tick;
        }
        Some(spent)
    }

    /// Milliseconds of CPU the Chromium processes used since this reading (`spent_since`).
    pub fn cpu_ms_since(&self) -> Option<f64> {
        self.spent_since().map(|spent| spent.total())
    }
}

/// CPU time this process (the server and the bench's clients) used so far, in milliseconds.
pub fn own_cpu_ms() -> f64 {
    let pid = std::process::id() as i32;
    // Without cutime and cstime: our children are the browsers, counted apart.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = (11..13)
        .filter_map(|at| fields.get(at)?.parse::<u64>().ok())
        .sum();
    ticks as f64 * ms_per_tick()
}

/// CPU milliseconds used so far by `root` and every process under it (with their ended
/// children's), for a server of another make (the seed's stand-in, `seed.rs`).
pub fn tree_cpu_ms(root: i32) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return f64::NAN;
    };
    let parents: HashMap<i32, (i32, u64)> = entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            Some((pid, ticks(pid)?))
        })
        .collect();
    let mut total = 0;
    for (pid, (_, ticks)) in &parents {
        let mut at = *pid;
        // Up the parents until the root, or the top.
        for _ in 0..64 {
            if at == root {
                total += ticks;
                break;
            }
            match parents.get(&at) {
                Some((parent, _)) if *parent > 1 => at = *parent,
                _ => break,
            }
        }
    }
    total as f64 * ms_per_tick()
}
