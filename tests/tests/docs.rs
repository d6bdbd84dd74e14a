//! References stay inside the repository: every Markdown or Rust file that a source, doc or build
//! file names (a doc such as `docs/wire.md`, a module such as `server/src/chromium/mod.rs`) exists in this
//! repository, and nothing points at notes kept outside it. A reader who follows a comment's
//! pointer must find what it names.
//!
//! A name with a folder in it (`docs/wire.md`, `../../README.md`) must exist relative to the
//! repository root or to the file that names it, inside the repository; a bare name
//! (`README.md`, `fake.rs`) must be the name of some file in the repository.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package lives inside the workspace")
        .canonicalize()
        .expect("the workspace root exists")
}

/// Folders never looked into: build output, version control, virtual environments, caches.
fn skipped(dir: &Path) -> bool {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    matches!(name, "target" | "node_modules" | "__pycache__")
        || (name.starts_with('.') && name != ".ci")
}

/// Every file of the repository (outside the skipped folders).
fn all_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !skipped(&path) {
                all_files(&path, files);
            }
        } else if kind.is_file() {
            files.push(path);
        }
    }
}

/// Source, doc and build files: the ones whose references are checked.
fn scanned(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let in_ci = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|dir| dir == ".ci");
    matches!(
        extension,
        "rs" | "md" | "py" | "toml" | "yaml" | "yml" | "js" | "sh"
    ) || matches!(name, "Makefile" | "Dockerfile")
        || in_ci
}

/// The Markdown and Rust file names a text mentions, with or without folders, less the full stop
/// of a sentence that ends with one.
fn references(text: &str) -> Vec<String> {
    let in_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    text.split(|c: char| !in_name(c))
        .map(|token| token.trim_end_matches('.'))
        // `https://host/a.md` splits at the colon into `//host/a.md`: a web address, not a file.
        .filter(|token| !token.starts_with("//"))
        .filter(|token| {
            let stem = token
                .rsplit('/')
                .next()
                .unwrap_or("")
                .trim_end_matches(".md")
                .trim_end_matches(".rs");
            (token.ends_with(".md") || token.ends_with(".rs")) && !stem.is_empty()
        })
        .map(str::to_string)
        .collect()
}

/// Whether `reference`, named in `file`, is a file of the repository.
fn resolves(root: &Path, file: &Path, reference: &str, names: &BTreeSet<String>) -> bool {
    if !reference.contains('/') {
        return names.contains(reference);
    }
    let here = file.parent().unwrap_or(root);
    [root.join(reference), here.join(reference)]
        .iter()
        .filter_map(|candidate| candidate.canonicalize().ok())
        .any(|found| found.starts_with(root) && found.is_file())
}

#[test]
fn every_named_doc_and_source_file_is_in_the_repository() {
    let root = repo_root();
    let mut files = Vec::new();
    all_files(&root, &mut files);
    let names: BTreeSet<String> = files
        .iter()
        .filter_map(|f| f.file_name()?.to_str().map(str::to_string))
        .collect();
    assert!(
        names.contains("ARCHITECTURE.md") && names.contains("wire.md"),
        "docs/ARCHITECTURE.md and docs/wire.md must exist"
    );
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in files.iter().filter(|f| scanned(f)) {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for reference in references(&text) {
            checked += 1;
            if !resolves(&root, file, &reference, &names) {
                let shown = file.strip_prefix(&root).unwrap_or(file);
                missing.push(format!("{}: {reference}", shown.display()));
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} references found: is the scan looking at the repository?"
    );
    assert!(
        missing.is_empty(),
        "references to files that are not in the repository (move the doc in, or point at the one \
         that is):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn nothing_points_at_notes_outside_the_repository() {
    let root = repo_root();
    let mut files = Vec::new();
    all_files(&root, &mut files);
    // Spelled in pieces so that this file does not match itself.
    let outside = [concat!("..", "/shared"), concat!("/work", "/shared")];
    let mut found = Vec::new();
    for file in files.iter().filter(|f| scanned(f)) {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            if outside.iter().any(|pattern| line.contains(pattern)) {
                let shown = file.strip_prefix(&root).unwrap_or(file);
                found.push(format!(
                    "{}:{}: {}",
                    shown.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "pointers outside the repository (docs/ holds the architecture and the wire contract):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn references_are_read_as_file_names() {
    let text = "See docs/wire.md. The seam (`browser.rs`), https://example.com/x.md, a.rs_like, \
                include_str!(\"../../README.md\") and a bare .md.";
    assert_eq!(
        references(text),
        ["docs/wire.md", "browser.rs", "../../README.md"]
    );
}
