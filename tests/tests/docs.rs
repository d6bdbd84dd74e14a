//! References stay inside the repository: every Markdown or Rust file that a source, doc or build
//! file names (a doc such as `docs/wire.md`, a module such as `server/src/chromium/mod.rs`) exists in this
//! repository, and nothing points at notes kept outside it. A reader who follows a comment's
//! pointer must find what it names.
//!
//! A name with a folder in it (`docs/wire.md`, `../../README.md`) must exist relative to the
//! repository root or to the file that names it, inside the repository; a bare name
//! (`README.md`, `fake.rs`) must be the name of some file in the repository.
//!
//! Markdown links and images (`[text](target)`, `![alt](target)`) in every `.md` file lead
//! somewhere: a relative target is a file of the repository, relative to the Markdown file's
//! folder, and an anchor (`#heading`, alone or after a `.md` target) is a heading of the file it
//! points into, by GitHub's rule. The README stays a front door (at most 300 lines), and the docs
//! index, `docs/README.md`, links every doc in `docs/`.

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

/// The Markdown files of the repository (outside the skipped folders).
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    all_files(root, &mut files);
    files.retain(|f| f.extension().is_some_and(|e| e == "md"));
    files.sort();
    files
}

/// A Markdown text without its fenced code blocks and inline code spans (a `](` inside code is
/// not a link). Lines are kept, so numbers still match.
fn without_code(text: &str) -> String {
    without_fences(text)
        .lines()
        .map(|line| without_code_spans(line) + "\n")
        .collect()
}

/// A Markdown text without its fenced code blocks (a `#` line inside a fence is not a heading).
fn without_fences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => out.push_str(line),
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// A line without its code spans: a run of backticks up to the next run of the same length.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let ticks = after.len() - after.trim_start_matches('`').len();
        let body = &after[ticks..];
        let fence = &after[..ticks];
        // The closing run must be exactly as long as the opening one.
        let mut close = None;
        let mut from = 0;
        while let Some(found) = body[from..].find(fence) {
            let at = from + found;
            let run = body[at..].len() - body[at..].trim_start_matches('`').len();
            if run == ticks {
                close = Some(at);
                break;
            }
            from = at + run;
        }
        match close {
            Some(at) => {
                out.push_str("code");
                rest = &body[at + ticks..];
            }
            None => {
                // An unmatched run is literal text.
                out.push_str(fence);
                rest = body;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the Markdown links and images of a text, `[text](target)` and
/// `![alt](target)`, outside code; a target ends at its closing parenthesis or at a space (a
/// title after it is not part of it).
fn link_targets(text: &str) -> Vec<String> {
    let text = without_code(text);
    let mut targets = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = i;
                    break;
                }
                ')' => depth -= 1,
                '\n' => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let target = after[..end].split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        if !target.is_empty() {
            targets.push(target.to_string());
        }
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// GitHub's anchor for a heading's text: lowercase, every character but letters, digits, `-`,
/// `_` and spaces dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings, in order; a repeated one gets `-1`, `-2`, ... as
/// on GitHub.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut found = Vec::new();
    for line in without_fences(text).lines() {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor.clone());
        found.push(anchor);
    }
    found
}

