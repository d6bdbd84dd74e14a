//! Task sets: JSONL files, one task per line, each with an instruction for the actor and a check
//! that decides, when the episode finishes, whether it succeeded (reward 1.0) or not (0.0).
//!
//! ```json
//! {"id":"info-drill-price","category":"information","instruction":"What does the 18V drill cost?",
//!  "start_url":"index.html","max_steps":15,"check":{"answer":{"match":"normalized","value":"129.00"}}}
//! ```
//! `start_url` may be relative to a base (the demo site). A check has one or more parts, and all
//! of them must pass (`docs/tasks.md` has an example of each):
//! - `answer`: the `finish` text, matched `exact`, `normalized` or by `regex`;
//! - `url`: a regex the final URL must match; `page_text_contains`: text the final page shows;
//! - `element`: an element of the final page (a CSS selector), and its text;
//! - `field`: the value of a form field of the final page;
//! - `request`: a request a page of the episode made (method, URL, body);
//! - `cookie`, `local_storage`: a cookie or a `localStorage` item of the final page, and its value;
//! - `all_of`, `any_of`: checks of their own, all or at least one of which must pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;

use crate::secrets::Secrets;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Information,
    Navigation,
    Interaction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    Exact,
    /// Case, punctuation and spacing do not matter: "$129.00" matches "129 00".
    Normalized,
    Regex,
}

/// How a text (the answer, an element's text, a field's value, ...) must look: `{"match": mode,
/// "value": ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextMatch {
    #[serde(rename = "match")]
    pub mode: MatchMode,
    pub value: String,
}

impl TextMatch {
    pub fn matches(&self, text: &str) -> bool {
        match self.mode {
            MatchMode::Exact => text.trim() == self.value,
            MatchMode::Normalized => normalize(text) == normalize(&self.value),
            // Searched, so anchor the pattern to match the whole text.
            MatchMode::Regex => pattern(&self.value).is_ok_and(|re| re.is_match(text)),
        }
    }

    fn validate(&self, at: &str) -> Result<(), String> {
        if self.mode == MatchMode::Regex {
            pattern(&self.value).map_err(|err| format!("{at} regex: {err}"))?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{:?} ({:?})", self.value, self.mode)
    }
}

/// An element of the final page, found with a CSS selector (the first match): it must be there,
/// and its text (`innerText`) match `text` when given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementCheck {
    pub selector: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextMatch>,
}

/// A form field of the final page (the first match of the selector): its value must match. A
/// checkbox or radio button has its `value` when checked and none when not, as a form would send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldCheck {
    pub selector: String,
    pub value: TextMatch,
}

/// A request a page of the episode made from its main frame and that was sent (one that failed
/// to reach a server does not count): one request must match every part given. `body_contains` is looked for in the body as sent and, for a form, decoded
/// (`name=Ada Lovelace` finds `name=Ada+Lovelace`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCheck {
    /// `GET`, `POST`, ... (any case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A regex the request's URL must match (searched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Texts the body must all contain: one, or a list.
    #[serde(
        default,
        deserialize_with = "one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub body_contains: Vec<String>,
}

/// `"text"` or `["text", ...]`.
fn one_or_many<'de, D: serde::Deserializer<'de>>(from: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged, expecting = "a string or a list of strings")]
    enum Texts {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Texts::deserialize(from)? {
        Texts::One(text) => vec![text],
        Texts::Many(texts) => texts,
    })
}

/// A cookie the final page has (HttpOnly ones too): it must be there, and its value match `value`
/// when given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CookieCheck {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<TextMatch>,
}

/// An item of the final page's `localStorage` (its origin's): it must be there, and its value
/// match `value` when given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageCheck {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<TextMatch>,
}

/// A task's check: every part given must pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<TextMatch>,
    /// A regex the final URL must match (searched, so anchor it if needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_text_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<ElementCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<FieldCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<CookieCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_storage: Option<StorageCheck>,
    /// Checks that must all pass (two checks of one kind, or a group inside `any_of`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_of: Option<Vec<Check>>,
    /// Checks of which at least one must pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<Check>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: String,
    pub category: Category,
    pub instruction: String,
    pub start_url: String,
    #[serde(default = "default_max_steps")]
    pub max_steps: u64,
    pub check: Check,
    /// A web archive of the task's pages (a WARC file, relative to the task file): the task runs
    /// from it, with no network (docs/archives.md). `browserenv-tui tasks snapshot` writes these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
}

fn default_max_steps() -> u64 {
    20
}

/// A part of a task's check, named as in the task file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckPart {
    Answer,
    Url,
    PageTextContains,
    Element,
    Field,
    Request,
    Cookie,
    LocalStorage,
    AllOf,
    AnyOf,
}

impl CheckPart {
    /// Every part, in the order a check is judged (and its parts listed).
    pub const ALL: [CheckPart; 10] = [
        CheckPart::Answer,
        CheckPart::Url,
        CheckPart::PageTextContains,
        CheckPart::Element,
        CheckPart::Field,
        CheckPart::Request,
        CheckPart::Cookie,
        CheckPart::LocalStorage,
        CheckPart::AllOf,
        CheckPart::AnyOf,
    ];

    /// Its name in the task file (and on the wire).
    pub fn name(self) -> &'static str {
        match self {
            CheckPart::Answer => "answer",
            CheckPart::Url => "url",
            CheckPart::PageTextContains => "page_text_contains",
            CheckPart::Element => "element",
            CheckPart::Field => "field",
            CheckPart::Request => "request",
            CheckPart::Cookie => "cookie",
            CheckPart::LocalStorage => "local_storage",
            CheckPart::AllOf => "all_of",
            CheckPart::AnyOf => "any_of",
        }
    }
}

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

