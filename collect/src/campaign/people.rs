//! Who the campaign's people are, and how the server knows them.
//!
//! A person is a name (1 to 64 letters, digits, `.`, `_` or `-`, kept in lower case: `Ana` is
//! `ana`) and a token of their own, which the coordinator makes with `browserenv-server campaign
//! add-person DIR NAME` and hands to them. The server knows a person by their token alone, so
//! nobody acts under a name that is not theirs, and removing a person (`remove-person`) shuts
//! their token out at once.
//!
//! The tokens are kept in `DIR/people/people.json` (the folder 0700, the file 0600, as
//! recordings are) as their SHA-256 only: a copy of the file lets nobody in. Neither a salt nor a
//! slow hash: those protect passwords people choose, which repeat and can be guessed from a
//! dictionary. These tokens are 256 random bits each: no dictionary to precompute, no two people
//! with one token, and finding a token from its digest is a 2^256 search either way.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Campaign, CampaignError};
use crate::trajectory::{create_private_dir, now, open_inside, sync_dir, PRIVATE_FILE};

/// The folder of the people file, in the campaign's directory.
pub const PEOPLE_DIR: &str = "people";
/// The people file, in `PEOPLE_DIR`.
pub const PEOPLE_FILE: &str = "people.json";
/// Its `schema` tag.
pub const PEOPLE_SCHEMA: &str = "browserenv.campaign.people.v1";
/// Held (`flock`) while the people file is rewritten, so two coordinators adding people at once
/// lose nobody.
const LOCK_FILE: &str = ".lock";

/// The most people a campaign knows: each costs a line of its progress.
pub const MAX_PEOPLE: usize = 500;

/// Random bytes in a token: 256 bits, written as 64 hex digits.
const TOKEN_BYTES: usize = 32;

/// A person's name as the campaign keeps it: 1 to 64 letters, digits, `.`, `_` or `-` (it is
/// written into logs and shown in terminals), in lower case, so `Ana` and `ana` are one person.
pub fn person_name(name: &str) -> Result<String, CampaignError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    match valid {
        true => Ok(name.to_ascii_lowercase()),
        false => Err(CampaignError::BadName),
    }
}

impl Campaign {
    /// Everyone the campaign's state knows: who demonstrated, skipped, reviewed or holds a lease.
    fn known(&self) -> BTreeSet<&str> {
        let demonstrated = self.demonstrations.iter().map(|d| d.person.as_str());
        let skipped = self.skips.iter().map(|(person, _)| person.as_str());
        let reviewed = self.reviews.values().map(|r| r.reviewer.as_str());
        let leasing = self.leases.values().map(|l| l.person.as_str());
        let reviewing = self.reviewing.values().map(|(r, _)| r.as_str());
        demonstrated
            .chain(skipped)
            .chain(reviewed)
            .chain(leasing)
            .chain(reviewing)
            .collect()
    }

    /// `name` as a person of this campaign: valid, and known or room for one more.
    pub(super) fn person(&self, name: &str) -> Result<String, CampaignError> {
        let person = person_name(name)?;
        let people = self.known();
        if !people.contains(person.as_str()) && people.len() >= MAX_PEOPLE {
            return Err(CampaignError::TooManyPeople);
        }
        Ok(person)
    }
}

/// `people.json`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeopleFile {
    schema: String,
    people: Vec<Entry>,
}

/// A person of the file: their name and the digest of their token.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    /// SHA-256 of the token, 64 hex digits.
    token_sha256: String,
    added: String,
}

/// The people of a campaign, as its people file lists them.
#[derive(Clone, Default)]
pub struct People {
    entries: Vec<Entry>,
    digests: Vec<[u8; 32]>,
}

impl std::fmt::Debug for People {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl People {
    /// The people file of the campaign in `dir`.
    pub fn file(dir: &Path) -> PathBuf {
        dir.join(PEOPLE_DIR).join(PEOPLE_FILE)
    }

    /// The people of the campaign in `dir`; none when it has no people file yet. A file that
    /// does not read as one (a hand edit gone wrong) is an error naming it, never a campaign
    /// open to whoever comes.
    pub fn load(dir: &Path) -> Result<People, String> {
        let path = Self::file(dir);
        let mut text = String::new();
        match open_inside(&path) {
            Ok(mut file) => file
                .read_to_string(&mut text)
                .map_err(|err| format!("cannot read {}: {err}", path.display()))?,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(People::default()),
            Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
        };
        let file: PeopleFile =
            serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?;
        if file.schema != PEOPLE_SCHEMA {
            return Err(format!(
                "{}: schema {:?}, not {PEOPLE_SCHEMA:?}",
                path.display(),
                file.schema
            ));
        }
        let mut people = People::default();
        for entry in file.people {
            let digest = digest_from_hex(&entry.token_sha256);
            let name = person_name(&entry.name)
                .ok()
                .filter(|name| *name == entry.name);
            match (name, digest) {
                (Some(name), Some(digest)) if !people.knows(&name) => {
                    people.entries.push(entry);
                    people.digests.push(digest);
                }
                _ => {
                    return Err(format!(
                        "{}: {:?} is not a person's line (a new name in lower case and a \
                         token_sha256 of 64 hex digits)",
                        path.display(),
                        entry.name
                    ))
                }
            }
        }
        Ok(people)
    }

