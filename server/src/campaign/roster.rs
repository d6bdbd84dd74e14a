//! The campaign's people as the running server knows them: `DIR/people/people.json`
//! (`browserenv_collect::campaign::people`), read again whenever it changed, so `browserenv-server
//! campaign add-person` and `remove-person` take effect at the next request, without a restart.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use browserenv_collect::campaign::People;

/// What tells one version of the people file from another: the file is replaced whole (a new
/// file renamed over it), so its inode changes with every change; the size and times as well, in
/// case a hand edit wrote it in place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    inode: (u64, u64),
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            inode: (metadata.dev(), metadata.ino()),
            size: metadata.size(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }
}

/// The people file's version read last, its people, and who was removed since the campaign last
/// heard (`take_removed`).
struct Read {
    /// None: no file (nobody yet).
    stamp: Option<Stamp>,
    /// Who a token stands for now. Empty while the file cannot be read: a file that went wrong
    /// lets nobody in, rather than everyone it used to.
    people: People,
    /// The people as last read without an error, to tell who was removed.
    last_good: People,
    removed: Vec<String>,
}

pub struct Roster {
    dir: PathBuf,
    read: Mutex<Read>,
}

impl std::fmt::Debug for Roster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Roster({})", People::file(&self.dir).display())
    }
}

impl Roster {
    /// The people of the campaign in `dir`; a people file that cannot be read is an error here,
    /// at start.
    pub fn open(dir: &std::path::Path) -> Result<Roster, String> {
        let file = People::file(dir);
        let stamp = std::fs::metadata(&file).ok().map(|m| Stamp::of(&m));
        let people = People::load(dir)?;
        Ok(Roster {
            dir: dir.to_path_buf(),
            read: Mutex::new(Read {
                stamp,
                people: people.clone(),
                last_good: people,
                removed: Vec::new(),
            }),
        })
    }

    /// The people file as it is now: read again when it changed since the last look.
    fn fresh(&self) -> MutexGuard<'_, Read> {
        // A panic while holding it leaves a list that is read again at the next change.
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        let file = People::file(&self.dir);
        let stamp = std::fs::metadata(&file).ok().map(|m| Stamp::of(&m));
        if stamp == read.stamp {
            return read;
        }
        read.stamp = stamp;
        match People::load(&self.dir) {
            Ok(people) => {
                let removed: Vec<String> = read
                    .last_good
                    .names()
                    .filter(|name| !people.knows(name))
                    .map(str::to_string)
                    .collect();
                for name in &removed {
                    tracing::info!("campaign: {name} was removed: their token is refused");
                }
                read.removed.extend(removed);
                read.people = people.clone();
                read.last_good = people;
            }
            Err(err) => {
                tracing::error!("campaign: {err}; every person's token is refused until it reads");
                read.people = People::default();
            }
        }
        read
    }

    /// The person whose token this is, as the people file says now.
    pub fn person(&self, token: &str) -> Option<String> {
        self.fresh().person(token).map(str::to_string)
    }

    /// The people removed since the last call: what they hold goes back (`At::let_go_of`).
    pub fn take_removed(&self) -> Vec<String> {
        std::mem::take(&mut self.fresh().removed)
    }

    /// How many people the file lists now.
    pub fn count(&self) -> usize {
        self.fresh().people.names().count()
    }
}

impl std::ops::Deref for Read {
    type Target = People;
    fn deref(&self) -> &People {
        &self.people
    }
}

impl crate::operations::access::People for Roster {
    fn person(&self, token: &str) -> Option<String> {
        Roster::person(self, token)
    }
}