/// The most characters of the final URL a verdict's details quote.
pub const DETAIL_URL_CHARS: usize = 2048;
/// The most characters of what a page holds (an element's text, a request's URL, a stored value)
/// a verdict's details quote.
pub const DETAIL_TEXT_CHARS: usize = 200;
/// How deep `all_of` and `any_of` may nest, and how many parts a task's check may have in all.
pub const MAX_CHECK_DEPTH: usize = 4;
pub const MAX_CHECK_PARTS: usize = 64;
/// The most memory a compiled pattern of a task file may take: enough for any pattern a person
/// writes, and a check of 256 requests stays milliseconds (`\w{100}` compiles to megabytes and
/// is refused).
const PATTERN_BYTES: usize = 256 * 1024;

/// A pattern of a task file, compiled within `PATTERN_BYTES`.
fn pattern(text: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(text)
        .size_limit(PATTERN_BYTES)
        .dfa_size_limit(PATTERN_BYTES)
        .build()
}

/// Lower case, letters and digits only, single spaces.
pub fn normalize(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first `max` characters of `text`, marked when there was more.
fn quoted(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

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

/// A form body decoded (`+` and `%XX`), as `key=value` pairs joined by `&`.
fn decoded_form(body: &str) -> String {
    url::form_urlencoded::parse(body.as_bytes())
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join("&")
}

impl RequestCheck {
    /// The first request that matches (its URL pattern compiled once, not once a request).
    fn find<'a>(&self, requests: &'a [SeenRequest]) -> Option<&'a SeenRequest> {
        let url = match &self.url {
            Some(text) => Some(pattern(text).ok()?),
            None => None,
        };
        requests
            .iter()
            .find(|request| self.matches(request, url.as_ref()))
    }

    fn matches(&self, request: &SeenRequest, url: Option<&Regex>) -> bool {
        if request.failed {
            return false;
        }
        let method = self
            .method
            .as_ref()
            .is_none_or(|method| method.eq_ignore_ascii_case(&request.method));
        let url = url.is_none_or(|re| re.is_match(&request.url));
        let body = self.body_contains.is_empty() || {
            let decoded = decoded_form(&request.body);
            self.body_contains
                .iter()
                .all(|text| request.body.contains(text.as_str()) || decoded.contains(text.as_str()))
        };
        method && url && body
    }

    fn describe(&self) -> String {
        let mut parts = vec![self.method.clone().unwrap_or_else(|| "any method".into())];
        if let Some(url) = &self.url {
            parts.push(format!("to /{url}/"));
        }
        if !self.body_contains.is_empty() {
            parts.push(format!("with {:?} in its body", self.body_contains));
        }
        format!("a request {}", parts.join(" "))
    }
}

impl Check {
    /// The parts this check has, in `CheckPart::ALL` order.
    pub fn parts(&self) -> Vec<CheckPart> {
        CheckPart::ALL
            .into_iter()
            .filter(|part| self.has(*part))
            .collect()
    }

    fn has(&self, part: CheckPart) -> bool {
        match part {
            CheckPart::Answer => self.answer.is_some(),
            CheckPart::Url => self.url.is_some(),
            CheckPart::PageTextContains => self.page_text_contains.is_some(),
            CheckPart::Element => self.element.is_some(),
            CheckPart::Field => self.field.is_some(),
            CheckPart::Request => self.request.is_some(),
            CheckPart::Cookie => self.cookie.is_some(),
            CheckPart::LocalStorage => self.local_storage.is_some(),
            CheckPart::AllOf => self.all_of.is_some(),
            CheckPart::AnyOf => self.any_of.is_some(),
        }
    }

    /// Its parts and those of the checks inside it.
    fn count_parts(&self) -> usize {
        self.parts().len() + self.nested().map(Check::count_parts).sum::<usize>()
    }

    fn nested(&self) -> impl Iterator<Item = &Check> {
        self.all_of.iter().chain(self.any_of.iter()).flatten()
    }

    /// What the browser must read at the end for this check (and the checks inside it).
    pub fn wants(&self) -> Wants {
        let mut wants = Wants::default();
        self.add_wants(&mut wants);
        wants
    }

    fn add_wants(&self, wants: &mut Wants) {
        if let Some(element) = &self.element {
            wants.elements.insert(element.selector.clone());
        }
        if let Some(field) = &self.field {
            wants.fields.insert(field.selector.clone());
        }
        if let Some(item) = &self.local_storage {
            wants.local_storage.insert(item.key.clone());
        }
        wants.cookies |= self.cookie.is_some();
        wants.requests |= self.request.is_some();
        for check in self.nested() {
            check.add_wants(wants);
        }
    }

    /// Judge every part; the details of each go to `details` (prefixed with where the part sits),
    /// and the parts that failed are returned.
    fn judge(&self, ending: &Ending, at: &str, details: &mut Vec<String>) -> Vec<CheckPart> {
        let mut failed = Vec::new();
        for part in self.parts() {
            let (ok, detail) = self.judge_part(part, ending, at, details);
            if let Some(detail) = detail {
                details.push(format!("{at}{detail}"));
            }
            if !ok {
                failed.push(part);
            }
        }
        failed
    }

