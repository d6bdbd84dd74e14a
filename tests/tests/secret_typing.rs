//! What a person typed into a secret field is a secret from the keystroke on, whatever the field
//! holds afterwards: pages that send a field and come back empty, or clear it themselves, hide
//! nothing of it from any outlet (the agent's observation and `human_steps`, another watcher,
//! the text layer, the recording, the web archive). Real Chromium, real sockets; the findings of
//! security round 4, each reproduced first; and what a paste or a drop leaves in one.

use browserenv_tests::outlets::{click, episode, key, typing};

/// A one-time code that sends itself after its sixth digit and comes back empty: the code was
/// in the agent's URL, `human_steps`, the watchers', the recording and the archive.
#[tokio::test]
async fn a_one_time_code_that_sends_itself_is_hidden_everywhere() {
    let seen = episode("otp", "otp.html", &[click(250, 115), typing("493817")]).await;
    let url = &seen.last.as_ref().unwrap().observation.url;
    assert!(url.contains("code="), "the code was sent: {url}");
    assert_eq!(seen.leaks(&["493817", "4938"]), Vec::<String>::new());
    assert!(url.contains("code=<redacted:6 characters>"), "{url}");
    assert_eq!(seen.typed_shown(), ["<redacted:6 characters>"]);
    assert!(seen
        .archive
        .contains("otp.html?code=<redacted:6 characters>"));
}

/// One `type` ending in a newline on a sign-in form whose answer focuses an empty password
/// field: the password was in the agent's URL. Typed and sent in two steps it was hidden (the
/// control); both are now.
#[tokio::test]
async fn a_password_sent_by_its_own_newline_is_hidden_everywhere() {
    for steps in [
        vec![click(250, 215), typing("Hunter2pass\n")],
        vec![click(250, 215), typing("Hunter2pass"), key("ENTER")],
    ] {
        let seen = episode("pwretry", "pwretry.html", &steps).await;
        let url = &seen.last.as_ref().unwrap().observation.url;
        assert!(url.contains("pw="), "the form was sent: {url}");
        assert_eq!(
            seen.leaks(&["Hunter2pass", "Hunter2", "unter2pa"]),
            Vec::<String>::new(),
            "{steps:?}"
        );
        assert!(url.contains("pw=<redacted:11 characters>"), "{url}");
        let shown = seen.typed_shown();
        assert_eq!(shown.len(), 1);
        assert!(shown[0].starts_with("<redacted:"), "{shown:?}");
    }
}

/// A single-page app signs in with a fetch (the password in a JSON body) and clears the field:
/// the password was in the archive, escaped as JSON.
#[tokio::test]
async fn a_password_an_app_clears_after_signing_in_is_hidden_everywhere() {
    let seen = episode("spa", "spa.html", &[click(250, 215), typing("Kx\"9q#2w\n")]).await;
    assert!(
        seen.archive.contains("spa-signin.json"),
        "the sign-in was recorded"
    );
    assert_eq!(
        seen.leaks(&["Kx\\\"9q#2w", "Kx\"9q#2w", "9q#2w", "9q%232w"]),
        Vec::<String>::new()
    );
    assert!(
        seen.archive.contains(r#""pw":"<redacted:8 characters>""#),
        "{}",
        seen.archive
    );
    assert!(seen.own.last().unwrap()["data"]["observation"]["metadata"]["title"] == "App");
}

/// The generated password `pwgen.html` puts on the clipboard or carries in a drag, in the
/// spellings and starts an outlet could hold it in.
const GENERATED: [&str; 5] = [
    "Zq7#Lm9vX!t4",
    "Zq7%23Lm9vX%21t4",
    "Zq7%23",
    "Lm9vX",
    "Zq7#",
];

/// A password pasted into a password field (CTRL+V of what the page's copy handler put on the
/// episode's clipboard) and sent: what the paste left in the field is a secret, hidden in every
/// outlet, though nothing was typed and the chord carries no character.
#[tokio::test]
async fn a_password_pasted_into_a_secret_field_is_hidden_everywhere() {
    let press = |chord: &str| {
        let action = browserenv::BrowserAction::press_named(chord).unwrap();
        (action.to_value(), false)
    };
    let steps = [
        click(250, 60),
        press("CTRL+A"),
        press("CTRL+C"),
        click(250, 215),
        press("CTRL+V"),
        key("ENTER"),
    ];
    let seen = episode("pwpaste", "pwgen.html", &steps).await;
    let url = &seen.last.as_ref().unwrap().observation.url;
    assert!(url.contains("pw="), "the form was sent: {url}");
    assert!(url.contains("pw=<redacted:12 characters>"), "{url}");
    assert_eq!(seen.leaks(&GENERATED), Vec::<String>::new());
    let pasted = &seen.own[4]["data"]["observation"]["metadata"];
    assert_eq!(pasted["element"]["password"], true, "{pasted}");
}

/// The same password dropped into the password field from the page's draggable chip (an HTML5
/// drag the page fills): what the drop left there is hidden in every outlet.
#[tokio::test]
async fn a_password_dropped_into_a_secret_field_is_hidden_everywhere() {
    let drag = browserenv::BrowserAction::drag([(250, 130), (250, 170), (250, 215)]);
    let steps = [(drag.to_value(), false), click(250, 215), key("ENTER")];
    let seen = episode("pwdrop", "pwgen.html", &steps).await;
    let url = &seen.last.as_ref().unwrap().observation.url;
    assert!(url.contains("pw="), "the form was sent: {url}");
    assert!(url.contains("pw=<redacted:12 characters>"), "{url}");
    assert_eq!(seen.leaks(&GENERATED), Vec::<String>::new());
    let dropped = &seen.own[0]["data"]["observation"]["metadata"];
    assert_eq!(dropped["secret_input"], true, "{dropped}");
}
