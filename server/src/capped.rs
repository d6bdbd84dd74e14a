//! What a page makes without end, kept within bounds: of each kind of incident the first
//! `INCIDENTS_KEPT` and a count of the rest (`Capped`), and each text cut to `INCIDENT_TEXT_CHARS`
//! characters (`clip`). Used by the browser seam's incidents, the Chromium adapter, the egress
//! proxy's refusals and an archive replay's misses.

/// How many incidents of one kind a step keeps; the rest are only counted. A page can raise
/// thousands per step (an alert loop made 2,235 in one click, a 2.3 MiB observation).
pub const INCIDENTS_KEPT: usize = 10;

/// Characters kept of a URL or dialog message in an incident (`data:` URLs run to megabytes).
pub const INCIDENT_TEXT_CHARS: usize = 200;

/// The first `INCIDENTS_KEPT` incidents of a kind, and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped<T> {
    pub kept: Vec<T>,
    pub more: u64,
}

impl<T> Default for Capped<T> {
    fn default() -> Self {
        Capped {
            kept: Vec::new(),
            more: 0,
        }
    }
}

impl<T> Capped<T> {
    pub fn push(&mut self, item: T) {
        if self.kept.len() < INCIDENTS_KEPT {
            self.kept.push(item);
        } else {
            self.more += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Kept and counted together.
    pub fn total(&self) -> u64 {
        self.kept.len() as u64 + self.more
    }
}

/// `text` cut to `INCIDENT_TEXT_CHARS` characters, saying how much was left out.
pub fn clip(text: &str) -> String {
    clipped(text, text.chars().count())
}

/// The start of a text of `length` characters (the page cut it already), marked when longer.
pub fn clipped(start: &str, length: usize) -> String {
    let kept: String = start.chars().take(INCIDENT_TEXT_CHARS).collect();
    let left_out = length.saturating_sub(kept.chars().count());
    if left_out == 0 {
        kept
    } else {
        format!("{kept}… ({left_out} more characters)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incidents_keep_the_first_ones_and_count_the_rest() {
        let mut list = Capped::default();
        for i in 0..25 {
            list.push(i);
        }
        assert_eq!(list.kept, (0..INCIDENTS_KEPT as i32).collect::<Vec<_>>());
        assert_eq!(list.more, 25 - INCIDENTS_KEPT as u64);
        assert_eq!(list.total(), 25);
    }

    #[test]
    fn long_texts_are_clipped_and_say_how_much() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(INCIDENT_TEXT_CHARS + 7);
        let clipped_text = clip(&long);
        assert!(clipped_text.starts_with(&"é".repeat(INCIDENT_TEXT_CHARS)));
        assert!(
            clipped_text.ends_with("… (7 more characters)"),
            "{clipped_text}"
        );
        // A start the page cut already, with the full length it reported.
        assert_eq!(clipped("data:x", 5000), "data:x… (4994 more characters)");
    }
}
