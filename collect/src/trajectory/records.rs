//! The format's records: steps, episodes, actors and outcomes, and their timestamps.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    Human,
    Agent,
}

/// One step: the frame before, the action, and what followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub schema: String,
    pub episode_id: String,
    /// 1 for the first action after reset.
    pub step: u64,
    /// When the observation came back, RFC 3339 UTC.
    pub time: String,
    pub actor: Actor,
    /// The screenshot the actor saw before acting, relative to the recording folder.
    pub file_name: String,
    pub url: String,
    /// The action as sent on the wire (every field, explicit nulls).
    pub action: Value,
    /// The screenshot after the action ("" when the page could not paint).
    pub next_file_name: String,
    pub next_url: String,
    pub error: String,
    pub reward: Option<f64>,
    pub done: bool,
    pub latency_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The element under the pointer or in focus (tag, role, name, text, bbox), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<Value>,
}

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `finish` was sent (with or without an answer).
    Finished,
    /// The step limit ended it.
    StepLimit,
    /// A bot-verification page ended it.
    Blocked,
    /// The page could not be observed any more (renderer timeout or crash, browser gone).
    Failed,
    /// The actor left it (quit, reset, disconnect) before it ended.
    Abandoned,
    /// The recorder stopped without writing the end (a crash or a kill); found on the next start.
    Incomplete,
}

impl Outcome {
    /// The outcome of an episode whose last observation said `done`, from its action and error.
    pub fn of_done_step(op: &str, error: &str) -> Outcome {
        match (op, browserenv::ObservationError::parse(error)) {
            ("finish", _) => Outcome::Finished,
            (_, Some(browserenv::ObservationError::BlockedByBotVerification)) => Outcome::Blocked,
            (_, Some(error)) if error.page_lost() => Outcome::Failed,
            _ => Outcome::StepLimit,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub schema: String,
    pub episode_id: String,
    pub actor: Actor,
    /// Who demonstrated it, in a campaign (`--campaign`): the name they collect under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub start_url: String,
    pub started: String,
    pub ended: String,
    pub steps: u64,
    pub outcome: Outcome,
    /// The `finish` text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The last reward (1.0 / 0.0 for a task episode).
    pub reward: Option<f64>,
    /// A judged task episode's whole verdict, with the details its observation leaves out
    /// (`Verdict::shown`): only a recorder told it (the server's) writes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::tasks::Verdict>,
    /// The web archive of what the episode's pages loaded (`--archive`), as of its last
    /// observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveRef>,
}

/// An episode's web archive (docs/archives.md): where it is, how many responses it holds, and what
/// its bounds left out. The server says so in every observation's `metadata.archive`; the episode
/// line keeps the last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveRef {
    /// The WARC file, relative to the recording folder (`archives/<episode>.warc.gz`).
    pub file: String,
    /// Responses kept, with their requests.
    pub responses: u64,
    #[serde(default)]
    pub left_out: ArchiveLeftOut,
}

/// What an archive's bounds left out (`BROWSER_ARCHIVE_BODY_MB`, `BROWSER_ARCHIVE_EPISODE_MB`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveLeftOut {
    /// Responses kept without their body: longer than a body may be, or unreadable (a stream).
    pub bodies: u64,
    /// Responses not kept at all: the episode's archive was full.
    pub responses: u64,
}

impl ArchiveRef {
    /// The archive an observation's metadata names, if any.
    pub fn from_metadata(metadata: &serde_json::Map<String, Value>) -> Option<ArchiveRef> {
        serde_json::from_value(metadata.get("archive")?.clone()).ok()
    }
}

/// RFC 3339 UTC with milliseconds: `2026-11-30T02:15:46.123Z`.
pub fn timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

pub fn now() -> String {
    timestamp(SystemTime::now())
}

#[cfg(test)]
mod archive_tests {
    use super::*;

    #[test]
    fn an_archive_named_in_metadata_is_kept_as_the_server_said_it() {
        let metadata = serde_json::json!({
            "title": "t",
            "archive": {"file": "archives/e1.warc.gz", "responses": 7, "left_out": {"bodies": 1, "responses": 2}},
        });
        let found = ArchiveRef::from_metadata(metadata.as_object().unwrap()).unwrap();
        assert_eq!(found.file, "archives/e1.warc.gz");
        assert_eq!(
            (found.responses, found.left_out),
            (
                7,
                ArchiveLeftOut {
                    bodies: 1,
                    responses: 2
                }
            )
        );
        // A replay's metadata names the archive it answers from, not a file of the recording.
        let replay = serde_json::json!({"archive": {"replay": "pack/a.warc.gz", "answered": 3}});
        assert_eq!(ArchiveRef::from_metadata(replay.as_object().unwrap()), None);
        assert_eq!(ArchiveRef::from_metadata(&serde_json::Map::new()), None);
    }
}
