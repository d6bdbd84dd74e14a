//! Web archives of episodes (docs/archives.md): what an episode's pages load, recorded into a WARC
//! file (`--archive`), and episodes answered entirely from one (a task line's `archive`, a reset's
//! `archive` option), with no network. The format and the matching rules are the
//! `browserenv-archive` crate's; here are the server's side of them: the settings, where files go,
//! what a reset asks for (`Archives::plan`), an episode's work (`EpisodeArchive`), the page's clock
//! in a replay. The browser's part, DevTools request interception, is `server/src/chromium/intercept/archive.rs`.

pub mod record;
pub mod replay;
mod settings;

use std::collections::{HashSet, VecDeque};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use browserenv_archive::{resolve_inside, ArchiveInfo, Catalog, ARCHIVES_DIR};
use browserenv_collect::tasks::Task;
use serde_json::{Map, Value};

use browserenv::secrets::Secrets;
use record::{ArchiveFiles, Recording};
use replay::Replaying;

pub use settings::{ArchiveArgs, ArchiveConfig, ArchiveLimits, TypedSecrets};

/// An episode's work with an archive, shared by the environment and the browser's interception.
#[derive(Clone)]
pub enum Work {
    Record(Arc<Recording>),
    Replay(Arc<Replaying>),
}

/// What a reset asked of archives.
pub enum Plan {
    /// Record what the episode's pages load (`--archive`).
    Record,
    /// Answer the episode from this archive, opened already; `name` as the reset gave it.
    Replay { name: String, archive: Arc<Catalog> },
}

impl Plan {
    /// Where the episode starts when the reset names no start URL: where the recording did.
    pub fn start_url(&self) -> Option<&str> {
        match self {
            Plan::Replay { archive, .. } => archive.info.start_url.as_deref(),
            Plan::Record => None,
        }
    }
}

/// Archives opened lately: a task set's resets open the same few files again and again. At
/// most this many, holding at most this many entries together (their indexes; bodies are read
/// by each episode as its pages ask).
const ARCHIVES_KEPT: usize = 16;
const ENTRIES_KEPT: usize = 2_000_000;

/// An archive opened lately: its path, its file's length and time of change, what it holds.
type ReadLately = (PathBuf, u64, SystemTime, Arc<Catalog>);

/// The server's archives: the settings, the writer thread of recorded ones, those read lately.
pub struct Archives {
    config: ArchiveConfig,
    server_port: Option<u16>,
    files: Option<ArchiveFiles>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    read: Mutex<VecDeque<ReadLately>>,
    /// Files handed out to recordings by this server: two sessions may give one episode id.
    names: Mutex<HashSet<PathBuf>>,
}

