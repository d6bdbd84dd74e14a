//! What a task's check may say (its parts, as in the task file) and how it judges an episode.

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::{Ending, Lookup, SeenRequest, Wants};

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

    pub(super) fn validate(&self, at: &str) -> Result<(), String> {
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
    pub(super) fn count_parts(&self) -> usize {
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
    pub(super) fn judge(
        &self,
        ending: &Ending,
        at: &str,
        details: &mut Vec<String>,
    ) -> Vec<CheckPart> {
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
    pub(super) fn validate(&self, at: &str, depth: usize) -> Result<(), String> {
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