    /// One part: whether it passed, and its line of details (the combinations write their
    /// checks' lines themselves).
    fn judge_part(
        &self,
        part: CheckPart,
        ending: &Ending,
        at: &str,
        details: &mut Vec<String>,
    ) -> (bool, Option<String>) {
        let verb = |ok: bool| if ok { "matches" } else { "does not match" };
        let state = ending.state;
        let unread = |what: &str| {
            let why = state.unread.as_deref().unwrap_or("not read");
            (
                false,
                Some(format!("{what}: the final page could not be read ({why})")),
            )
        };
        match part {
            CheckPart::Answer => {
                let check = self.answer.as_ref().expect("a part it has");
                let ok = check.matches(ending.answer);
                let line = format!(
                    "answer {:?} {} {}",
                    ending.secrets.hidden(ending.answer),
                    verb(ok),
                    check.describe()
                );
                (ok, Some(line))
            }
            CheckPart::Url => {
                let url_pattern = self.url.as_ref().expect("a part it has");
                let ok = pattern(url_pattern).is_ok_and(|re| re.is_match(ending.url));
                // A page can make its URL megabytes long; the details go to the log once an episode.
                let url = ending.secrets.shown_url(ending.url);
                let shown_url: String = match url.char_indices().nth(DETAIL_URL_CHARS) {
                    Some((cut, _)) => format!("{}…", &url[..cut]),
                    None => url.into_owned(),
                };
                (
                    ok,
                    Some(format!(
                        "final URL {shown_url} {} /{url_pattern}/",
                        verb(ok)
                    )),
                )
            }
            CheckPart::PageTextContains => {
                let text = self.page_text_contains.as_ref().expect("a part it has");
                let ok = normalize(ending.page_text).contains(&normalize(text));
                let shows = if ok { "shows" } else { "does not show" };
                (ok, Some(format!("final page {shows} {text:?}")))
            }
            CheckPart::Element => {
                let check = self.element.as_ref().expect("a part it has");
                let what = format!("element {:?}", check.selector);
                match state.elements.get(&check.selector) {
                    None if state.unread.is_some() => unread(&what),
                    Some(Lookup::Found { text, .. }) => match &check.text {
                        Some(want) => {
                            let ok = want.matches(text);
                            let line = format!(
                                "{what} text {} {} {}",
                                quoted(&ending.secrets.hidden(text), DETAIL_TEXT_CHARS),
                                verb(ok),
                                want.describe()
                            );
                            (ok, Some(line))
                        }
                        None => (true, Some(format!("{what} is on the final page"))),
                    },
                    found => (false, Some(not_found(&what, found))),
                }
            }
            CheckPart::Field => {
                let check = self.field.as_ref().expect("a part it has");
                let what = format!("field {:?}", check.selector);
                match state.fields.get(&check.selector) {
                    None if state.unread.is_some() => unread(&what),
                    Some(Lookup::Found { text, secret }) => {
                        let ok = check.value.matches(text);
                        // A password's value stays out of the log.
                        let value = if *secret {
                            format!("(secret, {} characters)", text.chars().count())
                        } else {
                            quoted(&ending.secrets.hidden(text), DETAIL_TEXT_CHARS)
                        };
                        let line = format!(
                            "{what} value {value} {} {}",
                            verb(ok),
                            check.value.describe()
                        );
                        (ok, Some(line))
                    }
                    found => (false, Some(not_found(&what, found))),
                }
            }
            CheckPart::Request => {
                let check = self.request.as_ref().expect("a part it has");
                let found = check.find(&state.requests);
                let line = match found {
                    Some(request) => format!(
                        "{} was made: {} {}",
                        check.describe(),
                        request.method,
                        quoted(&ending.secrets.shown_url(&request.url), DETAIL_TEXT_CHARS)
                    ),
                    None => format!(
                        "{} was not made (the episode made {} requests)",
                        check.describe(),
                        state.requests.len()
                    ),
                };
                (found.is_some(), Some(line))
            }
            CheckPart::Cookie => {
                let check = self.cookie.as_ref().expect("a part it has");
                let what = format!("cookie {:?}", check.name);
                match (state.cookies.get(&check.name), &check.value) {
                    (None, _) if state.unread.is_some() => unread(&what),
                    (None, _) => (false, Some(format!("{what} is not set"))),
                    (Some(_), None) => (true, Some(format!("{what} is set"))),
                    // Cookies hold sessions: their values stay out of the log.
                    (Some(value), Some(want)) => {
                        let ok = want.matches(value);
                        let line = format!(
                            "{what} ({} characters) {} {}",
                            value.chars().count(),
                            verb(ok),
                            want.describe()
                        );
                        (ok, Some(line))
                    }
                }
            }
            CheckPart::LocalStorage => {
                let check = self.local_storage.as_ref().expect("a part it has");
                let what = format!("localStorage {:?}", check.key);
                match (state.local_storage.get(&check.key), &check.value) {
                    (None, _) if state.unread.is_some() => unread(&what),
                    (None | Some(None), _) => (false, Some(format!("{what} is not set"))),
                    (Some(Some(_)), None) => (true, Some(format!("{what} is set"))),
                    (Some(Some(value)), Some(want)) => {
                        let ok = want.matches(value);
                        let line = format!(
                            "{what} {} {} {}",
                            quoted(&ending.secrets.hidden(value), DETAIL_TEXT_CHARS),
                            verb(ok),
                            want.describe()
                        );
                        (ok, Some(line))
                    }
                }
            }
            CheckPart::AllOf | CheckPart::AnyOf => {
                let (checks, name) = match part {
                    CheckPart::AllOf => (self.all_of.as_ref(), "all_of"),
                    _ => (self.any_of.as_ref(), "any_of"),
                };
                let checks = checks.expect("a part it has");
                let passed = checks
                    .iter()
                    .enumerate()
                    .filter(|(index, check)| {
                        check
                            .judge(ending, &format!("{at}{name}[{index}]: "), details)
                            .is_empty()
                    })
                    .count();
                let ok = match part {
                    CheckPart::AllOf => passed == checks.len(),
                    _ => passed > 0,
                };
                let line = format!("{name}: {passed} of {} checks passed", checks.len());
                (ok, Some(line))
            }
        }
    }