impl Archives {
    /// The archives of a server listening on `server_port`; with `record_into`, its `archives/`
    /// folder is made (readable by its owner only) and the writer thread started.
    pub fn start(config: ArchiveConfig, server_port: Option<u16>) -> anyhow::Result<Archives> {
        use anyhow::Context;
        let (files, writer) = match &config.record_into {
            Some(dir) => {
                let folder = dir.join(ARCHIVES_DIR);
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&folder)
                    .with_context(|| format!("cannot make {}", folder.display()))?;
                let (files, writer) = ArchiveFiles::start()?;
                (Some(files), Some(writer))
            }
            None => (None, None),
        };
        Ok(Archives {
            config,
            server_port,
            files,
            writer: Mutex::new(writer),
            read: Mutex::new(VecDeque::new()),
            names: Mutex::new(HashSet::new()),
        })
    }

    pub fn config(&self) -> &ArchiveConfig {
        &self.config
    }

    /// What this reset does with archives: answer it from the task's archive (resolved in
    /// `task_folder`) or from the `archive` option's (in `--archive-dir`), record it (`--archive`),
    /// or nothing. A bad name or a bad archive is an error here, before the reset touches the
    /// episode that runs. The archive is read on a thread for blocking work: gunzipping and
    /// parsing up to `BROWSER_ARCHIVE_EPISODE_MB` would stop every other session on this
    /// runtime's worker meanwhile.
    pub async fn plan(
        self: &Arc<Self>,
        kwargs: &Map<String, Value>,
        task: Option<&Task>,
        task_folder: Option<&Path>,
    ) -> Result<Option<Plan>, String> {
        let asked = match kwargs.get("archive") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.as_str()),
            Some(other) => return Err(format!("archive must be a string, got {other}")),
        };
        let (folder, name) = match (task.and_then(|t| t.archive.as_deref()), asked) {
            (Some(_), Some(_)) => {
                return Err("a task runs from its own archive: leave archive out".into())
            }
            (Some(name), None) => {
                let folder = task_folder.ok_or("the task's archive has no task file to be in")?;
                (folder.to_path_buf(), name)
            }
            (None, Some(name)) => {
                let folder = self.config.dir.clone().ok_or(
                    "this server has no archives to replay (start it with --archive-dir DIR)",
                )?;
                (folder, name)
            }
            (None, None) if self.files.is_some() => return Ok(Some(Plan::Record)),
            (None, None) => return Ok(None),
        };
        let name = name.to_string();
        let (archives, asked) = (Arc::clone(self), name.clone());
        let archive = tokio::task::spawn_blocking(move || {
            // The client is told the name it gave; the log says where the server looked.
            let path = resolve_inside(&folder, &asked).map_err(|why| {
                tracing::warn!("an archive in {} was refused: {why}", folder.display());
                why
            })?;
            archives.read(&path, &asked)
        })
        .await
        .map_err(|err| format!("reading the archive {name:?} failed: {err}"))??;
        Ok(Some(Plan::Replay { name, archive }))
    }

    /// The archive at `path` (`name` as the client gave it: errors say that, never the server's
    /// path, which goes to the log), opened within the limits (or as opened lately, if unchanged).
    fn read(&self, path: &Path, name: &str) -> Result<Arc<Catalog>, String> {
        let metadata = std::fs::metadata(path).map_err(|err| format!("{name}: {}", err.kind()))?;
        let stamp = (
            metadata.len(),
            metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        );
        if let Ok(read) = self.read.lock() {
            let found = read
                .iter()
                .find(|(p, len, at, _)| p == path && (*len, *at) == stamp);
            if let Some((.., archive)) = found {
                return Ok(archive.clone());
            }
        }
        let archive = Arc::new(
            browserenv_archive::open(path, name, &self.config.limits.reading()).map_err(|err| {
                tracing::warn!("the archive at {} was refused: {err}", path.display());
                err.to_string()
            })?,
        );
        if let Ok(mut read) = self.read.lock() {
            read.retain(|(p, ..)| p != path);
            read.push_back((path.to_path_buf(), stamp.0, stamp.1, archive.clone()));
            let held = |read: &VecDeque<ReadLately>| -> usize {
                read.iter().map(|(.., archive)| archive.entries.len()).sum()
            };
            while read.len() > ARCHIVES_KEPT || (read.len() > 1 && held(&read) > ENTRIES_KEPT) {
                read.pop_front();
            }
        }
        Ok(archive)
    }

    /// The work a plan means for the episode `episode_id` starting at `start_url`.
    pub fn work(&self, plan: Plan, episode_id: &str, start_url: &str, seed: Option<u64>) -> Work {
        match plan {
            Plan::Replay { name, archive } => Work::Replay(Arc::new(Replaying::new(
                name,
                archive,
                seed,
                self.server_port,
            ))),
            Plan::Record => {
                let (reference, path) = self.new_file(episode_id);
                let info = ArchiveInfo {
                    software: format!("browserenv-server {}", env!("CARGO_PKG_VERSION")),
                    start_url: Some(start_url.to_string()),
                    episode: Some(episode_id.to_string()),
                    recorded: Some(SystemTime::now()),
                };
                Work::Record(Arc::new(Recording::start(
                    reference,
                    path,
                    info,
                    self.config.limits,
                    self.server_port,
                    self.files
                        .clone()
                        .expect("a plan to record comes with a writer"),
                    self.config.typed_secrets.clone(),
                )))
            }
        }
    }

    /// A new file for an episode's archive, named after it: `archives/<episode>.warc.gz`. An
    /// episode id is the client's, so only its letters, digits, `-`, `_` and `.` are used, and a
    /// name taken gets a number.
    fn new_file(&self, episode_id: &str) -> (String, PathBuf) {
        let stem: String = episode_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(80)
            .collect();
        let stem = match stem.trim_start_matches('.') {
            "" => uuid::Uuid::new_v4().to_string(),
            kept => kept.to_string(),
        };
        let dir = self.config.record_into.clone().unwrap_or_default();
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        for n in 1.. {
            let file = match n {
                1 => format!("{stem}.warc.gz"),
                n => format!("{stem}-{n}.warc.gz"),
            };
            let reference = format!("{ARCHIVES_DIR}/{file}");
            let path = dir.join(&reference);
            if !names.contains(&path) && std::fs::symlink_metadata(&path).is_err() {
                names.insert(path.clone());
                return (reference, path);
            }
        }
        unreachable!("some number is free")
    }

    /// Wait (at most `bound`) until every archive handed to the writer is on disk: at the
    /// server's stop, once the sessions are gone.
    pub async fn finish(&self, bound: std::time::Duration) {
        if let Some(files) = &self.files {
            files.stop();
        }
        let writer = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(writer) = writer {
            let joined = tokio::task::spawn_blocking(move || writer.join());
            if tokio::time::timeout(bound, joined).await.is_err() {
                tracing::warn!("the archive writer did not finish within {bound:?}");
            }
        }
    }
}

