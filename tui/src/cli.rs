//! `browserenv-tui`'s command line: the flags and subcommands parsed, and each handed to its
//! room (the live session to `live`, the subcommands on files to `offline`). Nothing is done
//! here.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

use crate::live::start::{Flags, Mode};
use crate::offline::export::ExportFormat;
use crate::offline::{campaign_review, export, replay, task_files, viewer};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "browserenv-tui",
    version,
    about = "Watch and drive a browserenv session from the terminal"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub flags: Flags,
}

/// Work on recordings instead of driving a browser.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Write a recording and its review as a dataset: a Hugging Face ImageFolder (hf), JSON rows
    /// with image paths (jsonl), one ATIF v1.8 trajectory per episode (atif), or its episodes'
    /// web archives as one WACZ package (wacz).
    Export {
        /// The recording folder (steps.jsonl, episodes.jsonl, screenshots/, review.jsonl), or a
        /// campaign's folder (its accepted demonstrations).
        dir: PathBuf,
        #[arg(long, value_enum, default_value = "hf")]
        format: ExportFormat,
        /// Where to write the export.
        #[arg(long)]
        out: PathBuf,
        /// Keep only the episodes whose review says quality good.
        #[arg(long)]
        reviewed_only: bool,
        /// Leave out the steps with these marks (comma-separated: redundant,wrong).
        #[arg(long, value_enum, value_delimiter = ',')]
        drop_marked: Vec<crate::review::Mark>,
        /// With a campaign's folder: also the demonstrations nobody has reviewed yet (never a
        /// rejected one).
        #[arg(long)]
        unreviewed: bool,
    },
    /// Re-run every recorded episode against a fresh environment and report where it diverged:
    /// offline, from the episodes' web archives, when the recording has them (`--archive`);
    /// else, or with --live, against the site. Exits 0 when nothing diverged, 2 when something did.
    Replay {
        dir: PathBuf,
        /// Replay against the live site even when the recording has archives.
        #[arg(long)]
        live: bool,
        /// Replay against this server (default: an embedded server and the demo site; recorded
        /// URLs on a loopback origin are mapped onto the new site's origin).
        #[arg(long)]
        server: Option<String>,
        /// Fraction of pixels that may differ before a screenshot counts as diverged.
        #[arg(long, default_value_t = crate::offline::replay::DEFAULT_TOLERANCE)]
        tolerance: f64,
    },
    /// Browse and review a recording in the terminal: steps, the frame before and after, the
    /// action drawn on it; marks, notes, outcome and quality go to DIR/review.jsonl.
    View {
        dir: PathBuf,
        /// Who reviews (recorded with each change; default: the login name, $USER).
        #[arg(long, env = "BROWSERENV_REVIEWER")]
        reviewer: Option<String>,
    },
    /// Task files (`--tasks`, the server's `--tasks`).
    Tasks {
        #[command(subcommand)]
        action: TasksCommand,
    },
    /// Collect demonstrations for the server's campaign (`--campaign DIR` on the server; needs
    /// --server and your own --token, which says who you are): the server hands you your next
    /// task; finish it, then P (done as asked) or F (not) saves it and the next one comes; S skips
    /// with a reason; V shows the progress.
    Collect,
    /// Review the campaign's demonstrations (needs --server and your own --token): the next one
    /// not yours and not reviewed opens in the review mode (`view`'s keys); G (good) accepts it,
    /// B (bad) sends its task back to the queue; then the next one. U or no quality leaves it for
    /// someone else.
    Review,
    /// Follow a session an agent drives (needs --server). Without SESSION, the first live one
    /// (waiting for one); when it ends, the next. Tab moves to the next; c takes control and hands
    /// it back. With --record, what is watched is recorded, each step with its actor.
    Watch { session: Option<String> },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum TasksCommand {
    /// Check a task file as the server would load it: every problem with its line number (exit
    /// 1), or what the file holds (exit 0).
    Check { file: PathBuf },
    /// Run each task's start page (and its reference solution, NAME-solutions.jsonl beside the
    /// file) live, archiving what the pages load, and write PACK: tasks.jsonl with an archive per
    /// task, the archives, the solutions. `browserenv-server --tasks PACK/tasks.jsonl` serves it
    /// with no network.
    Snapshot {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Reference solutions (default: NAME-solutions.jsonl beside the task file).
        #[arg(long)]
        solutions: Option<PathBuf>,
        /// The live site of the tasks' relative start URLs (default: the demo site, served).
        #[arg(long)]
        task_base_url: Option<String>,
        /// Each task's archive as a WACZ package (archives/TASK.wacz), which ReplayWeb.page and
        /// `wacz validate` read, instead of a WARC file.
        #[arg(long)]
        wacz: bool,
    },
}

/// Hand the command to its room.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let Cli { command, flags } = cli;
    match command {
        None => crate::live::start::run(&flags, Mode::Drive).await,
        Some(Command::Watch { session }) => {
            flags.server.as_ref().context("watch needs --server URL")?;
            crate::live::start::run(&flags, Mode::Watch(session)).await
        }
        Some(Command::Collect) => collect(&flags).await,
        Some(Command::Review) => review(&flags).await,
        Some(Command::Export {
            dir,
            format,
            out,
            reviewed_only,
            drop_marked,
            unreviewed,
        }) => export::command(&dir, &out, format, reviewed_only, drop_marked, unreviewed),
        Some(Command::Replay {
            dir,
            live,
            server,
            tolerance,
        }) => {
            let asked = replay::Asked {
                site: flags.site_dir(),
                dir,
                server,
                token: flags.token,
                chromium: flags.chromium,
                live,
                tolerance,
            };
            if replay::command(&asked).await? {
                std::process::exit(2);
            }
            Ok(())
        }
        Some(Command::View { dir, reviewer }) => {
            let reviewer = crate::review::default_reviewer(reviewer);
            viewer::run_viewer(&dir, flags.graphics, reviewer)
        }
        Some(Command::Tasks {
            action: TasksCommand::Check { file },
        }) => task_files::check_command(&file),
        Some(Command::Tasks {
            action:
                TasksCommand::Snapshot {
                    file,
                    out,
                    solutions,
                    task_base_url,
                    wacz,
                },
        }) => {
            let asked = task_files::Snapshot {
                site: flags.site_dir(),
                file,
                out,
                solutions,
                base_url: task_base_url,
                chromium: flags.chromium,
                wacz,
            };
            task_files::snapshot_command(&asked).await
        }
    }
}

/// `collect`: the campaign's server, as the person the token names.
async fn collect(flags: &Flags) -> anyhow::Result<()> {
    flags
        .token
        .as_ref()
        .context("collect needs your own --token (browserenv-server campaign add-person)")?;
    flags
        .server
        .as_ref()
        .context("collect needs --server URL: the server runs the campaign")?;
    crate::live::start::run(flags, Mode::Collect).await
}

/// `review`: the campaign's demonstrations, as the person the token names.
async fn review(flags: &Flags) -> anyhow::Result<()> {
    let server = flags.server.as_ref().context("review needs --server URL")?;
    let token = flags
        .token
        .clone()
        .context("review needs your own --token (browserenv-server campaign add-person)")?;
    campaign_review::run(server, token, flags.graphics).await
}
