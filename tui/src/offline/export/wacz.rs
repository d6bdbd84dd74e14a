//! The `wacz` export: the kept episodes' web archives as one WACZ package.

use std::path::Path;

use browserenv_collect::trajectory::Recording;

use super::{ExportReport, Frames, Selection};
use crate::review::Review;

/// The kept episodes' archives (copied into `OUT/archives/` first) as `OUT/recording.wacz`, its
/// pages every page a step showed (in order, each once), then the loose copies removed.
pub(super) fn write(
    recording: &Recording,
    review: &Review,
    selection: &Selection,
    frames: &Frames,
    report: &mut ExportReport,
) -> anyhow::Result<()> {
    let mut warcs = Vec::new();
    for file in frames.archives.values() {
        let path = frames.out.join(file);
        let name = Path::new(file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        warcs.push((name, path));
    }
    anyhow::ensure!(
        !warcs.is_empty(),
        "no episode kept has a web archive (record with --archive)"
    );
    let mut pages: Vec<browserenv_archive::WaczPage> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for step in recording
        .steps
        .iter()
        .filter(|s| selection.keeps_step(review, s) && frames.archives.contains_key(&s.episode_id))
    {
        for url in [&step.url, &step.next_url] {
            let web = url.starts_with("http://") || url.starts_with("https://");
            if web && seen.insert(url.clone()) {
                let date = chrono::DateTime::parse_from_rfc3339(&step.time)
                    .map(std::time::SystemTime::from)
                    .unwrap_or_else(|_| std::time::SystemTime::now());
                pages.push(browserenv_archive::WaczPage {
                    url: url.clone(),
                    title: String::new(),
                    date,
                });
            }
        }
    }
    let path = frames.out.join("recording.wacz");
    let _ = std::fs::remove_file(&path);
    browserenv_archive::write_wacz(
        &path,
        "browserenv recording",
        &warcs,
        &pages,
        &Default::default(),
    )
    .map_err(|why| anyhow::anyhow!(why))?;
    for (_, copy) in &warcs {
        let _ = std::fs::remove_file(copy);
        let _ = std::fs::remove_file(browserenv_archive::index_path(copy));
    }
    let _ = std::fs::remove_dir(frames.out.join(browserenv_archive::ARCHIVES_DIR));
    report.rows = pages.len();
    Ok(())
}
