//! What comes back: the observation, the step result and the state.

use super::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserObservation {
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Base64-encoded PNG.
    pub screenshot: String,
    pub url: String,
    #[serde(default)]
    pub error: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StepResult {
    pub observation: BrowserObservation,
    pub reward: Option<f64>,
    pub done: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BrowserState {
    pub episode_id: Option<String>,
    #[serde(default)]
    pub step_count: u64,
}
