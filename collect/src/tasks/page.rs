//! What a check reads of the final page and of the episode.

use std::collections::{BTreeMap, BTreeSet};

use browserenv::secrets::Secrets;

/// What a selector found on the final page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The first element it matches: its text (or a field's value), and whether it is a secret
    /// field (its value is never quoted).
    Found {
        text: String,
        secret: bool,
    },
    Missing,
    /// The page refused the selector (a syntax error), with what it said.
    BadSelector(String),
}

/// A request a page of the episode made, as the browser saw it leave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeenRequest {
    pub method: String,
    pub url: String,
    /// The body (cut; empty when there was none), as text.
    pub body: String,
    /// It never reached a server (refused, unreachable, cancelled): no check counts it.
    pub failed: bool,
}

/// What a check reads of the final page and the episode beyond the answer, the URL and the text;
/// the browser reads only what `Check::wants` lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageState {
    /// By selector.
    pub elements: BTreeMap<String, Lookup>,
    /// By selector.
    pub fields: BTreeMap<String, Lookup>,
    /// The final page's cookies by name.
    pub cookies: BTreeMap<String, String>,
    /// By key: the item, or `None` when there is none.
    pub local_storage: BTreeMap<String, Option<String>>,
    /// Every request of the episode the browser kept (the newest, when there were very many).
    pub requests: Vec<SeenRequest>,
    /// Why the final page could not be read, when it could not (a hung renderer): the parts that
    /// needed it fail and say so.
    pub unread: Option<String>,
}

/// Nothing read: for checks that need only the answer, the URL and the text.
static NOTHING_READ: PageState = PageState {
    elements: BTreeMap::new(),
    fields: BTreeMap::new(),
    cookies: BTreeMap::new(),
    local_storage: BTreeMap::new(),
    requests: Vec::new(),
    unread: None,
};

/// What a check needs read from the browser at the end of an episode, besides the URL and text
/// every observation has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wants {
    pub elements: BTreeSet<String>,
    pub fields: BTreeSet<String>,
    pub local_storage: BTreeSet<String>,
    pub cookies: bool,
    pub requests: bool,
}

impl Wants {
    /// Nothing beyond the URL and the text: no read of the page at the end.
    pub fn is_empty(&self) -> bool {
        self == &Wants::default()
    }

    /// Whether the page's document is asked anything (elements, fields, storage).
    pub fn reads_document(&self) -> bool {
        !(self.elements.is_empty() && self.fields.is_empty() && self.local_storage.is_empty())
    }
}

/// How an episode ended, as a check judges it.
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    /// The `finish` text.
    pub answer: &'a str,
    pub url: &'a str,
    pub page_text: &'a str,
    pub state: &'a PageState,
    /// The episode's secrets: what the page holds is quoted in the details with them hidden,
    /// before it is quoted and cut (a quote escapes `!` and `"`, a cut can halve a secret, a
    /// URL encodes a space as `+`: the same secret spelled otherwise would stay).
    pub secrets: &'a Secrets,
}

static NO_SECRETS: std::sync::LazyLock<Secrets> = std::sync::LazyLock::new(Secrets::default);

impl Default for Ending<'_> {
    fn default() -> Self {
        Ending {
            answer: "",
            url: "",
            page_text: "",
            state: &NOTHING_READ,
            secrets: &NO_SECRETS,
        }
    }
}