    /// Whether the check can be judged: at least one part, patterns that compile, names and
    /// selectors given, combinations not empty nor too deep. `at` names it in the messages.
    fn validate(&self, at: &str, depth: usize) -> Result<(), String> {
        if self.parts().is_empty() {
            let names: Vec<&str> = CheckPart::ALL.iter().map(|part| part.name()).collect();
            return Err(format!("{at} needs at least one of {}", names.join(", ")));
        }
        if let Some(answer) = &self.answer {
            answer.validate(&format!("{at}.answer"))?;
        }
        if let Some(url) = &self.url {
            pattern(url).map_err(|err| format!("{at}.url regex: {err}"))?;
        }
        if let Some(element) = &self.element {
            selector(&element.selector, &format!("{at}.element"))?;
            if let Some(text) = &element.text {
                text.validate(&format!("{at}.element.text"))?;
            }
        }
        if let Some(field) = &self.field {
            selector(&field.selector, &format!("{at}.field"))?;
            field.value.validate(&format!("{at}.field.value"))?;
        }
        if let Some(request) = &self.request {
            let at = format!("{at}.request");
            if request.method.is_none() && request.url.is_none() && request.body_contains.is_empty()
            {
                return Err(format!("{at} needs method, url or body_contains"));
            }
            if let Some(method) = &request.method {
                if method.is_empty() || !method.chars().all(|c| c.is_ascii_alphabetic()) {
                    return Err(format!("{at}.method {method:?} is not an HTTP method"));
                }
            }
            if let Some(url) = &request.url {
                pattern(url).map_err(|err| format!("{at}.url regex: {err}"))?;
            }
        }
        if let Some(cookie) = &self.cookie {
            if cookie.name.trim().is_empty() {
                return Err(format!("{at}.cookie.name is empty"));
            }
            if let Some(value) = &cookie.value {
                value.validate(&format!("{at}.cookie.value"))?;
            }
        }
        if let Some(item) = &self.local_storage {
            if item.key.is_empty() {
                return Err(format!("{at}.local_storage.key is empty"));
            }
            if let Some(value) = &item.value {
                value.validate(&format!("{at}.local_storage.value"))?;
            }
        }
        for (name, checks) in [("all_of", &self.all_of), ("any_of", &self.any_of)] {
            let Some(checks) = checks else { continue };
            if checks.is_empty() {
                return Err(format!("{at}.{name} is empty"));
            }
            if depth >= MAX_CHECK_DEPTH {
                return Err(format!(
                    "{at}.{name}: all_of and any_of nest {MAX_CHECK_DEPTH} deep at most"
                ));
            }
            for (index, check) in checks.iter().enumerate() {
                check.validate(&format!("{at}.{name}[{index}]"), depth + 1)?;
            }
        }
        Ok(())
    }
}

/// The most characters of a selector.
const MAX_SELECTOR_CHARS: usize = 1000;

fn selector(selector: &str, at: &str) -> Result<(), String> {
    if selector.trim().is_empty() {
        return Err(format!("{at}.selector is empty"));
    }
    if selector.chars().count() > MAX_SELECTOR_CHARS {
        return Err(format!(
            "{at}.selector is longer than {MAX_SELECTOR_CHARS} characters"
        ));
    }
    Ok(())
}

/// The details line of an element or field that was not found.
fn not_found(what: &str, found: Option<&Lookup>) -> String {
    match found {
        Some(Lookup::BadSelector(why)) => {
            format!(
                "{what}: the page refused the selector ({})",
                quoted(why, DETAIL_TEXT_CHARS)
            )
        }
        _ => format!("{what}: no such element on the final page"),
    }
}

/// What anyone but the server is told of a task: what to do, where it starts, its step limit, and
/// which parts its check has, by name only. Never what the parts expect: the answer, a pattern or
/// a text would let whoever reads it `finish` with reward 1.0 (the Task API, a campaign's lease and
/// its review all hand out tasks this way).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownTask {
    pub id: String,
    pub category: Category,
    pub instruction: String,
    /// Resolved against the base URL when the file gives a relative one (as written when there
    /// is nothing to resolve it against).
    pub start_url: String,
    pub max_steps: u64,
    /// `answer` means the `finish` text is judged.
    pub checks: Vec<CheckPart>,
}

impl Task {
    /// The task as it may leave the server (`ShownTask`): the one rule for that.
    pub fn shown(&self, base: Option<&url::Url>) -> ShownTask {
        ShownTask {
            id: self.id.clone(),
            category: self.category,
            instruction: self.instruction.clone(),
            start_url: self
                .resolve_start_url(base)
                .unwrap_or_else(|_| self.start_url.clone()),
            max_steps: self.max_steps,
            checks: self.check.parts(),
        }
    }

