//! Dropdowns a person can see. A click on a native `<select>` opens its popup in the headless
//! shell too (keys move its highlight, ENTER chooses, ESCAPE closes, a click elsewhere closes),
//! but its frames never show it: the screenshot after the click was the one before (a whole
//! redrawn viewport paints it later, rows of its own height over anything drawn; `capture.rs`
//! pictures an open dropdown from a frame for that reason). So after
//! each input the isolated world (`gestures.js`) draws the open popup where a browser draws it
//! (below the select, or above when there is more room there), its highlight where the keys
//! moved it, in a closed shadow root in the top layer that the page's scripts cannot reach; a
//! click on one of its options chooses it with the popup's own keys (HOME, DOWN to it, ENTER), so
//! the page hears the browser's own `input` and `change`, as from a person's choice.

use crate::chromium::*;
use serde_json::json;

/// The open dropdown as drawn: its box and its rows, on one document.
#[derive(Debug, Clone)]
pub(in crate::chromium) struct Dropdown {
    document: (TargetId, u64),
    frame: [f64; 4],
    rows: Vec<Row>,
}

#[derive(Debug, Clone)]
struct Row {
    /// The option's index in the select, -1 for a group's label.
    index: i64,
    /// HOME and this many DOWNs reach it; none for a group's label.
    rank: Option<u64>,
    enabled: bool,
    frame: [f64; 4],
}

/// What a point of the screen is to an open dropdown.
enum Hit {
    /// An option a click chooses: HOME and this many DOWNs reach it (its index beside).
    Option { rank: u64, index: i64 },
    /// The dropdown, but nothing to choose (a disabled option, a group's label, its border).
    Inert,
}

fn inside(frame: &[f64; 4], at: Point) -> bool {
    let (x, y) = (at.x as f64, at.y as f64);
    x >= frame[0] && x < frame[0] + frame[2] && y >= frame[1] && y < frame[1] + frame[3]
}

fn frame_of(value: &Value) -> Option<[f64; 4]> {
    serde_json::from_value(value.clone()).ok()
}

impl ChromiumBrowser {
    fn document(&self) -> (TargetId, u64) {
        (
            self.current.page.target_id().clone(),
            self.current.load.borrow().commits,
        )
    }

    /// The dropdown shown on the current document, if any.
    fn shown_dropdown(&self) -> Option<&Dropdown> {
        self.dropdown
            .as_ref()
            .filter(|dropdown| dropdown.document == self.document())
    }

    pub(in crate::chromium) fn dropdown_open(&self) -> bool {
        self.shown_dropdown().is_some()
    }

    /// The drawn dropdown's box in picture pixels, to cover when its select is secret: its
    /// highlighted row is the choice.
    pub(in crate::chromium) fn dropdown_box(&self) -> Option<[i64; 4]> {
        let [x, y, width, height] = self.shown_dropdown()?.frame;
        let (left, top) = (x.floor(), y.floor());
        Some([
            left as i64,
            top as i64,
            (x + width - left).ceil() as i64,
            (y + height - top).ceil() as i64,
        ])
    }

    fn hit(&self, at: Point) -> Option<Hit> {
        let dropdown = self.shown_dropdown()?;
        if !inside(&dropdown.frame, at) {
            return None;
        }
        let row = dropdown.rows.iter().find(|row| inside(&row.frame, at));
        Some(match row {
            Some(Row {
                rank: Some(rank),
                enabled: true,
                index,
                ..
            }) => Hit::Option {
                rank: *rank,
                index: *index,
            },
            _ => Hit::Inert,
        })
    }

