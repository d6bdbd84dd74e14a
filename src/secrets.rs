//! A person's secrets, and the one set of rules for hiding them: the server, the recorder and
//! the terminal UI all use this module.
//!
//! What is a secret: what anyone types into a secret field (a password field, one drawn as
//! bullets, a one-time code or card secret, one that ever was such a field: the probe's
//! `isSecret`) or a person marks as a secret (the UI's `s`, a watch step's `"secret": true`), from
//! the keystroke on: the text typed (each line), every value input left in the field as it
//! happened, what the field held before the step and what it holds after (typing `qwerty9`,
//! BACKSPACE, `8Z` holds `qwerty8Z`), whatever the page does with the field afterwards. Kept in
//! memory only, for one episode. Hidden however a text spells it, and its starts where they
//! stand as whole values (`spelling.rs`).
//!
//! A field's earlier value stays a secret when the field comes to hold another, unless it was
//! only a step on the way to the new one (a start of it: typed in pieces, `q`, `qw`, ..., or
//! what was left after backspacing, before typing on). So `qwerty9`, BACKSPACE, `8Z` hides
//! `qwerty9` and `qwerty8Z` but not `qwerty`, and a page's field that held `hunter2` (sent in a
//! URL) and now holds `hunter3` hides both; the probe numbers secret fields per document, so a
//! new page's field can have an earlier page's number.
//!
//! What each outlet shows instead, written once:
//!
//! | outlet | typed text | the page's URL, title, text, verdict details | the picture |
//! |---|---|---|---|
//! | the agent (observation, `human_steps`) | `redacted` | the secret as `redacted`, in every decoded form of a URL (and of every text of the metadata) | fields holding a secret covered (`cover_boxes`) |
//! | watchers, and the person at the wheel's own view | `redacted` | as the agent's | the person at the wheel: their own page; the others: covered |
//! | recordings | `redacted`, or `named` for a value the UI typed by name | as the agent's | covered |
//! | the server's log, reviewers | - | as the agent's | - |
//!
//! A credential of the server's own (a remote browser's token in `--browser-url`) is shown as
//! [`HIDDEN_CREDENTIAL`] in what the server prints.

use std::borrow::Cow;
use std::io;

use serde_json::{Map, Value};

use crate::models::{Action, BrowserAction, StepResult};

mod spelling;

/// What a person's secret is shown as: its length only.
pub fn redacted(typed: &str) -> String {
    format!("<redacted:{} characters>", typed.chars().count())
}

/// What the terminal UI records for a value it typed from the person's environment by name
/// (its `s` prompt): the name, so `replay` can type the value again from the same variable.
pub fn named(name: &str) -> String {
    format!("<secret:{name}>")
}

/// The name in a [`named`] text.
pub fn name_of(text: &str) -> Option<&str> {
    text.strip_prefix("<secret:")?.strip_suffix('>')
}

/// Whether a recorded text stands for a secret (`redacted` or `named`): what it stood for is not
/// in the recording.
pub fn is_hidden(text: &str) -> bool {
    name_of(text).is_some() || (text.starts_with("<redacted:") && text.ends_with(" characters>"))
}

/// A credential of the server's own, as the server prints it.
pub const HIDDEN_CREDENTIAL: &str = "***";

/// Whether a step's typing went into a field whose value is a secret: one the page masks (a
/// password field, or a field drawn as bullets), one it marks as a one-time code or card secret,
/// one a person marked, a frame of another origin (nothing says it is not a password field); the
/// probe judges it (`element.password` in the observation's metadata).
pub fn typed_into_secret_field(action: &BrowserAction, result: &StepResult) -> bool {
    types_into_field(&action.action) && into_secret_field(result)
}

