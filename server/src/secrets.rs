//! What a person typed as a secret in this episode, and its hiding wherever the server reads the
//! page back. A secret typed into a plain field stays on the page, where the probe would read it
//! again (the focused element's text, the title a page copies it into, the text layer) and where a
//! page can move it into its URL (a GET form, a hash). Kept in memory only, for one episode.

use browserenv::models::StepResult;
use browserenv::trajectory::redacted;
use serde_json::{Map, Value};

#[derive(Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// Shorter ones are not looked for: a single character would be hidden everywhere.
    const SHORTEST: usize = 2;

    pub fn add(&mut self, typed: &str) {
        if typed.chars().count() >= Self::SHORTEST && !self.0.iter().any(|s| s == typed) {
            self.0.push(typed.to_string());
            // Longest first: a secret that starts another would leave the other's tail.
            self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// `text` with every secret in it as `<redacted:N characters>`.
    pub fn hide_in(&self, text: &mut String) {
        for secret in &self.0 {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), &redacted(secret));
            }
        }
    }

    /// A URL, where a page may carry a secret percent-encoded (`%40` for `@`) or form-encoded
    /// (`+` for a space): found there, the URL is given decoded, the secret hidden.
    pub fn hide_in_url(&self, url: &mut String) {
        if self.0.is_empty() {
            return;
        }
        // The longest secret found in any form of the URL decides the form shown: a shorter one
        // found raw may be the start of a longer one encoded beside it.
        let decoded = |plus_is_space: bool| {
            let text = if plus_is_space {
                url.replace('+', " ")
            } else {
                url.clone()
            };
            percent_encoding::percent_decode_str(&text)
                .decode_utf8_lossy()
                .into_owned()
        };
        let forms = [decoded(true), decoded(false), url.clone()];
        for secret in &self.0 {
            if let Some(form) = forms.iter().find(|form| form.contains(secret.as_str())) {
                let mut shown = form.clone();
                self.hide_in(&mut shown);
                *url = shown;
                return;
            }
        }
    }

    /// Every text of an observation's metadata.
    pub fn hide_in_metadata(&self, metadata: &mut Map<String, Value>) {
        fn walk(secrets: &Secrets, value: &mut Value) {
            match value {
                Value::String(text) => secrets.hide_in(text),
                Value::Array(items) => items.iter_mut().for_each(|item| walk(secrets, item)),
                Value::Object(fields) => fields.values_mut().for_each(|v| walk(secrets, v)),
                _ => {}
            }
        }
        if !self.0.is_empty() {
            metadata.values_mut().for_each(|value| walk(self, value));
        }
    }

    /// An observation as it may leave the server: its URL and its metadata.
    pub fn hide_in_result(&self, result: &mut StepResult) {
        self.hide_in_url(&mut result.observation.url);
        self.hide_in_metadata(&mut result.observation.metadata);
    }
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
}
