//! Where an archive named by a task line (relative to the task file) or by a reset (relative to
//! the server's `--archive-dir`) may be: inside that folder, after every symlink is followed, a
//! regular file whose name ends in `.warc.gz`, `.warc`, `.arc.gz`, `.arc` or `.wacz`. One rule for
//! both, so no name a client or a task pack gives can make the server read outside the folder it
//! was given. Errors name the archive as it was given, never the folder's path on the server.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// The folder, beside a recording's `steps.jsonl` or a pack's `tasks.jsonl`, holding its archives.
pub const ARCHIVES_DIR: &str = "archives";

/// What an archive's name ends in: WARC (gzipped or not), ARC, WACZ.
pub const ENDINGS: [&str; 5] = [".warc.gz", ".warc", ".arc.gz", ".arc", ".wacz"];

/// The longest name taken (a path, not a document).
const MAX_NAME_CHARS: usize = 1024;

/// `name` as an archive's relative path: plain components only (no `..`, no root, no `.`), no
/// control character, ending in one of `ENDINGS`.
pub fn check_name(name: &str) -> Result<&Path, String> {
    let refused = |why: &str| Err(format!("the archive name {name:?} is refused: {why}"));
    if name.is_empty() {
        return refused("it is empty");
    }
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return refused("it is too long or has a control character");
    }
    if !ENDINGS.iter().any(|end| name.ends_with(end)) {
        return refused("an archive's name ends in .warc.gz, .warc, .arc.gz, .arc or .wacz");
    }
    let path = Path::new(name);
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return refused("it must be a path inside the folder (no `..`, no leading `/`, no `.`)");
    }
    Ok(path)
}

/// The archive `name` inside `dir`: checked by `check_name`, then resolved (every symlink
/// followed) and refused unless it is still inside `dir` and a regular file.
pub fn resolve_inside(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let relative = check_name(name)?;
    let root = dir
        .canonicalize()
        .map_err(|err| format!("the archive folder cannot be used: {}", err.kind()))?;
    let path = root
        .join(relative)
        .canonicalize()
        .map_err(|err| format!("no archive {name:?} in the archive folder ({})", err.kind()))?;
    if !path.starts_with(&root) {
        return Err(format!(
            "the archive {name:?} is refused: it leads outside its folder (a symlink)"
        ));
    }
    let is_file = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
    if !is_file {
        return Err(format!("the archive {name:?} is not a file"));
    }
    Ok(path)
}

/// Open the archive file at `path` for reading: never through a symlink at its last step (`place`
/// resolved those already), never blocking on a FIFO put in its place.
pub(crate) fn open_file(path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    Ok((file, metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_climb_out_or_are_not_archives_are_refused() {
        for good in [
            "a.warc.gz",
            "archives/task-1.warc.gz",
            "x/y/z.warc",
            "p.wacz",
            "old.arc.gz",
        ] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "../a.warc.gz",
            "archives/../../a.warc.gz",
            "/etc/a.warc.gz",
            "./a.warc.gz",
            "a.txt",
            "a\n.warc.gz",
            "a.warc.gz/",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_symlink_out_of_the_folder_is_refused() {
        use std::os::unix::fs::symlink;
        let base = std::env::temp_dir().join(format!("browserenv-place-{}", std::process::id()));
        let dir = base.join("pack");
        std::fs::create_dir_all(dir.join("archives")).unwrap();
        std::fs::write(dir.join("archives/ok.warc.gz"), b"x").unwrap();
        std::fs::write(base.join("secret.warc.gz"), b"x").unwrap();
        symlink(
            base.join("secret.warc.gz"),
            dir.join("archives/out.warc.gz"),
        )
        .unwrap();
        symlink(&base, dir.join("up")).unwrap();
        std::fs::create_dir_all(dir.join("folder.warc")).unwrap();

        assert!(resolve_inside(&dir, "archives/ok.warc.gz")
            .unwrap()
            .ends_with("pack/archives/ok.warc.gz"));
        for name in ["archives/out.warc.gz", "up/secret.warc.gz"] {
            let why = resolve_inside(&dir, name).unwrap_err();
            assert!(why.contains("leads outside"), "{name}: {why}");
        }
        assert!(resolve_inside(&dir, "missing.warc.gz")
            .unwrap_err()
            .starts_with("no archive"));
        assert!(resolve_inside(&dir, "folder.warc")
            .unwrap_err()
            .contains("not a file"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
