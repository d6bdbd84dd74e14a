//! A check's verdict, and what of it is shown to anyone but the server.

use serde::{Deserialize, Serialize};

use super::CheckPart;

/// The verdict of a check: whether it passed, the parts that failed, and one line per part so a
/// person can see why. The lines quote what the check expects (the answer, the pattern, the
/// text), so the whole verdict goes to the recording and the server's log only: the actor is
/// shown `Verdict::shown`, or it could read the answer off a failed attempt and finish again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub passed: bool,
    #[serde(default)]
    pub failed: Vec<CheckPart>,
    #[serde(default)]
    pub details: Vec<String>,
}

/// What the actor (every wire: the agent, the terminal UI, watchers) is told of a verdict: whether
/// it passed and which parts failed, nothing of what they expect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownVerdict {
    pub passed: bool,
    pub failed: Vec<CheckPart>,
}

/// A verdict where a whole one is expected (a recording's episode line handed out for review),
/// with the details left out.
impl From<ShownVerdict> for Verdict {
    fn from(shown: ShownVerdict) -> Verdict {
        Verdict {
            passed: shown.passed,
            failed: shown.failed,
            details: Vec::new(),
        }
    }
}

impl Verdict {
    /// The verdict as it may leave the server in an observation. The one rule for that: the
    /// `details` never do.
    pub fn shown(&self) -> ShownVerdict {
        ShownVerdict {
            passed: self.passed,
            failed: self.failed.clone(),
        }
    }
}
