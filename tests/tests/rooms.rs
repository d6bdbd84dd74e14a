//! The rooms of every crate import one another without a circle, and the server's rooms import
//! only rooms below them (docs/ARCHITECTURE.md, "Layout").
//!
//! A module's imports are the `crate::` paths it names (anywhere but comments) and its file-level
//! `use super::` lines. In each folder its rooms (files and subfolders, a subfolder taken whole)
//! must form no circle; a room's import of its own folder's `mod.rs` (or `lib.rs`) is not one. In
//! `server/src` an import of a room higher in `SERVER_LAYERS` needs a comment that says why, on
//! its line or the line above, starting `// Upward:`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate's module tree (the benchmark binary's modules are files of `tests/src/bench`).
const CRATES: [&str; 6] = [
    "src",
    "collect/src",
    "archive/src",
    "server/src",
    "tui/src",
    "tests/src/bench",
];

/// The server's rooms, highest first; a room imports the rooms of the layers after its own.
const SERVER_LAYERS: [&[&str]; 11] = [
    &["lib", "main", "cli"],
    &["app"],
    &["replicas"],
    &["routes"],
    &["transports"],
    &["session", "pool"],
    &["campaign", "chromium"],
    &["environment"],
    &["browser", "fake", "miniwob"],
    &["archive", "operations"],
    &["api_error", "capped", "openapi", "settings", "site"],
];

type Module = Vec<String>;
/// An import: from which module to which, and where it is written.
struct Import {
    from: Module,
    to: Module,
    place: String,
    comment: bool,
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = relative
        .iter()
        .map(|p| p.to_string_lossy().into())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every import of the crate whose modules are in `src`, resolved to the longest module it names.
fn imports(src: &Path) -> Vec<Import> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut found = Vec::new();
    for file in &files {
        let here = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap();
            let mut paths: Vec<Module> = Vec::new();
            for (at, _) in code.match_indices("crate::") {
                let words =
                    code[at + 7..].split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'));
                let path = words.into_iter().next().unwrap_or("");
                paths.push(
                    path.split("::")
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                );
            }
            if let Some(rest) = line.strip_prefix("use super::") {
                let mut path: Module = here[..here.len().saturating_sub(1)].to_vec();
                path.extend(
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .map(String::from),
                );
                paths.push(path);
            }
            for path in paths {
                let Some(to) = (0..=path.len())
                    .rev()
                    .map(|k| path[..k].to_vec())
                    .find(|m| modules.contains(m))
                else {
                    continue;
                };
                let above = if n > 0 { lines[n - 1] } else { "" };
                found.push(Import {
                    from: here.clone(),
                    to,
                    place: format!("{}:{}", file.display(), n + 1),
                    comment: line.contains("// Upward:")
                        || above.trim_start().starts_with("// Upward:"),
                });
            }
        }
    }
    found
}

/// The rooms an import joins: the two children of the folder both sit in, when they differ.
fn rooms(import: &Import) -> Option<(Module, Module, Module)> {
    let common = import
        .from
        .iter()
        .zip(&import.to)
        .take_while(|(a, b)| a == b)
        .count();
    if common == import.from.len() || common == import.to.len() {
        return None; // a module and its own folder
    }
    let folder = import.from[..common].to_vec();
    Some((
        folder,
        import.from[..=common].to_vec(),
        import.to[..=common].to_vec(),
    ))
}

/// A circle in `graph`, as the rooms along it.
fn circle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn walk(
        at: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(start) = path.iter().position(|m| m == at) {
            return Some(path[start..].to_vec());
        }
        if !done.insert(at.clone()) {
            return None;
        }
        path.push(at.clone());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(found) = walk(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| walk(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_an_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for krate in CRATES {
        let mut folders: BTreeMap<Module, BTreeMap<Module, BTreeSet<Module>>> = BTreeMap::new();
        for import in imports(&root.join(krate)) {
            if let Some((folder, from, to)) = rooms(&import) {
                folders
                    .entry(folder)
                    .or_default()
                    .entry(from)
                    .or_default()
                    .insert(to);
            }
        }
        for (folder, graph) in &folders {
            if let Some(found) = circle(graph) {
                let names: Vec<String> = found.iter().map(|m| m.join("/")).collect();
                panic!(
                    "{krate}/{}: the rooms {} import each other in a circle",
                    folder.join("/"),
                    names.join(" -> ")
                );
            }
        }
    }
}

#[test]
fn the_servers_rooms_import_downward() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let layer = |room: &str| SERVER_LAYERS.iter().position(|rooms| rooms.contains(&room));
    let mut upward = Vec::new();
    for import in imports(&root.join("server/src")) {
        let Some((folder, from, to)) = rooms(&import) else {
            continue;
        };
        if !folder.is_empty() {
            continue;
        }
        let (Some(from_layer), Some(to_layer)) = (layer(&from[0]), layer(&to[0])) else {
            panic!(
                "{}: {} or {} is in no layer of SERVER_LAYERS",
                import.place, from[0], to[0]
            );
        };
        if to_layer < from_layer && !import.comment {
            upward.push(format!(
                "{}: {} imports {} from above",
                import.place,
                from[0],
                to.join("::")
            ));
        }
    }
    assert!(
        upward.is_empty(),
        "imports upward without a `// Upward:` comment:\n{}",
        upward.join("\n")
    );
}
