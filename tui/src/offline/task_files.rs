//! `browserenv-tui tasks`: a task file checked as the server loads it (`check`), and a task file
//! made into a pack that outlives the web (`snapshot`, docs/archives.md): each task's start page,
//! and its reference solution where the set has one, run live with the server archiving what the
//! pages load; then the task file with each task's `archive` and its start URL as it resolved,
//! beside the archives and the solutions. `browserenv-server --tasks PACK/tasks.jsonl` serves it
//! with no network.

use std::path::{Path, PathBuf};

use anyhow::Context;
use browserenv::{Client, StepResult};
use browserenv_collect::solutions::Solution;
use browserenv_collect::tasks::{Task, TaskSet};
use browserenv_server::archive::ArchiveConfig;
use browserenv_server::environment::TaskCatalog;
use browserenv_server::site::SiteHandle;
use browserenv_server::{ServerConfig, ServerHandle};
use serde_json::{json, Map};

use crate::output::printable;

/// The task file of a pack.
pub const PACK_TASKS: &str = "tasks.jsonl";
/// Its reference solutions, under the name `solutions::beside` gives.
pub const PACK_SOLUTIONS: &str = "tasks-solutions.jsonl";

/// `tasks check FILE`: the summary of a good file, or every problem of a bad one (its archives
/// included: each inside the file's folder, a file).
pub fn check(file: &Path) -> Result<String, String> {
    let catalog = TaskCatalog::load(file, None)?;
    let set = &catalog.tasks;
    let mut categories = std::collections::BTreeMap::new();
    let mut parts = std::collections::BTreeMap::new();
    for task in &set.tasks {
        *categories.entry(task.category).or_insert(0) += 1;
        for part in task.check.parts() {
            *parts.entry(part).or_insert(0) += 1;
        }
    }
    let categories: Vec<String> = categories
        .iter()
        .map(|(category, n)| format!("{n} {}", format!("{category:?}").to_lowercase()))
        .collect();
    let parts: Vec<String> = parts
        .iter()
        .map(|(part, n)| format!("{} {n}", part.name()))
        .collect();
    let archives = set.tasks.iter().filter(|t| t.archive.is_some()).count();
    let archived = match archives {
        0 => String::new(),
        n => format!("; {n} with an archive"),
    };
    Ok(format!(
        "{}: {} tasks, split {:?} ({}); checks: {}{archived}",
        file.display(),
        set.tasks.len(),
        set.name,
        categories.join(", "),
        parts.join(", ")
    ))
}

/// What `snapshot` is asked.
pub struct Snapshot {
    /// The task file.
    pub file: PathBuf,
    /// The pack's folder: new, or empty.
    pub out: PathBuf,
    /// Reference solutions (default: `NAME-solutions.jsonl` beside the file, when there).
    pub solutions: Option<PathBuf>,
    /// The site the tasks' relative start URLs resolve against; without it, the demo site
    /// (`site`), served for the snapshot.
    pub base_url: Option<String>,
    pub site: PathBuf,
    pub chromium: PathBuf,
    /// Each task's archive as a WACZ package (`archives/<task>.wacz`) instead of a WARC file.
    pub wacz: bool,
}

/// What a snapshot did.
#[derive(Debug, Default)]
pub struct SnapshotReport {
    pub tasks: usize,
    /// Tasks whose reference solution ran (and what it earned).
    pub solved: Vec<(String, Option<f64>)>,
    /// Bytes of archives written.
    pub bytes: u64,
    /// Responses left out by the bounds, over all archives.
    pub left_out: u64,
}