    /// The person whose token this is. Every digest is compared whole, and all of them, so the
    /// time taken says nothing of how close a guess came or whose token it nearly was.
    pub fn person(&self, token: &str) -> Option<&str> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for (entry, known) in self.entries.iter().zip(&self.digests) {
            let difference = known
                .iter()
                .zip(&digest)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if difference == 0 {
                found = Some(entry.name.as_str());
            }
        }
        found
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    pub fn knows(&self, name: &str) -> bool {
        self.names().any(|known| known == name)
    }

    /// Add `name` to the campaign in `dir` and return their token: shown this once, kept only
    /// as its digest.
    pub fn add(dir: &Path, name: &str) -> Result<(String, String), String> {
        let name = person_name(name).map_err(|err| err.to_string())?;
        Self::change(dir, |people| {
            if people.knows(&name) {
                return Err(format!(
                    "{name} is a person of this campaign already (remove-person, then \
                     add-person again, gives them a new token)"
                ));
            }
            if people.entries.len() >= MAX_PEOPLE {
                return Err(format!("the campaign has {MAX_PEOPLE} people already"));
            }
            let token = new_token()
                .map_err(|err| format!("cannot read random bytes for the token: {err}"))?;
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            people.entries.push(Entry {
                name: name.clone(),
                token_sha256: hex(&digest),
                added: now(),
            });
            people.digests.push(digest);
            Ok((name.clone(), token))
        })
    }

    /// Remove `name` from the campaign in `dir`: their token is refused from now on. What they
    /// did stays theirs in the campaign's log.
    pub fn remove(dir: &Path, name: &str) -> Result<String, String> {
        let name = person_name(name).map_err(|err| err.to_string())?;
        Self::change(dir, |people| {
            let Some(index) = people.entries.iter().position(|e| e.name == name) else {
                return Err(format!("{name} is not a person of this campaign"));
            };
            people.entries.remove(index);
            people.digests.remove(index);
            Ok(name.clone())
        })
    }

    /// Read the people file, change it, and write it whole in its place (a new file renamed over
    /// the old one: a reader sees the old list or the new one, never half of one), under the
    /// folder's lock.
    fn change<T>(
        dir: &Path,
        change: impl FnOnce(&mut People) -> Result<T, String>,
    ) -> Result<T, String> {
        let folder = dir.join(PEOPLE_DIR);
        let failed =
            |what: &str, err: io::Error| format!("cannot {what} {}: {err}", folder.display());
        private_folder(&folder).map_err(|err| failed("make", err))?;
        let _lock = lock(&folder).map_err(|err| failed("lock", err))?;
        let mut people = Self::load(dir)?;
        let result = change(&mut people)?;
        let file = PeopleFile {
            schema: PEOPLE_SCHEMA.into(),
            people: people.entries,
        };
        let mut text = serde_json::to_string_pretty(&file).map_err(|err| err.to_string())?;
        text.push('\n');
        write_replacing(&Self::file(dir), text.as_bytes()).map_err(|err| failed("write", err))?;
        Ok(result)
    }
}

/// The people folder, 0700 whatever it was made with (it holds what lets people in).
fn private_folder(folder: &Path) -> io::Result<()> {
    create_private_dir(folder)?;
    let kind = std::fs::symlink_metadata(folder)?.file_type();
    if !kind.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a folder (a symlink is not followed)",
        ));
    }
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))
}

/// The folder's lock, held until the file is dropped.
fn lock(folder: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(folder.join(LOCK_FILE))?;
    // SAFETY: flock on a descriptor this function owns; it touches no memory.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// `contents` in `path`, durably, by a new 0600 file renamed over it.
fn write_replacing(path: &Path, contents: &[u8]) -> io::Result<()> {
    let fresh = path.with_extension("json.new");
    let _ = std::fs::remove_file(&fresh);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&fresh)?;
    file.write_all(contents)?;
    file.sync_all()?;
    std::fs::rename(&fresh, path)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// A new token: `TOKEN_BYTES` from the kernel's random source, in hex.
fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest_from_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut digest = [0u8; 32];
    for (i, byte) in digest.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(digest)
}
