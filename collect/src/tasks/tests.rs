use std::collections::BTreeMap;

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
    let pattern = task(r#"{"answer":{"match":"regex","value":"(?i)^\\s*(10|10:00|10 am)\\s*$"}}"#);
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
        all.details
            .contains(&"all_of[1]: element \"#gone\": no such element on the final page".into()),
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

/// A file of the repository (docs, assets): the workspace root is this crate's parent.
fn in_workspace(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// docs/tasks.md shows one example per part, each a check this file's reader takes.
#[test]
fn the_docs_show_a_valid_example_of_every_part() {
    let path = in_workspace("docs/tasks.md");
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
    let path = in_workspace("assets/tasks/demo.jsonl");
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
    let site = in_workspace("assets/site");
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