/// Run every task live, archiving what its pages load, and write the pack.
pub async fn snapshot(asked: &Snapshot) -> anyhow::Result<SnapshotReport> {
    let mut tasks = TaskSet::load(&asked.file).map_err(anyhow::Error::msg)?;
    // Run live: a task snapshotted again is not answered from its old archive.
    for task in &mut tasks.tasks {
        task.archive = None;
    }
    let solutions_file = asked.solutions.clone().or_else(|| {
        Some(browserenv_collect::solutions::beside(&asked.file)).filter(|s| s.is_file())
    });
    let solutions = match &solutions_file {
        Some(file) => browserenv_collect::solutions::load(file).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    new_pack_folder(&asked.out)?;
    let (server, site, base) = start_archiving(asked, &tasks).await?;
    let run = run_tasks(&server.base_url(), &tasks, &solutions).await;
    // The server's stop writes what its archives still hold.
    server.stop().await?;
    drop(site);
    let (mut archived, mut report) = run?;
    if asked.wacz {
        for (id, file) in &mut archived {
            *file = packed_as_wacz(&asked.out, id, file, &tasks, &base)?;
        }
    }
    write_pack_tasks(&asked.out, &tasks, &archived, &base)?;
    if let Some(file) = &solutions_file {
        let text = std::fs::read_to_string(file)?;
        write_new(&asked.out.join(PACK_SOLUTIONS), &text)?;
    }
    report.tasks = tasks.tasks.len();
    for (_, file) in &archived {
        report.bytes += std::fs::metadata(asked.out.join(file)).map_or(0, |m| m.len());
    }
    // The pack is checked as the server will load it.
    TaskCatalog::load(&asked.out.join(PACK_TASKS), None).map_err(anyhow::Error::msg)?;
    Ok(report)
}

/// Make the pack's folder; one that holds anything already is refused.
fn new_pack_folder(out: &Path) -> anyhow::Result<()> {
    if out
        .read_dir()
        .is_ok_and(|mut entries| entries.next().is_some())
    {
        anyhow::bail!(
            "{} is not empty: a pack is written into a new folder",
            out.display()
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot make {}", out.display()))
}

/// A server that archives what its pages load into the pack's folder, serving the tasks from
/// `--task-base-url` or from the embedded demo site (kept up until it is dropped); with the
/// base URL the tasks' start URLs resolve against.
async fn start_archiving(
    asked: &Snapshot,
    tasks: &TaskSet,
) -> anyhow::Result<(ServerHandle, Option<SiteHandle>, url::Url)> {
    let config = ServerConfig {
        archive: ArchiveConfig {
            record_into: Some(asked.out.clone()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    };
    let Some(base) = &asked.base_url else {
        let started = crate::net::embedded::start_embedded(
            asked.site.clone(),
            asked.chromium.clone(),
            config,
            Some(tasks.clone()),
        )
        .await?;
        let base = url::Url::parse(&started.site.url(""))?;
        return Ok((started.server, Some(started.site), base));
    };
    let base = url::Url::parse(base).with_context(|| format!("--task-base-url {base}"))?;
    let catalog = TaskCatalog {
        tasks: tasks.clone(),
        base_url: Some(base.clone()),
        folder: None,
    };
    let launcher = browserenv_server::chromium::ChromiumLauncher::new(
        browserenv_server::chromium::ChromiumConfig {
            executable: asked.chromium.clone(),
            ..Default::default()
        },
    );
    let config = ServerConfig {
        tasks: Some(std::sync::Arc::new(catalog)),
        ..config
    };
    Ok((
        browserenv_server::start(launcher, config).await?,
        None,
        base,
    ))
}

/// The pack's task file: each task with its archive (`archived`: task id and file) and its
/// start URL as it resolved against `base`.
fn write_pack_tasks(
    out: &Path,
    tasks: &TaskSet,
    archived: &[(String, String)],
    base: &url::Url,
) -> anyhow::Result<()> {
    let mut lines = Vec::new();
    for task in &tasks.tasks {
        let archive = archived
            .iter()
            .find(|(id, _)| id == &task.id)
            .map(|(_, file)| file.clone());
        let packed = Task {
            start_url: task
                .resolve_start_url(Some(base))
                .map_err(anyhow::Error::msg)?,
            archive,
            ..task.clone()
        };
        lines.push(serde_json::to_string(&packed)?);
    }
    write_new(&out.join(PACK_TASKS), &(lines.join("\n") + "\n"))
}

/// The task's archive `file` (in `out`) made a WACZ beside it (its page: the task's start page),
/// the WARC file and its index removed; the WACZ's name in the pack.
fn packed_as_wacz(
    out: &Path,
    id: &str,
    file: &str,
    tasks: &TaskSet,
    base: &url::Url,
) -> anyhow::Result<String> {
    let warc = out.join(file);
    let packed = file
        .strip_suffix(".warc.gz")
        .map(|stem| format!("{stem}.wacz"))
        .ok_or_else(|| anyhow::anyhow!("task {id}: the archive {file} is not a .warc.gz"))?;
    let start = tasks
        .tasks
        .iter()
        .find(|t| t.id == id)
        .and_then(|t| t.resolve_start_url(Some(base)).ok());
    let pages: Vec<browserenv_archive::WaczPage> = start
        .into_iter()
        .map(|url| browserenv_archive::WaczPage {
            url,
            title: id.to_string(),
            date: std::time::SystemTime::now(),
        })
        .collect();
    let name = Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    browserenv_archive::write_wacz(
        &out.join(&packed),
        &format!("task {id}"),
        &[(name, warc.clone())],
        &pages,
        &Default::default(),
    )
    .map_err(|why| anyhow::anyhow!("task {id}: {why}"))?;
    std::fs::remove_file(&warc)?;
    let _ = std::fs::remove_file(browserenv_archive::index_path(&warc));
    Ok(packed)
}

/// Each task from its start page, then its solution's actions; the archive each episode was
/// written into, by task.
async fn run_tasks(
    server: &str,
    tasks: &TaskSet,
    solutions: &[Solution],
) -> anyhow::Result<(Vec<(String, String)>, SnapshotReport)> {
    let mut client = Client::connect(server).await?;
    let mut archived = Vec::new();
    let mut report = SnapshotReport::default();
    for task in &tasks.tasks {
        let mut kwargs = Map::new();
        kwargs.insert("task_id".into(), json!(task.id));
        kwargs.insert("episode_id".into(), json!(task.id));
        let first = client
            .reset_with(kwargs)
            .await
            .with_context(|| format!("task {}: its start page", task.id))?;
        let mut last: StepResult = first.clone();
        let solution = solutions.iter().find(|s| s.task_id == task.id);
        for action in solution.map(|s| s.actions.as_slice()).unwrap_or_default() {
            last = client
                .step(action.clone())
                .await
                .with_context(|| format!("task {}: its solution", task.id))?;
            if last.done {
                break;
            }
        }
        if solution.is_some() {
            report.solved.push((task.id.clone(), last.reward));
        }
        let named = |result: &StepResult| -> Option<(String, u64)> {
            let archive = result.observation.metadata.get("archive")?;
            let file = archive.get("file")?.as_str()?.to_string();
            let left_out = archive["left_out"]["responses"].as_u64().unwrap_or(0);
            Some((file, left_out))
        };
        let Some((file, _)) = named(&first) else {
            anyhow::bail!("task {}: the server archived nothing", task.id);
        };
        report.left_out += named(&last).map_or(0, |(_, n)| n);
        archived.push((task.id.clone(), file));
    }
    client.close().await?;
    Ok((archived, report))
}

/// Write a new file (never over one).
fn write_new(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// A report's lines, as `tasks snapshot` prints them.
pub fn summary(asked: &Snapshot, report: &SnapshotReport) -> Vec<String> {
    let mut lines = vec![format!(
        "{}: {} tasks, {} archives ({} KiB), {} with a reference solution",
        asked.out.display(),
        report.tasks,
        report.tasks,
        report.bytes / 1024,
        report.solved.len()
    )];
    for (id, reward) in &report.solved {
        if *reward != Some(1.0) {
            lines.push(format!(
                "warning: task {id}: its solution earned {} live; the pack records what it did",
                reward.map_or("nothing".to_string(), |r| r.to_string())
            ));
        }
    }
    if report.left_out > 0 {
        lines.push(format!(
            "warning: {} responses were left out by the archive's bounds (BROWSER_ARCHIVE_EPISODE_MB)",
            report.left_out
        ));
    }
    lines.push(format!(
        "serve it with no network: browserenv-server --tasks {}",
        asked.out.join(PACK_TASKS).display()
    ));
    lines
}

/// `tasks check FILE`: the summary on stdout (exit 0), or each problem on stderr (exit 1).
pub fn check_command(file: &Path) -> anyhow::Result<()> {
    match check(file) {
        Ok(summary) => {
            println!("{}", printable(&summary));
            Ok(())
        }
        Err(problems) => {
            for line in problems.lines() {
                eprintln!("{}", printable(line));
            }
            std::process::exit(1);
        }
    }
}

/// `tasks snapshot FILE --out PACK`: the pack written, and its summary.
pub async fn snapshot_command(asked: &Snapshot) -> anyhow::Result<()> {
    let report = snapshot(asked).await?;
    for line in summary(asked, &report) {
        println!("{}", printable(&line));
    }
    Ok(())
}
