//! The one reader of a docs table for the tests that hold a list of codes to its documentation
//! (`browserenv::ObservationError` to docs/server.md, the API's `Code` to docs/server.md and
//! docs/campaigns.md). The crates' unit tests include this file as a module of theirs (`#[path]`);
//! it uses nothing but std.

/// The rows of the first table after the heading `heading` (a whole line, `## Name`) of the
/// Markdown text `doc`: each row's cells, trimmed, with the backticks around a cell taken off;
/// the header row and the separator row left out.
pub fn rows(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let section = doc
        .split(&format!("\n{heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("the doc has no {heading:?}"));
    let table = section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'));
    table
        .skip(2)
        .map(|line| {
            let cells = line.trim_matches('|').split('|');
            cells
                .map(|cell| cell.trim().trim_matches('`').to_string())
                .collect()
        })
        .collect()
}