/// A web address (or mail), which the test does not follow.
fn is_web(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// What is wrong with a link `target` of the Markdown file `file`, if anything: a relative
/// target must be a file (or folder) of the repository, relative to the file's folder; an anchor
/// must be a heading of the Markdown file it points into.
fn broken_link(root: &Path, file: &Path, target: &str) -> Option<String> {
    if is_web(target) {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let linked = if path.is_empty() {
        file.to_path_buf()
    } else {
        let here = file.parent().unwrap_or(root);
        match here.join(path).canonicalize() {
            Ok(found) if found.starts_with(root) => found,
            Ok(_) => return Some("outside the repository".into()),
            Err(_) => return Some("no such file".into()),
        }
    };
    let anchor = anchor?;
    if linked.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&linked).ok()?;
    if anchors(&text).iter().any(|a| a == anchor) {
        None
    } else {
        Some(format!("no heading #{anchor} in {}", linked.display()))
    }
}

#[test]
fn every_markdown_link_and_image_leads_somewhere() {
    let root = repo_root();
    let files = markdown_files(&root);
    assert!(
        files.len() > 5,
        "only {} Markdown files found: is the scan looking at the repository?",
        files.len()
    );
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for target in link_targets(&text) {
            checked += 1;
            if let Some(why) = broken_link(&root, file, &target) {
                let shown = file.strip_prefix(&root).unwrap_or(file);
                broken.push(format!("{}: ({target}): {why}", shown.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(
        broken.is_empty(),
        "Markdown links that lead nowhere (a file that is not there, a heading that is not):\n  {}",
        broken.join("\n  ")
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: at most 300; the reference belongs in docs/ (docs/README.md)"
    );
}

#[test]
fn the_docs_index_links_every_doc() {
    let docs = repo_root().join("docs");
    let index = std::fs::read_to_string(docs.join("README.md")).expect("docs/README.md");
    let linked: BTreeSet<String> = link_targets(&index)
        .iter()
        .filter(|t| !is_web(t))
        .filter_map(|t| {
            let path = t.split('#').next().unwrap_or("");
            Some(Path::new(path).file_name()?.to_str()?.to_string())
        })
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&docs).expect("docs/").flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with(".md") && name != "README.md" && !linked.contains(&name) {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "docs/README.md (the index) does not link: {}",
        missing.join(", ")
    );
}

#[test]
fn links_and_anchors_are_read_as_github_does() {
    let text =
        "See [the wire](docs/wire.md#2-websocket-ws), ![a picture](images/a.png \"title\"), \
                [web](https://example.com/x.md) and [here](#a-heading).\n\
                Not a link: `[x](code.txt)`, ``a `[y](z.txt)` b``.\n\
                ```\n[in](a-fence.txt)\n# not a heading\n```\n";
    assert_eq!(
        link_targets(text),
        [
            "docs/wire.md#2-websocket-ws",
            "images/a.png",
            "https://example.com/x.md",
            "#a-heading"
        ]
    );
    assert_eq!(slug("2. WebSocket `/ws`"), "2-websocket-ws");
    assert_eq!(
        slug("Taking the wheel (hand-off)"),
        "taking-the-wheel-hand-off"
    );
    assert_eq!(
        slug("Resets, frames & sessions_x"),
        "resets-frames--sessions_x"
    );
    let headings = "# Title\n## Usage\n```\n## Inside a fence\n```\n### Usage\n#### Usage\n\
                    #nospace\n## 6. MCP on `/mcp` and `/ws`\n";
    assert_eq!(
        anchors(headings),
        [
            "title",
            "usage",
            "usage-1",
            "usage-2",
            "6-mcp-on-mcp-and-ws"
        ]
    );
}

/// The key names as a doc lists them (`ENTER TAB ...`, or `` `ENTER`, `TAB`, ... ``, across line
/// breaks): every list of five names or more that starts with the first key is the whole list,
/// in `Key::ALL`'s order. A shorter one (the keys the terminal UI binds) is a choice, not a copy.
#[test]
fn every_list_of_key_names_in_the_docs_is_key_all() {
    use browserenv::models::Key;
    let names: Vec<&str> = Key::ALL.iter().map(|key| key.name()).collect();
    let is_name = |word: &str| names.contains(&word);
    let mut wrong = Vec::new();
    for file in markdown_files(&repo_root()) {
        let text = std::fs::read_to_string(&file).unwrap();
        let words: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || matches!(c, '`' | ',' | '(' | ')' | '|' | ':'))
            .filter(|word| !word.is_empty())
            .collect();
        for (at, word) in words.iter().enumerate() {
            if *word != names[0] || (at > 0 && is_name(words[at - 1])) {
                continue;
            }
            let listed: Vec<&str> = words[at..]
                .iter()
                .copied()
                .take_while(|word| is_name(word))
                .collect();
            if listed.len() >= 5 && listed != names {
                wrong.push(format!("{}: {}", file.display(), listed.join(" ")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "key lists that are not Key::ALL ({}):\n{}",
        names.join(" "),
        wrong.join("\n")
    );
}

/// docs/server.md's table of actions lists every op of `Op::ALL`, in its order, each with the
/// fields it acts on (`Op::fields`) and no other: a new op or field is documented or this fails.
#[test]
fn the_documented_action_table_is_every_op_with_its_fields() {
    use browserenv::models::Op;
    let doc = std::fs::read_to_string(repo_root().join("docs/server.md")).unwrap();
    let table = doc
        .split("\n## Actions\n")
        .nth(1)
        .expect("docs/server.md has its Actions section");
    let every_field: BTreeSet<&str> = Op::ALL
        .iter()
        .flat_map(|op| op.fields().iter().copied())
        .collect();
    let mut listed = Vec::new();
    for line in table.lines().skip_while(|l| !l.starts_with("| `")) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0].trim_start_matches("| ").trim_matches('`');
        let op = Op::from_name(name)
            .unwrap_or_else(|| panic!("docs/server.md lists {name:?}, not an op"));
        let named: BTreeSet<&str> = cells[1]
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| every_field.contains(word))
            .collect();
        let fields: BTreeSet<&str> = op.fields().iter().copied().collect();
        assert_eq!(named, fields, "docs/server.md's fields of {op}");
        listed.push(op);
    }
    assert_eq!(listed, Op::ALL.to_vec(), "every op, in Op::ALL's order");
}