/// Every archive a task file names is inside its folder (`folder`), a file: a task pack whose
/// archive is missing or leads elsewhere is refused at start, each problem with its task.
pub fn check_task_archives(
    tasks: &browserenv_collect::tasks::TaskSet,
    folder: Option<&Path>,
) -> Result<(), String> {
    let problems: Vec<String> = tasks
        .tasks
        .iter()
        .filter_map(|task| {
            let name = task.archive.as_deref()?;
            let found = match folder {
                Some(folder) => resolve_inside(folder, name).map(|_| ()),
                None => Err("the task file has no folder".into()),
            };
            found
                .err()
                .map(|why| format!("{}: task {}: {why}", tasks.name, task.id))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// An environment's archive work: the running episode's, and the recordings of episodes that
/// ended and wait for the session's last word on secrets (`store`).
#[derive(Default)]
pub struct EpisodeArchive {
    current: Option<Work>,
    ended: Vec<Arc<Recording>>,
}

impl EpisodeArchive {
    /// The running episode's archive work stops (before its browser goes): whether it had any,
    /// which the browser's part (`Browser::stop_archive`) is then stopped with.
    pub fn end(&mut self) -> bool {
        match self.current.take() {
            Some(Work::Record(recording)) => {
                self.ended.push(recording);
                true
            }
            Some(Work::Replay(_)) => true,
            None => false,
        }
    }

    /// `work` is the new episode's, started on its browser (`Browser::start_archive`) before its
    /// first navigation.
    pub fn begin(&mut self, work: Work) {
        self.current = Some(work);
    }

    /// What an observation says of the episode's archive (`metadata.archive`, and a replay's
    /// misses).
    pub fn describe(&self, metadata: &mut Map<String, Value>) {
        match &self.current {
            Some(Work::Record(recording)) => {
                if let Ok(reference) = serde_json::to_value(recording.reference()) {
                    metadata.insert("archive".into(), reference);
                }
            }
            Some(Work::Replay(replaying)) => replaying.describe(metadata),
            None => {}
        }
    }

    /// Hand what the archives recorded to the writer with `secrets` hidden: the running
    /// episode's so far, the ended ones' all (and those are closed).
    pub fn store(&mut self, secrets: &Secrets) {
        for recording in self.ended.drain(..) {
            recording.end(secrets);
        }
        if let Some(Work::Record(recording)) = &self.current {
            recording.store(secrets);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    use browserenv_archive::{ArchiveWriter, Exchange, Request, Response};

    /// A folder of its own for a test's archives.
    pub(crate) fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "browserenv-archive-{name}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// An archive at `path` answering each `(url, body)` with a 200 of `text/html`.
    pub(crate) fn write(path: &Path, pages: &[(&str, &[u8])]) {
        let mut writer = ArchiveWriter::create(path, &ArchiveInfo::default()).unwrap();
        for (url, body) in pages {
            writer
                .append(&Exchange {
                    request: Request {
                        method: "GET".into(),
                        url: url.to_string(),
                        headers: Vec::new(),
                        body: Vec::new(),
                    },
                    response: Response {
                        status: 200,
                        reason: String::new(),
                        headers: vec![("Content-Type".into(), "text/html".into())],
                        body: body.to_vec(),
                        body_left_out: false,
                    },
                    date: SystemTime::now(),
                })
                .unwrap();
        }
        writer.finish().unwrap();
    }

    /// Reading an archive (here 48 MiB of bodies to gunzip and parse) is blocking work: another
    /// task on the same single-threaded runtime goes on meanwhile. Deterministic, whatever the
    /// machine's speed: read on the runtime's own thread, the archive would hold it until `plan`
    /// returned, the ticker not run once.
    #[test]
    fn reading_an_archive_for_a_reset_leaves_the_runtime_free() {
        let dir = folder("plan");
        let body = vec![b'x'; 1 << 20];
        let pages: Vec<(String, &[u8])> = (0..48)
            .map(|n| (format!("http://big.test/{n}"), body.as_slice()))
            .collect();
        let pages: Vec<(&str, &[u8])> = pages.iter().map(|(u, b)| (u.as_str(), *b)).collect();
        write(&dir.join("big.warc.gz"), &pages);
        let archives = Arc::new(
            Archives::start(
                ArchiveConfig {
                    dir: Some(dir.clone()),
                    ..ArchiveConfig::default()
                },
                None,
            )
            .unwrap(),
        );
        let mut kwargs = Map::new();
        kwargs.insert("archive".into(), Value::from("big.warc.gz"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ticks = Arc::new(AtomicU64::new(0));
        let plan = runtime.block_on(async {
            let counted = ticks.clone();
            let ticker = tokio::spawn(async move {
                loop {
                    counted.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                }
            });
            let plan = archives.plan(&kwargs, None, None).await;
            let during = ticks.load(Ordering::SeqCst);
            ticker.abort();
            plan.map(|plan| (plan, during))
        });
        let (plan, during) = plan.unwrap();
        assert!(
            during > 0,
            "the runtime's thread was held while the archive was read"
        );
        match plan {
            Some(Plan::Replay { name, archive }) => {
                assert_eq!(name, "big.warc.gz");
                assert_eq!(archive.entries.len(), 48);
            }
            _ => panic!("a replay was planned"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