    /// The start URL, resolved against `base` when it is relative.
    pub fn resolve_start_url(&self, base: Option<&url::Url>) -> Result<String, String> {
        match url::Url::parse(&self.start_url) {
            Ok(url) => Ok(url.to_string()),
            Err(url::ParseError::RelativeUrlWithoutBase) => match base {
                Some(base) => base
                    .join(&self.start_url)
                    .map(|url| url.to_string())
                    .map_err(|err| format!("task {}: bad start_url: {err}", self.id)),
                None => Err(format!(
                    "task {} has a relative start_url ({}) and no base URL to resolve it against",
                    self.id, self.start_url
                )),
            },
            Err(err) => Err(format!("task {}: bad start_url: {err}", self.id)),
        }
    }

    /// Judge a finished episode.
    pub fn judge(&self, ending: &Ending) -> Verdict {
        let mut details = Vec::new();
        let failed = self.check.judge(ending, "", &mut details);
        Verdict {
            passed: failed.is_empty(),
            failed,
            details,
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.id.trim().is_empty() {
            return Err("id is empty".into());
        }
        if self.instruction.trim().is_empty() {
            return Err("instruction is empty".into());
        }
        if !(1..=200).contains(&self.max_steps) {
            return Err(format!("max_steps must be 1..=200, got {}", self.max_steps));
        }
        self.check.validate("check", 0)?;
        let parts = self.check.count_parts();
        if parts > MAX_CHECK_PARTS {
            return Err(format!(
                "check has {parts} parts; {MAX_CHECK_PARTS} at most"
            ));
        }
        Ok(())
    }
}

/// A loaded task file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskSet {
    /// The set's name: its file's stem (`demo` for `assets/tasks/demo.jsonl`). The server's Task
    /// API serves the set as the split of this name.
    pub name: String,
    pub tasks: Vec<Task>,
}

