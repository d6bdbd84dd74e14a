//! The episode's clipboard. The headless shell keeps one clipboard for the whole browser, which
//! every context (every episode and, on a shared browser, every session) would paste from: what
//! one copied, another pasted (measured: a CTRL+C in one context, a CTRL+V in another pasted
//! it). So the clipboard is the episode's, kept here:
//!
//! - a copy (CTRL+C, CTRL+INSERT, a page's `execCommand('copy')`) happens in the page as a
//!   browser's does (its `copy` event, the page's own data or the selection), but its text comes
//!   to the episode through the isolated world's binding and never reaches the browser's
//!   clipboard (`gestures.js`);
//! - a cut by the server's key press (CTRL+X, SHIFT+DELETE) is the browser's own cut, under the
//!   browser's clipboard lock, the browser's clipboard emptied after it; a script's cut deletes
//!   the selection without it;
//! - a paste (CTRL+V, SHIFT+INSERT, CTRL+SHIFT+V) puts the episode's text on the browser's
//!   clipboard and presses the keys under the same lock: the page gets its `paste` event and the
//!   text inserted, as from a person's clipboard.
//!
//! - a middle click pastes nothing: it would paste Linux's primary selection, which the whole
//!   browser shares and any selection fills (measured: a password shown, selected, pasted by a
//!   middle click into a plain field).
//!
//! Nothing else reads the browser's clipboard: pages get no permission to (`navigator.clipboard`
//! is refused its reads and writes by the headless shell).

use crate::chromium::*;

/// The most characters a copy keeps.
const MAX_CLIPBOARD_CHARS: usize = 262_144;

/// What the episode copied last (shared by its tabs), and the episode's secrets as of the step
/// (`Browser::know_secrets`): a paste into a field that is not secret pastes them hidden, else
/// the agent copies a secret the page shows (an echo, CTRL+A on the page) into a plain field,
/// changes it there and reads it back.
#[derive(Debug, Clone, Default)]
pub(in crate::chromium) struct Clipboard {
    held: Arc<Mutex<Option<String>>>,
    secrets: Arc<Mutex<browserenv::secrets::Secrets>>,
}

impl Clipboard {
    /// What the isolated world reported: `{"kind": "copy"|"cut", "text": ...}`.
    pub(in crate::chromium) fn copied(&self, payload: &str) {
        let Ok(report) = serde_json::from_str::<Value>(payload) else {
            return;
        };
        if let (Some(text), Ok(mut held)) = (report["text"].as_str(), self.held.lock()) {
            *held = Some(crate::browser::first_chars(text, MAX_CLIPBOARD_CHARS));
        }
    }

    pub(in crate::chromium) fn know(&self, secrets: &browserenv::secrets::Secrets) {
        if let Ok(mut known) = self.secrets.lock() {
            known.clone_from(secrets);
        }
    }

    /// What a paste into a plain field pastes: the copy, the episode's secrets hidden in it.
    fn text_hidden(&self) -> String {
        self.hidden(&self.text())
    }

    /// `text` with the episode's secrets hidden (what goes into a plain field: a paste, a drop).
    pub(in crate::chromium) fn hidden(&self, text: &str) -> String {
        match self.secrets.lock() {
            Ok(secrets) => secrets.hidden(text).into_owned(),
            Err(_) => String::new(),
        }
    }

    pub(in crate::chromium) fn text(&self) -> String {
        self.held
            .lock()
            .ok()
            .and_then(|held| held.clone())
            .unwrap_or_default()
    }
}

/// What a chord does with the clipboard (on Linux, where these are the browser's own keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::chromium) enum ClipboardUse {
    Copy,
    Cut,
    Paste,
}

pub(in crate::chromium) fn clipboard_use(chord: Chord) -> Option<ClipboardUse> {
    match chord.name().as_str() {
        "CTRL+C" | "CTRL+INSERT" => Some(ClipboardUse::Copy),
        "CTRL+X" | "SHIFT+DELETE" => Some(ClipboardUse::Cut),
        "CTRL+V" | "SHIFT+INSERT" | "SHIFT+CTRL+V" => Some(ClipboardUse::Paste),
        _ => None,
    }
}

impl ChromiumBrowser {
    /// A chord pressed, the clipboard's kept the episode's (above).
    pub(in crate::chromium) async fn press_keeping_clipboard(
        &mut self,
        chord: Chord,
        repeat: u8,
    ) -> Result<(), PageError> {
        let used = clipboard_use(chord);
        if matches!(used, Some(ClipboardUse::Copy | ClipboardUse::Cut))
            && self.focus_is_secret().await
        {
            // The browser copies nothing out of a password field; every secret field is one
            // here (a password shown, a PIN drawn as discs, a field a person marked): else the
            // agent pastes the secret into a plain field, changes it, and reads it back.
            self.gestures("secretFocus(true)", false).await?;
            let pressed = self.press_chord(chord, repeat).await;
            let unset = self.gestures("secretFocus(false)", false).await;
            return pressed.and(unset.map(|_| ()));
        }
        match used {
            None | Some(ClipboardUse::Copy) => self.press_chord(chord, repeat).await,
            Some(ClipboardUse::Paste) => {
                let text = match self.focus_is_secret().await {
                    true => self.clipboard.text(),
                    false => self.clipboard.text_hidden(),
                };
                let host = self.host.clone();
                let _turn = host.clipboard.lock().await;
                self.write_clipboard(&text).await?;
                self.press_chord(chord, repeat).await
            }
            Some(ClipboardUse::Cut) => {
                let host = self.host.clone();
                let _turn = host.clipboard.lock().await;
                self.gestures("ownCut(true)", false).await?;
                let cut = self.press_chord(chord, repeat).await;
                let unmarked = self.gestures("ownCut(false)", false).await;
                self.write_clipboard("").await?;
                cut.and(unmarked.map(|_| ()))
            }
        }
    }

    /// Whether the focused element is a secret field by the probe's rule; one that cannot be
    /// read counts as one.
    pub(in crate::chromium) async fn focus_is_secret(&mut self) -> bool {
        self.secret_at(None).await
    }

    /// Whether the element at `at` (the focused one for none) is a secret field, as above.
    pub(in crate::chromium) async fn secret_at(&mut self, at: Option<(i64, i64)>) -> bool {
        use crate::browser::Browser;
        match self.element(at, false).await {
            Ok(Some(facts)) => facts.shown["password"] != false,
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// The browser's clipboard set to `text` (a copy only the isolated world sees). One that
    /// cannot be set is an error: a paste then would paste what another episode left there.
    async fn write_clipboard(&self, text: &str) -> Result<(), PageError> {
        let call = format!("setClipboard({})", Value::from(text));
        match self.gestures(&call, true).await? {
            Value::Bool(true) => Ok(()),
            _ => Err(PageError::ActionFailed(
                "the episode's clipboard could not be put on the page's (nothing was pasted)"
                    .into(),
            )),
        }
    }
}