    /// Draw the dropdown as it is after an input (or take it away when none is open); `nav` says
    /// how keys just pressed in the popup moved its highlight. Best effort: a page that went away
    /// meanwhile has no dropdown to draw.
    pub(in crate::chromium) async fn refresh_dropdown(&mut self, nav: Value) {
        let call = format!("dropdown({nav})");
        let drawn = match self.gestures(&call, false).await {
            Ok(drawn) => drawn,
            Err(err) => {
                tracing::debug!("the dropdown could not be drawn: {err}");
                Value::Null
            }
        };
        // Its boxes in picture pixels, where the actions' points are (`page_setup.rs`).
        let in_picture = |value: &Value| frame_of(value).map(|frame| self.frame_to_picture(frame));
        self.dropdown = in_picture(&drawn["box"]).map(|frame| Dropdown {
            document: self.document(),
            frame,
            rows: drawn["rows"]
                .as_array()
                .map(|rows| {
                    rows.iter()
                        .filter_map(|row| {
                            Some(Row {
                                index: row["index"].as_i64()?,
                                rank: row["rank"].as_u64(),
                                enabled: row["enabled"].as_bool().unwrap_or(false),
                                frame: in_picture(&row["box"])?,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        });
    }

    /// A click: on the open dropdown, the choice of the option under it (nothing on its inert
    /// parts, as a browser's popup); elsewhere, the click itself (which closes the popup).
    pub(in crate::chromium) async fn click_or_choose(
        &mut self,
        at: Point,
        button: MouseButton,
        count: u8,
        modifiers: Modifiers,
    ) -> Result<(), PageError> {
        match self.hit(at) {
            Some(Hit::Option { rank, .. }) if button == MouseButton::Left => {
                self.choose_in_popup(rank).await
            }
            Some(_) => Ok(()),
            None => self.click_at(at, button, count, modifiers).await,
        }
    }

    /// The pointer over the open dropdown moves its highlight, as over a browser's popup.
    pub(in crate::chromium) async fn hover_dropdown(
        &mut self,
        at: Point,
    ) -> Option<Result<(), PageError>> {
        match self.hit(at)? {
            Hit::Option { rank, index } => {
                let keys = self.popup_keys(rank, None).await;
                self.refresh_dropdown(json!({ "hover": index })).await;
                Some(keys)
            }
            Hit::Inert => Some(Ok(())),
        }
    }

    /// HOME, `rank` DOWNs, and `last` (ENTER chooses) in the open popup.
    async fn popup_keys(&self, rank: u64, last: Option<&str>) -> Result<(), PageError> {
        let name = |key: &str| browserenv::models::KeyName::from_name(key).map(Chord::new);
        let (Some(home), Some(down)) = (name("HOME"), name("DOWN")) else {
            return Ok(());
        };
        self.press_chord(home, 1).await?;
        for _ in 0..rank / 20 {
            self.press_chord(down, 20).await?;
        }
        if !rank.is_multiple_of(20) {
            self.press_chord(down, (rank % 20) as u8).await?;
        }
        match last.and_then(name) {
            Some(key) => self.press_chord(key, 1).await,
            None => Ok(()),
        }
    }

    async fn choose_in_popup(&mut self, rank: u64) -> Result<(), PageError> {
        self.popup_keys(rank, Some("ENTER")).await
    }

    /// `select`: the option labelled `label` of the `<select>` at `at`, chosen as a person
    /// chooses it: a dropdown opened with a click (unless open) and its option chosen in the
    /// popup; a list box's option clicked. A page that keeps the popup from opening gets the
    /// choice made by script, its `input` and `change` fired. A picker input (`date`, `time`,
    /// `color`, ...) takes `label` as its value.
    pub(in crate::chromium) async fn select_label(
        &mut self,
        at: Point,
        label: &str,
    ) -> Result<(), PageError> {
        let (x, y) = self.to_page(at.x, at.y);
        let shown = Value::from(format!("({}, {})", at.x, at.y));
        let call = format!("selectAt({x}, {y}, {}, {shown})", Value::from(label));
        let found = self.gestures(&call, false).await?;
        if let Some(why) = found["error"].as_str() {
            return Err(PageError::ActionFailed(format!("text: {why}")));
        }
        if found["missing"] == Value::Bool(true) {
            let labels: Vec<String> = found["labels"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(|l| format!("{l:?}"))
                        .collect()
                })
                .unwrap_or_default();
            let more = match found["more"].as_u64().unwrap_or(0) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            return Err(PageError::ActionFailed(format!(
                "text: no option labelled {label:?} in the <select> at ({}, {}); its options: {}{more}",
                at.x,
                at.y,
                labels.join(", ")
            )));
        }
        if found["picker"].is_string() {
            let call = format!("setPicker({x}, {y}, {}, {shown})", Value::from(label));
            let set = self.gestures(&call, false).await?;
            return match set["error"].as_str() {
                Some(why) => Err(PageError::ActionFailed(format!("text: {why}"))),
                None => Ok(()),
            };
        }
        let rank = found["rank"].as_u64().unwrap_or(0);
        let index = found["index"].as_i64().unwrap_or(0);
        if found["listbox"] == Value::Bool(true) {
            let option = frame_of(&found["optionBox"]).map(|frame| self.frame_to_picture(frame));
            let Some([left, top, w, h]) = option else {
                return Err(PageError::ActionFailed(
                    "text: the option has no box".into(),
                ));
            };
            let centre = Point::new((left + w / 2.0) as i64, (top + h / 2.0) as i64);
            return self
                .click_at(centre, MouseButton::Left, 1, Modifiers::NONE)
                .await;
        }
        if found["open"] != Value::Bool(true) {
            self.click_at(at, MouseButton::Left, 1, Modifiers::NONE)
                .await?;
            self.refresh_dropdown(Value::Null).await;
        }
        if self.dropdown_open() {
            return self.choose_in_popup(rank).await;
        }
        let call = format!("chooseByScript({x}, {y}, {index})");
        self.gestures(&call, false).await.map(|_| ())
    }
}
