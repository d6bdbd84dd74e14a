//! Frame names and reading frames: a recording is untrusted, so a frame is read only by a name
//! the writer could have made, and never through a symlink.

use super::*;

/// The name a frame is stored under: `screenshots/` + the SHA-256 of its bytes + `.png`.
pub fn frame_name(png: &[u8]) -> String {
    format!("{SCREENSHOTS_DIR}/{:x}.png", Sha256::digest(png))
}

/// Whether `name` is one the writer makes (`frame_name`): `screenshots/`, 64 lowercase hex
/// digits, `.png`, nothing else. Readers use no other name, so no step can point them outside the
/// recording (`../../etc/passwd`, `/etc/passwd`).
pub fn is_frame_name(name: &str) -> bool {
    name.strip_prefix(SCREENSHOTS_DIR)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.strip_suffix(".png"))
        .is_some_and(|hash| {
            hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}

/// The path of the frame `name` in the recording `dir`, if a reader may use it: a frame name
/// (`is_frame_name`), and a plain file in a plain `screenshots` folder. A symlink is refused, not
/// followed: it could lead anywhere on the reader's machine.
pub fn frame_path(dir: &Path, name: &str) -> io::Result<PathBuf> {
    if !is_frame_name(name) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "screenshot name {name:?} is refused: a recording names its frames \
                 {SCREENSHOTS_DIR}/<sha256>.png (64 lowercase hex digits)"
            ),
        ));
    }
    let refuse = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("screenshot {name} is refused: {what}; nothing in a recording is followed"),
        )
    };
    match std::fs::symlink_metadata(dir.join(SCREENSHOTS_DIR)) {
        Ok(folder) if folder.file_type().is_symlink() => {
            return Err(refuse("the screenshots folder is a symlink"))
        }
        Ok(folder) if !folder.is_dir() => {
            return Err(refuse("the screenshots folder is not a folder"))
        }
        _ => {}
    }
    let path = dir.join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(file) if file.file_type().is_symlink() => Err(refuse("it is a symlink")),
        Ok(file) if !file.is_file() => Err(refuse("it is not a plain file")),
        Ok(_) => Ok(path),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("screenshot {name} is missing"),
        )),
        Err(err) => Err(io::Error::new(
            err.kind(),
            format!("screenshot {name}: {err}"),
        )),
    }
}

/// The bytes of the frame `name`, under the rules of `frame_path`. The file is opened with
/// O_NOFOLLOW, so a symlink swapped in after the check is refused as well, and O_NONBLOCK, so a
/// FIFO swapped in cannot hang the reader.
pub fn read_frame(dir: &Path, name: &str) -> io::Result<Vec<u8>> {
    let path = frame_path(dir, name)?;
    let context = |err: io::Error| io::Error::new(err.kind(), format!("screenshot {name}: {err}"));
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(context)?;
    if !file.metadata().map_err(context)?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("screenshot {name} is refused: it is not a plain file"),
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(context)?;
    Ok(bytes)
}