/// Whether the action puts what it carries into a field: typing, a chord that types a
/// character, the option a `select` chooses. The same path as `type` for all of them: what they
/// carry is a secret when the field is one (or a person marked the step).
pub fn types_into_field(action: &Action) -> bool {
    match action {
        Action::Type { .. } | Action::Select { .. } => true,
        Action::Press { chord, .. } => chord.typed().is_some(),
        Action::Click { .. }
        | Action::Key { .. }
        | Action::Scroll { .. }
        | Action::Back
        | Action::Wait
        | Action::Finish { .. }
        | Action::Move { .. }
        | Action::Drag { .. }
        | Action::MouseDown { .. }
        | Action::MouseUp { .. }
        | Action::Forward
        | Action::Goto { .. } => false,
    }
}

/// What the action typed into a field (a chord's character as often as it repeats), for the
/// episode's secrets when the field is secret and cannot be read back.
pub fn typed_text(action: &Action) -> Option<String> {
    match action {
        Action::Type { text } | Action::Select { label: text, .. } => Some(text.clone()),
        Action::Press { chord, repeat } => chord.typed().map(|c| c.repeat(usize::from(*repeat))),
        Action::Click { .. }
        | Action::Key { .. }
        | Action::Scroll { .. }
        | Action::Back
        | Action::Wait
        | Action::Finish { .. }
        | Action::Move { .. }
        | Action::Drag { .. }
        | Action::MouseDown { .. }
        | Action::MouseUp { .. }
        | Action::Forward
        | Action::Goto { .. } => None,
    }
}

/// Whether the step's input went into a secret field: the step's element (the focused one, for
/// typing and keys) is one, or input reached one during the step wherever focus started
/// (`metadata.secret_input`: a TAB typed into the next field, a page that moved the focus).
pub fn into_secret_field(result: &StepResult) -> bool {
    let metadata = &result.observation.metadata;
    let flag = |value: Option<&Value>| value.and_then(Value::as_bool).unwrap_or(false);
    flag(metadata.get("element").and_then(|e| e.get("password")))
        || flag(metadata.get("secret_input"))
}

/// The action as it may leave the server (to watchers, the agent's `human_steps`, recordings):
/// typing that is a person's secret, or that went into a secret field, as `redacted`.
/// A chord that typed into a secret field is shown as what a `type` of its characters would be:
/// the chord and its repeats leave as `<redacted:N characters>` in a `type` action.
pub fn shown_action(action: &BrowserAction, result: &StepResult, secret: bool) -> BrowserAction {
    let mut shown = action.clone();
    if !(types_into_field(&action.action) && (secret || typed_into_secret_field(action, result))) {
        return shown;
    }
    match &mut shown.action {
        Action::Press { .. } => {
            let typed = typed_text(&action.action).unwrap_or_default();
            shown.action = Action::Type {
                text: redacted(&typed),
            };
        }
        other => {
            if let Some(text) = other.secret_text_mut() {
                *text = redacted(text);
            }
        }
    }
    shown
}

/// The boxes `[x, y, width, height]` of the fields holding a secret on the observation's page
/// (`metadata.password_boxes`): what every outlet but the person at the wheel gets covered.
pub fn secret_boxes(metadata: &Map<String, Value>) -> Vec<[i64; 4]> {
    metadata
        .get("password_boxes")
        .and_then(|b| serde_json::from_value(b.clone()).ok())
        .unwrap_or_default()
}

/// The observation with the boxes of fields holding a secret covered in its picture; as it was
/// when there are none (or its picture cannot be read: then it has none to show either).
pub fn covered(result: &StepResult) -> StepResult {
    let mut shown = result.clone();
    let boxes = secret_boxes(&result.observation.metadata);
    if boxes.is_empty() || result.observation.screenshot.is_empty() {
        return shown;
    }
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    shown.observation.screenshot = engine
        .decode(&result.observation.screenshot)
        .ok()
        .and_then(|png| cover_boxes(&png, &boxes).ok())
        .map(|png| engine.encode(png))
        .unwrap_or_default();
    shown
}

