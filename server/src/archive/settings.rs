//! The archive settings: flags and environment variables, their defaults and ranges
//! (docs/server.md, "Settings"; docs/archives.md).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::builder::FalseyValueParser;

use browserenv_archive::{ReadLimits, DEFAULT_BODY_MB, DEFAULT_EPISODE_MB, MAX_BODY_MB};

use browserenv::secrets::Secrets;

/// The archive flags of `browserenv-server` (flattened into its `Cli`).
#[derive(Debug, Clone, clap::Args)]
pub struct ArchiveArgs {
    /// With --record-dir: also write what every episode's pages loaded (each response with its
    /// request) as a WARC file in DIR/archives/, named in the episode's line.
    #[arg(long, env = "BROWSER_ARCHIVE", value_parser = FalseyValueParser::new())]
    pub archive: bool,
    /// A folder of archives a reset may name (`archive` beside `start_url`, a path relative to
    /// this folder): the episode is answered from it, with no network.
    #[arg(long, env = "BROWSER_ARCHIVE_DIR")]
    pub archive_dir: Option<PathBuf>,
    /// The most of one response body an archive keeps (and reads), in MiB, 1..=24; a longer
    /// body is left out and counted.
    #[arg(long, env = "BROWSER_ARCHIVE_BODY_MB", default_value_t = DEFAULT_BODY_MB)]
    pub archive_body_mb: u64,
    /// The most an episode's archive keeps (and an archive may hold once unpacked), in MiB,
    /// 1..=4096; responses past it are left out and counted.
    #[arg(long, env = "BROWSER_ARCHIVE_EPISODE_MB", default_value_t = DEFAULT_EPISODE_MB)]
    pub archive_episode_mb: u64,
}

/// The most `BROWSER_ARCHIVE_EPISODE_MB` may be.
const MAX_EPISODE_MB: u64 = 4096;

/// The server's archive settings.
#[derive(Debug, Clone, Default)]
pub struct ArchiveConfig {
    /// Write an archive of every episode into this recording folder's `archives/` (`--archive`
    /// with `--record-dir`; the terminal UI's `--record DIR --archive`).
    pub record_into: Option<PathBuf>,
    /// Where a reset's `archive` option names its file (`--archive-dir`).
    pub dir: Option<PathBuf>,
    pub limits: ArchiveLimits,
    /// Secrets a person typed through the program that embeds this server (the terminal UI's
    /// `s`): hidden in what its archives keep, as the session's own are.
    pub typed_secrets: TypedSecrets,
}

/// What a person typed as secrets through the program that embeds the server: its client knows
/// they are secrets, the server cannot tell them from other typing. Shared by both.
#[derive(Clone, Default)]
pub struct TypedSecrets(Arc<Mutex<Secrets>>);

impl TypedSecrets {
    pub fn add(&self, typed: &str) {
        if let Ok(mut secrets) = self.0.lock() {
            secrets.add(typed);
        }
    }

    /// Run `hide` with them.
    pub fn with<T>(&self, hide: impl FnOnce(&Secrets) -> T) -> Option<T> {
        self.0.lock().ok().map(|secrets| hide(&secrets))
    }
}

impl std::fmt::Debug for TypedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypedSecrets(..)")
    }
}

/// How much an archive keeps, and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    pub body_bytes: u64,
    pub episode_bytes: u64,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        ArchiveLimits {
            body_bytes: DEFAULT_BODY_MB << 20,
            episode_bytes: DEFAULT_EPISODE_MB << 20,
        }
    }
}

impl ArchiveLimits {
    pub fn reading(&self) -> ReadLimits {
        ReadLimits {
            body_bytes: self.body_bytes,
            archive_bytes: self.episode_bytes,
        }
    }
}

impl ArchiveArgs {
    /// The settings, checked; `record_dir` is `--record-dir`, which `--archive` writes into.
    pub fn config(&self, record_dir: Option<&std::path::Path>) -> Result<ArchiveConfig, String> {
        if !(1..=MAX_BODY_MB).contains(&self.archive_body_mb) {
            return Err(format!(
                "BROWSER_ARCHIVE_BODY_MB must be between 1 and {MAX_BODY_MB}, got {}",
                self.archive_body_mb
            ));
        }
        if !(1..=MAX_EPISODE_MB).contains(&self.archive_episode_mb) {
            return Err(format!(
                "BROWSER_ARCHIVE_EPISODE_MB must be between 1 and {MAX_EPISODE_MB}, got {}",
                self.archive_episode_mb
            ));
        }
        let record_into =
            match (self.archive, record_dir) {
                (true, Some(dir)) => Some(dir.to_path_buf()),
                (true, None) => return Err(
                    "BROWSER_ARCHIVE (--archive) writes into the recording: it needs --record-dir"
                        .into(),
                ),
                (false, _) => None,
            };
        if let Some(dir) = &self.archive_dir {
            if !dir.is_dir() {
                return Err(format!(
                    "BROWSER_ARCHIVE_DIR: {} is not a folder",
                    dir.display()
                ));
            }
        }
        Ok(ArchiveConfig {
            record_into,
            dir: self.archive_dir.clone(),
            limits: ArchiveLimits {
                body_bytes: self.archive_body_mb << 20,
                episode_bytes: self.archive_episode_mb << 20,
            },
            typed_secrets: TypedSecrets::default(),
        })
    }

    /// Whether any archive setting asks for archives at all.
    pub fn wanted(&self) -> bool {
        self.archive || self.archive_dir.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        archive: ArchiveArgs,
    }

    fn config(args: &[&str], record: Option<&str>) -> Result<ArchiveConfig, String> {
        let flags = Flags::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map_err(|err| err.to_string())?;
        flags.archive.config(record.map(std::path::Path::new))
    }

    #[test]
    fn settings_are_checked_and_name_themselves() {
        let fine = config(&["--archive"], Some("/tmp/rec")).unwrap();
        assert_eq!(
            fine.record_into.as_deref(),
            Some(std::path::Path::new("/tmp/rec"))
        );
        assert_eq!(fine.limits, ArchiveLimits::default());
        assert!(config(&["--archive"], None)
            .unwrap_err()
            .contains("needs --record-dir"));
        assert!(config(&["--archive-body-mb", "25"], None)
            .unwrap_err()
            .starts_with("BROWSER_ARCHIVE_BODY_MB"));
        assert!(config(&["--archive-episode-mb", "0"], None)
            .unwrap_err()
            .starts_with("BROWSER_ARCHIVE_EPISODE_MB"));
        assert!(config(&["--archive-dir", "/nonexistent/x"], None)
            .unwrap_err()
            .contains("is not a folder"));
        let small = config(
            &["--archive-body-mb", "2", "--archive-episode-mb", "8"],
            None,
        )
        .unwrap();
        assert_eq!(
            small.limits,
            ArchiveLimits {
                body_bytes: 2 << 20,
                episode_bytes: 8 << 20
            }
        );
    }
}