impl TaskSet {
    /// Load a JSONL task file. Every bad line is reported with the file and line number; a file
    /// with any bad line is refused as a whole (a task set is an experiment's definition).
    pub fn load(path: &Path) -> Result<TaskSet, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| format!("cannot read the task file {}: {err}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parse a task file's text; `name` is its path as the messages should name it, and its stem
    /// the set's name.
    pub fn parse(text: &str, name: &str) -> Result<TaskSet, String> {
        let mut tasks = Vec::new();
        let mut problems = Vec::new();
        let mut ids = BTreeSet::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("//") {
                continue;
            }
            let at = format!("{name}:{}", index + 1);
            match serde_json::from_str::<Task>(line) {
                Ok(task) => {
                    if let Err(err) = task.validate() {
                        problems.push(format!("{at}: task {}: {err}", task.id));
                    } else if !ids.insert(task.id.clone()) {
                        problems.push(format!("{at}: duplicate task id {:?}", task.id));
                    } else {
                        tasks.push(task);
                    }
                }
                Err(err) => {
                    // The line is the file's: serde's own "at line 1" would say otherwise.
                    let text = err.to_string();
                    let place = format!(" at line {} column {}", err.line(), err.column());
                    let message = text.strip_suffix(&place).unwrap_or(&text);
                    problems.push(format!("{at}: {message} (column {})", err.column()));
                }
            }
        }
        if !problems.is_empty() {
            // One line per problem: regex errors come with line breaks of their own.
            let lines: Vec<String> = problems
                .iter()
                .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            return Err(lines.join("\n"));
        }
        if tasks.is_empty() {
            return Err(format!("{name}: no tasks"));
        }
        let stem = Path::new(name).file_stem().map(|s| s.to_string_lossy());
        Ok(TaskSet {
            name: stem.map_or_else(|| name.to_string(), |s| s.into_owned()),
            tasks,
        })
    }

    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn ids(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| t.id.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end<'a>(answer: &'a str, url: &'a str, page_text: &'a str) -> Ending<'a> {
        Ending {
            answer,
            url,
            page_text,
            ..Ending::default()
        }
    }

    fn task(check: &str) -> Task {
        serde_json::from_str(&format!(
            r#"{{"id":"t","category":"information","instruction":"Do it","start_url":"index.html","check":{check}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn answer_checks_match_exact_normalized_and_regex() {
        let exact = task(r#"{"answer":{"match":"exact","value":"1968"}}"#);
        assert!(exact.judge(&end(" 1968 ", "", "")).passed);
        assert!(!exact.judge(&end("in 1968", "", "")).passed);
        let loose = task(r#"{"answer":{"match":"normalized","value":"$129.00"}}"#);
        assert!(loose.judge(&end("129.00", "", "")).passed);
        assert!(loose.judge(&end(" $129.00 ", "", "")).passed);
        assert!(!loose.judge(&end("129", "", "")).passed);
        let pattern =
            task(r#"{"answer":{"match":"regex","value":"(?i)^\\s*(10|10:00|10 am)\\s*$"}}"#);
        assert!(pattern.judge(&end("10:00", "", "")).passed);
        assert!(!pattern.judge(&end("11:00", "", "")).passed);
    }

    #[test]
    fn url_and_page_text_checks_and_all_parts_must_pass() {
        let both = task(r#"{"url":"catalog\\.html\\?q=clamp","page_text_contains":"3 products"}"#);
        let verdict = both.judge(&end(
            "",
            "http://h/catalog.html?q=clamp",
            "Search\n3 products\n...",
        ));
        assert!(verdict.passed, "{verdict:?}");
        assert_eq!(verdict.details.len(), 2);
        assert!(
            !both
                .judge(&end("", "http://h/catalog.html", "3 products"))
                .passed
        );
        assert!(
            !both
                .judge(&end("", "http://h/catalog.html?q=clamp", "2 products"))
                .passed
        );
    }

    #[test]
    fn the_shown_verdict_names_the_failed_parts_and_nothing_they_expect() {
        let all = task(
            r#"{"answer":{"match":"regex","value":"^19(68)$"},"url":"about\\.html","page_text_contains":"Founded in 1968"}"#,
        );
        let verdict = all.judge(&end("1979", "http://h/about.html", "Nothing here"));
        assert!(!verdict.passed);
        assert_eq!(
            verdict.failed,
            [CheckPart::Answer, CheckPart::PageTextContains]
        );
        assert_eq!(verdict.details.len(), 3);
        assert!(verdict.details[0].contains("^19(68)$"), "{verdict:?}");
        assert_eq!(
            serde_json::to_string(&verdict.shown()).unwrap(),
            r#"{"passed":false,"failed":["answer","page_text_contains"]}"#
        );
        let long = format!("http://h/about.html?{}", "x".repeat(3 * DETAIL_URL_CHARS));
        let cut = &all.judge(&end("1968", &long, "")).details[1];
        assert!(
            cut.contains(&format!("{}… matches", &long[..DETAIL_URL_CHARS])),
            "{cut}"
        );
        let passed = all.judge(&end("1968", "http://h/about.html", "Founded in 1968."));
        assert_eq!(
            serde_json::to_value(passed.shown()).unwrap(),
            serde_json::json!({"passed": true, "failed": []})
        );
    }

    /// A final page with an element, a field, a password, a cookie, a stored item and a form
    /// POST among the episode's requests.
    fn final_page() -> PageState {
        let found = |text: &str, secret| Lookup::Found {
            text: text.into(),
            secret,
        };
        PageState {
            elements: BTreeMap::from([
                ("#cart-count".into(), found("2", false)),
                ("#gone".into(), Lookup::Missing),
                (
                    "[".into(),
                    Lookup::BadSelector("'[' is not a valid selector".into()),
                ),
            ]),
            fields: BTreeMap::from([
                ("#q".into(), found("clamp", false)),
                ("#pw".into(), found("hunter2", true)),
            ]),
            cookies: BTreeMap::from([("hh_consent".into(), "yes".into())]),
            local_storage: BTreeMap::from([
                ("hh-cart".into(), Some(r#"{"5":2}"#.into())),
                ("none".into(), None),
            ]),
            requests: vec![
                SeenRequest {
                    method: "GET".into(),
                    url: "http://h/contact.html".into(),
                    body: String::new(),
                    failed: false,
                },
                SeenRequest {
                    method: "POST".into(),
                    url: "http://h/thanks.html".into(),
                    body: "name=Ada+Lovelace&topic=returns&contact=phone".into(),
                    failed: false,
                },
                // A post that never reached a server counts for nothing.
                SeenRequest {
                    method: "POST".into(),
                    url: "http://h/refused".into(),
                    body: "topic=order".into(),
                    failed: true,
                },
            ],
            unread: None,
        }
    }

    fn judged(check: &str, state: &PageState) -> Verdict {
        task(check).judge(&Ending {
            state,
            ..Ending::default()
        })
    }

    #[test]
    fn element_field_request_cookie_and_storage_checks_read_the_final_page() {
        let state = final_page();
        let passes = |check: &str| judged(check, &state).passed;
        assert!(passes(r##"{"element":{"selector":"#cart-count"}}"##));
        assert!(passes(
            r##"{"element":{"selector":"#cart-count","text":{"match":"exact","value":"2"}}}"##
        ));
        assert!(!passes(
            r##"{"element":{"selector":"#cart-count","text":{"match":"exact","value":"3"}}}"##
        ));
        assert!(!passes(r##"{"element":{"selector":"#gone"}}"##));
        assert!(passes(
            r##"{"field":{"selector":"#q","value":{"match":"normalized","value":"Clamp"}}}"##
        ));
        assert!(!passes(
            r##"{"field":{"selector":"#q","value":{"match":"exact","value":"hammer"}}}"##
        ));
        assert!(passes(
            r#"{"request":{"method":"post","url":"/thanks\\.html$","body_contains":"topic=returns"}}"#
        ));
        // Looked for in the form as sent and as decoded.
        assert!(passes(
            r#"{"request":{"body_contains":"name=Ada+Lovelace"}}"#
        ));
        assert!(passes(
            r#"{"request":{"body_contains":"name=Ada Lovelace"}}"#
        ));
        // Every text of a list, in one request's body.
        assert!(passes(
            r#"{"request":{"body_contains":["name=Ada Lovelace","contact=phone"]}}"#
        ));
        assert!(!passes(
            r#"{"request":{"body_contains":["name=Ada Lovelace","contact=email"]}}"#
        ));
        assert!(!passes(r#"{"request":{"method":"GET","url":"thanks"}}"#));
        assert!(!passes(r#"{"request":{"body_contains":"topic=order"}}"#));
        assert!(passes(r#"{"cookie":{"name":"hh_consent"}}"#));
        assert!(passes(
            r#"{"cookie":{"name":"hh_consent","value":{"match":"exact","value":"yes"}}}"#
        ));
        assert!(!passes(r#"{"cookie":{"name":"other"}}"#));
        assert!(passes(
            r#"{"local_storage":{"key":"hh-cart","value":{"match":"regex","value":"\"5\":2\\b"}}}"#
        ));
        assert!(!passes(r#"{"local_storage":{"key":"none"}}"#));
        assert!(!passes(r#"{"local_storage":{"key":"never-read"}}"#));
    }

    #[test]
    fn all_of_and_any_of_combine_checks_and_name_themselves_when_they_fail() {
        let state = final_page();
        let all = judged(
            r##"{"all_of":[{"element":{"selector":"#cart-count","text":{"match":"exact","value":"2"}}},{"element":{"selector":"#gone"}}]}"##,
            &state,
        );
        assert_eq!(all.failed, [CheckPart::AllOf]);
        assert!(
            all.details.contains(
                &"all_of[1]: element \"#gone\": no such element on the final page".into()
            ),
            "{all:?}"
        );
        assert!(all.details.contains(&"all_of: 1 of 2 checks passed".into()));
        let any = judged(
            r##"{"any_of":[{"element":{"selector":"#gone"}},{"cookie":{"name":"hh_consent"}}],"url":"^$"}"##,
            &state,
        );
        assert!(any.passed, "{any:?}");
        let none = judged(
            r##"{"any_of":[{"element":{"selector":"#gone"}},{"all_of":[{"cookie":{"name":"x"}}]}]}"##,
            &state,
        );
        assert_eq!(none.failed, [CheckPart::AnyOf]);
        assert!(none
            .details
            .contains(&"any_of[1]: all_of[0]: cookie \"x\" is not set".into()));
    }

    #[test]
    fn details_keep_secrets_out_and_say_why_a_page_was_not_read() {
        let state = final_page();
        let password = judged(
            r##"{"field":{"selector":"#pw","value":{"match":"exact","value":"letmein"}}}"##,
            &state,
        );
        let cookie = judged(
            r#"{"cookie":{"name":"hh_consent","value":{"match":"exact","value":"no"}}}"#,
            &state,
        );
        for verdict in [&password, &cookie] {
            assert!(!verdict.passed);
            let details = verdict.details.join("\n");
            for value in ["hunter2", "\"yes\""] {
                assert!(!details.contains(value), "{details}");
            }
        }
        assert!(password.details[0].contains("(secret, 7 characters)"));
        let refused = judged(r#"{"element":{"selector":"["}}"#, &state);
        assert!(
            refused.details[0].contains("refused the selector"),
            "{refused:?}"
        );
        let hung = PageState {
            unread: Some("renderer_timeout".into()),
            ..PageState::default()
        };
        let verdict = judged(r##"{"element":{"selector":"#cart-count"}}"##, &hung);
        assert!(!verdict.passed);
        assert!(verdict.details[0].contains("could not be read (renderer_timeout)"));
    }

    #[test]
    fn a_check_asks_the_browser_only_for_what_its_parts_read() {
        let plain = task(r#"{"url":"x","answer":{"match":"exact","value":"1"}}"#);
        assert!(plain.check.wants().is_empty());
        let nested = task(
            r##"{"any_of":[{"element":{"selector":"#a"}},{"all_of":[{"field":{"selector":"#b","value":{"match":"exact","value":""}}},{"local_storage":{"key":"k"}},{"request":{"method":"POST"}}]}]}"##,
        );
        let wants = nested.check.wants();
        assert_eq!(wants.elements, BTreeSet::from(["#a".to_string()]));
        assert_eq!(wants.fields, BTreeSet::from(["#b".to_string()]));
        assert_eq!(wants.local_storage, BTreeSet::from(["k".to_string()]));
        assert!(wants.requests && !wants.cookies && wants.reads_document());
        assert_eq!(nested.check.parts(), [CheckPart::AnyOf]);
        let names: Vec<&str> = CheckPart::ALL.iter().map(|part| part.name()).collect();
        for (part, name) in CheckPart::ALL.iter().zip(&names) {
            assert_eq!(serde_json::to_value(part).unwrap(), *name);
        }
    }

    /// docs/tasks.md shows one example per part, each a check this file's reader takes.
    #[test]
    fn the_docs_show_a_valid_example_of_every_part() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tasks.md");
        let text = std::fs::read_to_string(path).unwrap();
        let mut shown = Vec::new();
        for row in text.lines().filter(|line| line.starts_with("| `")) {
            // `| `part` | passes when | `example` |`: the last cell, a pipe in it escaped.
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
            let named = cells[0].trim().trim_matches('`');
            if !CheckPart::ALL.iter().any(|part| part.name() == named) {
                continue;
            }
            let Some(example) = cells.last().and_then(|cell| cell.trim().strip_prefix('`')) else {
                continue;
            };
            let Some(example) = example.strip_suffix('`') else {
                continue;
            };
            if !example.starts_with('{') {
                continue;
            }
            let check = example.replace("\\|", "|");
            let task = task(&check);
            task.validate()
                .unwrap_or_else(|err| panic!("{check}: {err}"));
            shown.extend(task.check.parts());
        }
        for part in CheckPart::ALL {
            assert!(shown.contains(&part), "no example of {}", part.name());
        }
    }

    #[test]
    fn relative_start_urls_resolve_against_the_base() {
        let task = task(r#"{"url":"x"}"#);
        let base = url::Url::parse("http://127.0.0.1:9/site/").unwrap();
        assert_eq!(
            task.resolve_start_url(Some(&base)).unwrap(),
            "http://127.0.0.1:9/site/index.html"
        );
        assert!(task
            .resolve_start_url(None)
            .unwrap_err()
            .contains("relative start_url"));
    }

    #[test]
    fn bad_task_files_name_the_file_and_line() {
        let text = [
            r#"{"id":"a","category":"information","instruction":"x","start_url":"i.html","check":{"url":"ok"}}"#,
            r#"{"id":"a","category":"information","instruction":"x","start_url":"i.html","check":{"url":"ok"}}"#,
            r#"{"id":"b","category":"shopping","instruction":"x","start_url":"i.html","check":{"url":"ok"}}"#,
            r#"{"id":"c","category":"navigation","instruction":"x","start_url":"i.html","check":{}}"#,
            r#"{"id":"d","category":"navigation","instruction":"x","start_url":"i.html","check":{"url":"("}}"#,
            r#"not json"#,
            r#"{"id":"e","category":"navigation","instruction":"x","start_url":"i.html","check":{"url":"a"},"extra":1}"#,
            r#"{"id":"f","category":"navigation","instruction":"x","start_url":"i.html","check":{"any_of":[]}}"#,
            r#"{"id":"g","category":"navigation","instruction":"x","start_url":"i.html","check":{"all_of":[{"element":{"selector":" "}}]}}"#,
            r#"{"id":"h","category":"navigation","instruction":"x","start_url":"i.html","check":{"request":{}}}"#,
            r#"{"id":"i","category":"navigation","instruction":"x","start_url":"i.html","check":{"any_of":[{"all_of":[{"any_of":[{"all_of":[{"any_of":[{"url":"a"}]}]}]}]}]}}"#,
            r##"{"id":"j","category":"navigation","instruction":"x","start_url":"i.html","check":{"field":{"selector":"#a","value":{"match":"regex","value":"("}}}}"##,
            r#"{"id":"k","category":"navigation","instruction":"x","start_url":"i.html","check":{"cookie":{"name":"a","valeu":{"match":"exact","value":"b"}}}}"#,
            r#"{"id":"l","category":"navigation","instruction":"x","start_url":"i.html","check":{"request":{"method":"PO ST"}}}"#,
            r#"{"id":"m","category":"navigation","instruction":"x","start_url":"i.html","check":{"request":{"url":"\\w{100}"}}}"#,
            &format!(
                r#"{{"id":"n","category":"navigation","instruction":"x","start_url":"i.html","check":{{"any_of":[{}]}}}}"#,
                vec![r#"{"url":"a"}"#; MAX_CHECK_PARTS].join(",")
            ),
        ]
        .join("\n");
        let err = TaskSet::parse(&text, "tasks.jsonl").unwrap_err();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 15, "{err}");
        assert!(lines[0].starts_with("tasks.jsonl:2: duplicate task id"));
        assert!(lines[1].starts_with("tasks.jsonl:3: unknown variant `shopping`"));
        assert!(lines[2].starts_with("tasks.jsonl:4: task c: check needs"));
        assert!(lines[3].starts_with("tasks.jsonl:5: task d: check.url regex"));
        assert!(lines[4].starts_with("tasks.jsonl:6: expected ident"));
        assert!(lines[5].starts_with("tasks.jsonl:7: unknown field `extra`"));
        assert!(lines[5].ends_with("(column 100)"), "{}", lines[5]);
        assert_eq!(lines[6], "tasks.jsonl:8: task f: check.any_of is empty");
        assert_eq!(
            lines[7],
            "tasks.jsonl:9: task g: check.all_of[0].element.selector is empty"
        );
        assert_eq!(
            lines[8],
            "tasks.jsonl:10: task h: check.request needs method, url or body_contains"
        );
        assert!(lines[9].starts_with("tasks.jsonl:11: task i: check.any_of[0].all_of[0].any_of[0].all_of[0].any_of: all_of and any_of nest 4 deep at most"), "{}", lines[9]);
        assert!(lines[10].starts_with("tasks.jsonl:12: task j: check.field.value regex:"));
        assert!(
            lines[11].starts_with("tasks.jsonl:13: unknown field `valeu`"),
            "{}",
            lines[11]
        );
        assert_eq!(
            lines[12],
            "tasks.jsonl:14: task l: check.request.method \"PO ST\" is not an HTTP method"
        );
        assert!(
            lines[13].starts_with(
                "tasks.jsonl:15: task m: check.request.url regex: Compiled regex exceeds size limit"
            ),
            "{}",
            lines[13]
        );
        assert_eq!(
            lines[14],
            "tasks.jsonl:16: task n: check has 65 parts; 64 at most"
        );
        assert!(TaskSet::parse("", "empty.jsonl")
            .unwrap_err()
            .contains("no tasks"));
    }

    #[test]
    fn the_bundled_demo_tasks_are_valid_and_cover_every_category() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/tasks/demo.jsonl");
        let set = TaskSet::load(&path).unwrap();
        assert_eq!(set.name, "demo");
        assert!(set.tasks.len() >= 15, "{} tasks", set.tasks.len());
        for category in [
            Category::Information,
            Category::Navigation,
            Category::Interaction,
        ] {
            let count = set.tasks.iter().filter(|t| t.category == category).count();
            assert!(count >= 5, "{category:?}: {count}");
        }
        let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/site");
        let base = url::Url::parse("http://127.0.0.1:1/").unwrap();
        for task in &set.tasks {
            let start = task.resolve_start_url(Some(&base)).unwrap();
            let page = url::Url::parse(&start)
                .unwrap()
                .path()
                .trim_start_matches('/')
                .to_string();
            assert!(
                site.join(&page).is_file(),
                "task {}: {page} is not in the demo site",
                task.id
            );
        }
    }
}