/// Paint `[x, y, width, height]` boxes black in a PNG; what lies outside the picture is left out.
pub fn cover_boxes(png_bytes: &[u8], boxes: &[[i64; 4]]) -> io::Result<Vec<u8>> {
    let invalid =
        |err: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, err.to_string());
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| invalid(&e))?;
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).map_err(|e| invalid(&e))?;
    pixels.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    let (width, height) = (i64::from(info.width), i64::from(info.height));
    for [x, y, w, h] in boxes {
        // The boxes come from a page, through a server that may be anyone's: any i64, a negative
        // size. Their ends saturate and are clamped to the picture; an empty box paints nothing.
        let (top, bottom) = ((*y).max(0), y.saturating_add(*h).min(height));
        let (left, right) = ((*x).max(0), x.saturating_add(*w).min(width));
        for row in top..bottom {
            for column in left..right {
                let at = ((row * width + column) as usize) * channels;
                for value in &mut pixels[at..at + channels.min(3)] {
                    *value = 0;
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, info.width, info.height);
    encoder.set_color(info.color_type);
    encoder.set_depth(png::BitDepth::Eight);
    // Fast, as Chromium encodes its frames: this runs on a step's path.
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(|e| invalid(&e))?;
    writer.write_image_data(&pixels).map_err(|e| invalid(&e))?;
    writer.finish().map_err(|e| invalid(&e))?;
    Ok(out)
}

/// The secrets of one episode.
#[derive(Debug, Default, Clone)]
pub struct Secrets {
    /// Every secret, as given: typed lines, values fields held, marked text.
    values: Vec<String>,
    /// What was typed: kept whatever a field comes to hold.
    typed: Vec<String>,
    /// What each secret field (by the probe's number for it) held when last read: a field's new
    /// value replaces its old one, which stays a secret unless it starts the new one (`hold`).
    held: Vec<(u64, String)>,
    /// What is looked for, longest first (a secret that starts another would leave the other's
    /// tail): each value, with its whitespace collapsed, and each of its lines so (a page shows
    /// a field's lines apart, and runs of spaces as one).
    needles: Vec<(String, Vec<char>)>,
}

impl Secrets {
    /// Shorter ones are not looked for: a single character would be hidden everywhere.
    pub const SHORTEST: usize = 2;

    /// A secret this long is hidden wherever it stands; a shorter one, and a start of a secret
    /// (what a field held on its way to it) at least this long, only where it stands as a whole
    /// value (`spelling.rs`).
    pub const ANYWHERE: usize = spelling::ANYWHERE;

    /// A secret typed (each line on its own: a newline in typing is an ENTER, not text). Kept
    /// for the rest of the episode, whatever the field it went into holds afterwards.
    pub fn add(&mut self, typed: &str) {
        for line in typed.split(['\n', '\r']) {
            if line.chars().count() >= Self::SHORTEST && !self.typed.iter().any(|t| t == line) {
                self.typed.push(line.to_string());
            }
            self.insert(line);
        }
    }

    /// What a secret field holds now (`field`: the probe's number for it). What it held before
    /// stays a secret, unless it was a step on the way to `value` (a start of it, then hidden as
    /// a start) and nobody typed it as it is: the same number may be a new page's field,
    /// holding a new value after the old one was sent.
    pub fn hold(&mut self, field: u64, value: &str) {
        if let Some(at) = self.held.iter().position(|(f, _)| *f == field) {
            let (_, old) = self.held.remove(at);
            let on_the_way = value.starts_with(old.as_str());
            let kept_elsewhere =
                self.held.iter().any(|(_, v)| *v == old) || self.typed.contains(&old);
            if on_the_way && !kept_elsewhere {
                self.values.retain(|known| *known != old);
                self.rebuild();
            }
        }
        if value.chars().count() >= Self::SHORTEST {
            self.held.push((field, value.to_string()));
            self.insert(value);
        }
    }

    fn insert(&mut self, secret: &str) {
        if secret.chars().count() >= Self::SHORTEST && !self.values.iter().any(|s| s == secret) {
            self.values.push(secret.to_string());
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        let collapsed = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut needles: Vec<String> = Vec::new();
        for value in &self.values {
            let forms = std::iter::once(value.clone())
                .chain(std::iter::once(collapsed(value)))
                .chain(value.split(['\n', '\r']).map(collapsed));
            for form in forms {
                if form.chars().count() >= Self::SHORTEST && !needles.contains(&form) {
                    needles.push(form);
                }
            }
        }
        needles.sort_by_key(|s| std::cmp::Reverse(s.len()));
        self.needles = needles
            .into_iter()
            .map(|needle| {
                let chars = needle.chars().collect();
                (needle, chars)
            })
            .collect();
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret in it as `redacted`, however the text spells it: as it is,
    /// percent- or form-encoded, JSON-escaped, as HTML entities (or one inside another), or in
    /// base64; and each start of one that stands as a whole value (`spelling.rs`). Only the
    /// secret's span of the text changes, as the text wrote it.
    pub fn hidden<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.needles.is_empty() || text.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut spans = Vec::new();
        for (needle, chars) in &self.needles {
            spelling::find(text, needle, chars, None, &mut spans);
        }
        if spelling::has_escapes(text) {
            for plus_is_space in [true, false] {
                let Some(reading) = spelling::decode(text, plus_is_space) else {
                    continue;
                };
                self.find_in(&reading, &mut spans);
                // One spelling inside another (`%2522`, a form value in a JSON string).
                if plus_is_space && spelling::has_escapes(&reading.text) {
                    if let Some(inner) = spelling::decode(&reading.text, true) {
                        self.find_in(&reading.through(inner), &mut spans);
                    }
                }
            }
        }
        spelling::find_base64(text, &self.needles, &mut spans);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(replaced(text, spans))
    }

    fn find_in(&self, reading: &spelling::Reading, spans: &mut Vec<spelling::Span>) {
        for (needle, chars) in &self.needles {
            spelling::find(&reading.text, needle, chars, Some(reading), spans);
        }
    }

    /// Hide every secret in `text`, in place.
    pub fn hide_in(&self, text: &mut String) {
        if let Cow::Owned(shown) = self.hidden(text) {
            *text = shown;
        }
    }

    /// A URL as it may be shown: `hidden` (a URL spells a secret percent- or form-encoded).
    pub fn shown_url<'a>(&self, url: &'a str) -> Cow<'a, str> {
        self.hidden(url)
    }

    /// Hide every secret in a URL, in place (`shown_url`).
    pub fn hide_in_url(&self, url: &mut String) {
        self.hide_in(url);
    }

    /// Every text of an observation's metadata, as a URL is (`shown_url`): a page puts its URLs
    /// in many (`element`, `downloads_denied`, `navigations_blocked`, `archive_misses`, ...).
    pub fn hide_in_metadata(&self, metadata: &mut Map<String, Value>) {
        fn walk(secrets: &Secrets, value: &mut Value) {
            match value {
                Value::String(text) => secrets.hide_in_url(text),
                Value::Array(items) => items.iter_mut().for_each(|item| walk(secrets, item)),
                Value::Object(fields) => fields.values_mut().for_each(|v| walk(secrets, v)),
                _ => {}
            }
        }
        if !self.is_empty() {
            metadata.values_mut().for_each(|value| walk(self, value));
        }
    }

    /// An observation as it may leave the server: its URL and its metadata.
    pub fn hide_in_result(&self, result: &mut StepResult) {
        self.hide_in_url(&mut result.observation.url);
        self.hide_in_metadata(&mut result.observation.metadata);
    }
}

/// `text` with each span (merged where they overlap) as `redacted` of its secret's length.
fn replaced(text: &str, mut spans: Vec<spelling::Span>) -> String {
    spans.sort_by_key(|span| (span.from, std::cmp::Reverse(span.to)));
    let mut merged: Vec<spelling::Span> = Vec::new();
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.from < last.to => {
                last.to = last.to.max(span.to);
                last.chars = last.chars.max(span.chars);
            }
            _ => merged.push(span),
        }
    }
    let mut shown = String::with_capacity(text.len());
    let mut at = 0;
    for span in merged {
        shown.push_str(&text[at..span.from]);
        shown.push_str(&format!("<redacted:{} characters>", span.chars));
        at = span.to;
    }
    shown.push_str(&text[at..]);
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_hidden_whole_in_text_and_in_urls_however_encoded() {
        let mut secrets = Secrets::default();
        secrets.add("hunter");
        secrets.add("hunter2 p@ss");
        secrets.add("x");
        let mut text = "typed hunter2 p@ss, then hunter; x stays".to_string();
        secrets.hide_in(&mut text);
        assert_eq!(
            text,
            "typed <redacted:12 characters>, then <redacted:6 characters>; x stays"
        );
        for url in [
            "https://a.example/login?pw=hunter2+p%40ss&next=1",
            "https://a.example/login#pw=hunter2%20p%40ss",
            "https://a.example/hunter2 p@ss",
        ] {
            let mut shown = url.to_string();
            secrets.hide_in_url(&mut shown);
            assert!(
                !shown.contains("hunter") && !shown.contains("p%40ss"),
                "{url}: {shown}"
            );
            assert!(shown.contains("<redacted:12 characters>"), "{url}: {shown}");
        }
        let mut plain = "https://a.example/?q=a+b%20c".to_string();
        secrets.hide_in_url(&mut plain);
        assert_eq!(
            plain, "https://a.example/?q=a+b%20c",
            "a URL without one is left alone"
        );
    }

    #[test]
    fn what_a_field_holds_replaces_what_it_held() {
        let mut secrets = Secrets::default();
        secrets.hold(1, "qwerty9");
        secrets.hold(1, "qwerty");
        secrets.hold(1, "qwerty8Z");
        assert_eq!(
            secrets.shown_url("https://a.example/?pw=qwerty8Z"),
            "https://a.example/?pw=<redacted:8 characters>"
        );
        // What the field held on the way is not a secret of its own any more.
        assert_eq!(secrets.hidden("qwerty keyboards"), "qwerty keyboards");
        // A line of typing is hidden without the ENTER that ended it.
        secrets.add("hun ter2!\n");
        assert_eq!(secrets.hidden("x hun ter2!"), "x <redacted:9 characters>");
    }

    #[test]
    fn a_field_s_earlier_value_stays_hidden_unless_it_led_to_the_new_one() {
        let mut secrets = Secrets::default();
        // Typed in pieces: each value starts the next; only the last is a secret.
        for piece in ["h", "hu", "hun", "hunt", "hunte", "hunter", "hunter2"] {
            secrets.hold(1, piece);
        }
        assert_eq!(secrets.hidden("hunt hunter"), "hunt hunter");
        // Sent (the URL keeps it); the page shown again, its field (number 1 again) typed anew.
        let sent = "https://a.example/login?pw=hunter2";
        for piece in ["h", "hu", "hunter", "hunter3"] {
            secrets.hold(1, piece);
        }
        assert_eq!(
            secrets.shown_url(sent),
            "https://a.example/login?pw=<redacted:7 characters>"
        );
        assert_eq!(
            secrets.hidden("hunter3 hunter2"),
            "<redacted:7 characters> <redacted:7 characters>"
        );
        // Cleared, the field's value stays hidden.
        secrets.hold(1, "");
        assert_eq!(secrets.hidden("hunter3"), "<redacted:7 characters>");
    }

    #[test]
    fn metadata_texts_are_hidden_in_every_decoded_form() {
        let mut secrets = Secrets::default();
        secrets.add("p@ss word!");
        let mut metadata = Map::new();
        metadata.insert(
            "downloads_denied".into(),
            serde_json::json!(["https://a/x?pw=p%40ss+word%21"]),
        );
        metadata.insert(
            "element".into(),
            serde_json::json!({"href": "https://a/y#p%40ss%20word%21", "text": "p@ss word!"}),
        );
        metadata.insert("title".into(), serde_json::json!("C++ and more"));
        secrets.hide_in_metadata(&mut metadata);
        let shown = Value::Object(metadata).to_string();
        assert!(
            !shown.contains("p%40ss") && !shown.contains("p@ss") && !shown.contains("word"),
            "{shown}"
        );
        assert!(shown.contains("x?pw=<redacted:10 characters>"), "{shown}");
        assert!(shown.contains("C++ and more"), "{shown}");
    }

    #[test]
    fn what_was_typed_stays_a_secret_whatever_the_field_holds_after() {
        let mut secrets = Secrets::default();
        // A one-time code typed, the field cleared by the page (read back empty).
        secrets.hold(1, "");
        secrets.add("493817\n");
        secrets.hold(1, "");
        assert_eq!(
            secrets.hidden("https://a/verify?code=493817"),
            "https://a/verify?code=<redacted:6 characters>"
        );
    }

    #[test]
    fn a_marked_text_s_lines_are_hidden_one_by_one_its_spaces_collapsed() {
        let mut secrets = Secrets::default();
        secrets.hold(3, "first   line of it\nsecond line");
        for shown in ["first line of it", "second line", "x first line of it y"] {
            let hidden = secrets.hidden(shown);
            assert!(!hidden.contains("line"), "{shown}: {hidden}");
        }
    }

    #[test]
    fn every_spelling_and_every_start_of_a_secret_is_hidden() {
        use base64::Engine;
        let mut secrets = Secrets::default();
        secrets.add("Kx\"9q#2w");
        for (text, left) in [
            // Per keystroke, the starts the field held: 4 characters and more.
            (
                "GET /check?v=Kx%229q%232",
                "/check?v=<redacted:7 characters>",
            ),
            ("GET /check?v=Kx%229", "/check?v=<redacted:4 characters>"),
            (
                r#"{"pw":"Kx\"9q#2w"}"#,
                r#"{"pw":"<redacted:8 characters>"}"#,
            ),
            (
                r#"{"pw":"Kx\u00229q#2w"}"#,
                r#"{"pw":"<redacted:8 characters>"}"#,
            ),
            (
                "<input value=\"Kx&quot;9q&#35;2w\">",
                "value=\"<redacted:8 characters>\"",
            ),
            ("pw=Kx%25229q%25232w", "pw=<redacted:8 characters>"),
        ] {
            let hidden = secrets.hidden(text);
            assert!(hidden.contains(left), "{text}: {hidden}");
            assert!(!hidden.contains("9q"), "{text}: {hidden}");
        }
        let basic = base64::engine::general_purpose::STANDARD.encode("ana:Kx\"9q#2w");
        let header = format!("Authorization: Basic {basic}");
        assert_eq!(
            secrets.hidden(&header),
            "Authorization: Basic <redacted:12 characters>"
        );
        // Three characters of a start are not looked for; nor a start inside other words.
        assert_eq!(secrets.hidden("v=Kx%22"), "v=Kx%22");
        let mut summer = Secrets::default();
        summer.add("Summer2024!");
        assert_eq!(
            summer.hidden("Summer sale, Summertime"),
            "Summer sale, Summertime"
        );
        assert_eq!(summer.hidden("q=Summer"), "q=<redacted:6 characters>");
    }

    #[test]
    fn hidden_texts_are_known_by_their_spelling() {
        assert!(is_hidden(&redacted("abc")));
        assert!(is_hidden(&named("PIN")));
        assert_eq!(name_of(&named("USER_PIN")), Some("USER_PIN"));
        assert!(!is_hidden("<redacted"));
        assert!(!is_hidden("plain"));
    }
}
