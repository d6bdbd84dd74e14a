use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use super::people::{PEOPLE_DIR, PEOPLE_FILE};
use super::*;

const TASKS: &str = concat!(
    r#"{"id":"a","category":"information","instruction":"A","start_url":"/","check":{"answer":{"match":"normalized","value":"x"}}}"#,
    "\n",
    r#"{"id":"b","category":"information","instruction":"B","start_url":"/","check":{"answer":{"match":"normalized","value":"y"}}}"#,
    "\n"
);

fn campaign(dir: &Path, config: &str) -> Campaign {
    std::fs::write(dir.join("tasks.jsonl"), TASKS).unwrap();
    std::fs::write(dir.join(CONFIG_FILE), config).unwrap();
    let (campaign, problems) = Campaign::open(dir).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    campaign
}

/// A fresh folder of this test's own (removed when dropped).
struct Scratch(PathBuf);

impl Scratch {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp() -> Scratch {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "browserenv-campaign-test-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// `lease`'s task done in session `s` as episode `episode` and saved by its person.
fn demonstrate(c: &mut Campaign, lease: &Lease, episode: &str, check: Option<bool>, t: Instant) {
    let session = format!("s-{}", lease.person);
    let mut c = c.at(t);
    c.start(&lease.id, &session, &lease.person).unwrap();
    c.episode_ended(&lease.id, &session, episode, check)
        .unwrap();
    c.complete(&lease.id, &lease.person, OwnMark::Pass, episode)
        .unwrap();
}

#[test]
fn every_task_gets_its_wanted_demonstrations_and_no_one_does_one_twice() {
    let dir = temp();
    let mut c = campaign(dir.path(), r#"{"tasks":"tasks.jsonl","demos_wanted":2}"#);
    let t = Instant::now();
    let ana = c.at(t).next_task("ana").unwrap().unwrap();
    let bo = c.at(t).next_task("Bo").unwrap().unwrap();
    let cy = c.at(t).next_task("cy").unwrap().unwrap();
    assert_eq!(
        (ana.task.as_str(), bo.task.as_str(), cy.task.as_str()),
        ("a", "a", "b")
    );
    assert_eq!(bo.person, "bo", "names are kept in lower case");
    assert_ne!(ana.id, bo.id);
    // Asking again hands back the lease one holds.
    assert_eq!(c.at(t).next_task("ana").unwrap().unwrap().id, ana.id);
    demonstrate(&mut c, &ana, "e1", Some(true), t);
    demonstrate(&mut c, &bo, "e2", Some(false), t);
    // Task a is full and ana did it: b (one slot left beside cy's lease).
    let ana2 = c.at(t).next_task("ANA").unwrap().unwrap();
    assert_eq!(ana2.task, "b");
    // Nothing is left for bo: a is full, b's two slots are leased.
    assert_eq!(c.at(t).next_task("bo").unwrap(), None);
    demonstrate(&mut c, &ana2, "e3", None, t);
    demonstrate(&mut c, &cy, "e4", None, t);
    let progress = c.at(t).progress();
    assert_eq!(
        (progress.done, progress.wanted, progress.tasks_complete),
        (4, 4, 2)
    );
    assert_eq!(progress.pass_rate, Some(0.5));
    assert_eq!(c.at(t).next_task("cy").unwrap(), None);
}

#[test]
fn a_lease_is_its_person_s_and_its_session_s() {
    let dir = temp();
    let mut c = campaign(dir.path(), r#"{"tasks":"tasks.jsonl","demos_wanted":2}"#);
    let t = Instant::now();
    let mut c = c.at(t);
    let ana = c.next_task("ana").unwrap().unwrap();
    // Only its person starts it, in the first session that does.
    assert_eq!(
        c.start(&ana.id, "s0", "bo"),
        Err(CampaignError::NotYours(ana.id.clone()))
    );
    c.start(&ana.id, "s1", "ana").unwrap();
    // Another session may not take it up, step it, end its episode or let it go.
    assert_eq!(
        c.start(&ana.id, "s2", "ana"),
        Err(CampaignError::OtherSession(ana.id.clone()))
    );
    assert!(c.touch(&ana.id, "s2").is_err());
    assert!(c.episode_ended(&ana.id, "s2", "x", None).is_err());
    c.release(&ana.id, "s2");
    assert!(c.lease(&ana.id).is_some());
    // Only its person saves or skips it.
    c.episode_ended(&ana.id, "s1", "e1", None).unwrap();
    assert_eq!(
        c.complete(&ana.id, "bo", OwnMark::Pass, "e1"),
        Err(CampaignError::NotYours(ana.id.clone()))
    );
    assert_eq!(
        c.skip(&ana.id, "bo", "no"),
        Err(CampaignError::NotYours(ana.id.clone()))
    );
    assert_eq!(c.to_complete(&ana.id, "ana"), Ok("e1".to_string()));
    // Starting over forgets the ended episode: the new one is the one to save, and the old
    // one, confirmed before the restart, is not saved in its place.
    c.start(&ana.id, "s1", "ana").unwrap();
    assert_eq!(
        c.complete(&ana.id, "ana", OwnMark::Pass, "e1"),
        Err(CampaignError::NotEnded("a".into()))
    );
    c.episode_ended(&ana.id, "s1", "e2", Some(true)).unwrap();
    assert_eq!(
        c.complete(&ana.id, "ana", OwnMark::Pass, "e1"),
        Err(CampaignError::NotEnded("a".into())),
        "e1 is not the lease's episode any more"
    );
    assert_eq!(
        c.complete(&ana.id, "Ana", OwnMark::Pass, "e2")
            .unwrap()
            .episode_id,
        "e2"
    );
    // An episode is one demonstration, whoever tries to save it again.
    let bo = c.next_task("bo").unwrap().unwrap();
    c.start(&bo.id, "s3", "bo").unwrap();
    c.episode_ended(&bo.id, "s3", "e2", None).unwrap();
    assert_eq!(
        c.to_complete(&bo.id, "bo"),
        Err(CampaignError::Duplicate("e2".into()))
    );
}

#[test]
fn a_lease_ends_when_its_person_leaves_idles_or_skips() {
    let dir = temp();
    let mut c = campaign(
        dir.path(),
        r#"{"tasks":"tasks.jsonl","demos_wanted_per_task":{"b":0},"lease_idle_seconds":100}"#,
    );
    let t = Instant::now();
    let ana = c.at(t).next_task("ana").unwrap().unwrap();
    assert_eq!(
        c.at(t).next_task("bo").unwrap(),
        None,
        "a's only slot is leased, b wants none"
    );
    c.at(t).start(&ana.id, "s-ana", "ana").unwrap();
    c.at(t).release(&ana.id, "s-ana");
    let bo = c.at(t).next_task("bo").unwrap().unwrap();
    assert_eq!(bo.task, "a");
    c.at(t).start(&bo.id, "s-bo", "bo").unwrap();
    c.at(t + Duration::from_secs(80))
        .touch(&bo.id, "s-bo")
        .unwrap();
    assert_eq!(
        c.at(t + Duration::from_secs(150)).next_task("cy").unwrap(),
        None
    );
    let cy = c
        .at(t + Duration::from_secs(181))
        .next_task("cy")
        .unwrap()
        .unwrap();
    assert_eq!(cy.task, "a", "bo's lease idled out");
    assert_eq!(
        c.at(t + Duration::from_secs(181))
            .episode_ended(&bo.id, "s-bo", "late", None),
        Err(CampaignError::NoLease(bo.id.clone()))
    );
    // A lease nobody starts goes back after LEASE_START.
    let later = t + Duration::from_secs(181) + LEASE_START;
    let dee = c.at(later).next_task("dee").unwrap().unwrap();
    assert_eq!(dee.task, "a", "cy asked but never started");
    c.at(later)
        .skip(&dee.id, "dee", "the page is down\u{1b}[2J\u{202e}")
        .unwrap();
    assert_eq!(c.at(later).next_task("dee").unwrap(), None, "dee skipped a");
    let progress = c.at(later).progress();
    assert_eq!(progress.tasks[0].skipped, 1);
    assert_eq!(
        (progress.tasks_total, progress.tasks_complete),
        (1, 0),
        "b is left out"
    );
    let log = std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
    assert!(log.contains("the page is down[2J\""), "{log}");
}

/// Every entry point sees the campaign as of its moment: a lease or a review hand that ran out
/// is gone for a skip, a save and a review too, not only for the next lease.
#[test]
fn what_ran_out_is_gone_for_every_request() {
    let dir = temp();
    let mut c = campaign(
        dir.path(),
        r#"{"tasks":"tasks.jsonl","demos_wanted":2,"lease_idle_seconds":100}"#,
    );
    let t = Instant::now();
    let idle = t + Duration::from_secs(101);
    let ana = c.at(t).next_task("ana").unwrap().unwrap();
    c.at(t).start(&ana.id, "s-ana", "ana").unwrap();
    assert_eq!(
        c.at(idle).skip(&ana.id, "ana", "late"),
        Err(CampaignError::NoLease(ana.id.clone())),
        "an idle lease cannot be skipped"
    );
    let bo = c.at(idle).next_task("bo").unwrap().unwrap();
    c.at(idle).start(&bo.id, "s-bo", "bo").unwrap();
    c.at(idle)
        .episode_ended(&bo.id, "s-bo", "e1", None)
        .unwrap();
    let late = idle + Duration::from_secs(101);
    assert_eq!(
        c.at(late).to_complete(&bo.id, "bo"),
        Err(CampaignError::NoLease(bo.id.clone())),
        "an idle lease cannot be saved"
    );
    let cy = c.at(late).next_task("cy").unwrap().unwrap();
    demonstrate(&mut c, &cy, "e2", None, late);
    assert!(c.at(late).next_review("dee").unwrap().is_some());
    let gone = late + Duration::from_secs(101);
    assert_eq!(
        c.at(gone).review("e2", "dee", true, ""),
        Err(CampaignError::NotInHand("e2".into())),
        "a review hand that ran out is nobody's"
    );
}

#[test]
fn a_person_let_go_of_holds_nothing() {
    let dir = temp();
    let mut c = campaign(dir.path(), r#"{"tasks":"tasks.jsonl","demos_wanted":1}"#);
    let t = Instant::now();
    let ana = c.at(t).next_task("ana").unwrap().unwrap();
    demonstrate(&mut c, &ana, "e1", None, t);
    let ana2 = c.at(t).next_task("ana").unwrap().unwrap();
    assert!(c.at(t).next_review("bo").unwrap().is_some());
    let mut now = c.at(t);
    now.let_go_of("ana");
    now.let_go_of("bo");
    assert_eq!(now.lease(&ana2.id), None);
    assert_eq!(now.progress().tasks[1].leased, 0);
    assert!(
        now.next_review("cy").unwrap().is_some(),
        "bo's hand is free"
    );
}

#[test]
fn a_rejected_demonstration_puts_its_task_back_and_a_restart_loses_nothing() {
    let dir = temp();
    let config = r#"{"tasks":"tasks.jsonl","demos_wanted":1}"#;
    let t = Instant::now();
    let first_lease = {
        let mut c = campaign(dir.path(), config);
        let ana = c.at(t).next_task("ana").unwrap().unwrap();
        demonstrate(&mut c, &ana, "e1", Some(true), t);
        let skipped = c.at(t).next_task("ana").unwrap().unwrap();
        c.at(t).skip(&skipped.id, "ana", "no time").unwrap();
        ana.id
    };
    let (mut campaign, problems) = Campaign::open(dir.path()).unwrap();
    assert!(problems.is_empty());
    assert_eq!(campaign.counted("a"), 1);
    let mut c = campaign.at(t);
    assert_eq!(c.next_task("ana").unwrap(), None, "a done, b skipped");
    let cy = c.next_task("cy").unwrap().unwrap();
    assert_ne!(cy.id, first_lease, "a restart hands out no old lease id");
    // Nobody reviews their own, nor what is not in their hands; bo gets e1, and a second ask
    // returns the same.
    assert_eq!(c.next_review("ana").unwrap(), None);
    assert_eq!(
        c.review("e1", "bo", true, ""),
        Err(CampaignError::NotInHand("e1".into()))
    );
    let e1 = c.next_review("bo").unwrap().unwrap();
    assert_eq!(c.next_review("bo").unwrap().unwrap(), e1);
    assert_eq!(c.next_review("dee").unwrap(), None, "e1 is in bo's hands");
    assert_eq!(
        c.review("e1", "Ana", true, ""),
        Err(CampaignError::OwnDemonstration("ana".into()))
    );
    c.review(&e1.episode_id, "bo", false, "clicked the wrong item")
        .unwrap();
    assert_eq!(
        c.review("e1", "bo", true, ""),
        Err(CampaignError::Reviewed("e1".into())),
        "a verdict is not flipped"
    );
    drop(campaign);
    let (mut c, _) = Campaign::open(dir.path()).unwrap();
    assert_eq!(c.counted("a"), 0);
    let mut c = c.at(t);
    assert_eq!(c.next_task("ana").unwrap(), None, "ana did a once already");
    assert_eq!(c.next_task("dee").unwrap().unwrap().task, "a");
    let progress = c.progress();
    assert_eq!(
        (
            progress.tasks[0].rejected,
            progress.reviewed,
            progress.accepted
        ),
        (1, 1, 0)
    );
}

#[test]
fn names_and_settings_are_checked() {
    let dir = temp();
    let mut c = campaign(dir.path(), r#"{"tasks":"tasks.jsonl","demos_wanted":1000}"#);
    let t = Instant::now();
    for bad in ["", "a b", "\u{1b}[2J", &"x".repeat(65)] {
        assert_eq!(c.at(t).next_task(bad), Err(CampaignError::BadName));
    }
    for n in 0..MAX_PEOPLE {
        c.at(t).next_task(&format!("p{n}")).unwrap().unwrap();
    }
    assert_eq!(
        c.at(t).next_task("one-more"),
        Err(CampaignError::TooManyPeople)
    );
    for (config, says) in [
        (
            r#"{"tasks":"tasks.jsonl","demos_wanted_per_task":{"zz":1}}"#,
            "\"zz\", which is not a task",
        ),
        (r#"{"tasks":"tasks.jsonl","wanted":1}"#, "unknown field"),
        (
            r#"{"tasks":"tasks.jsonl","lease_idle_seconds":0}"#,
            "lease_idle_seconds is 10..=86400",
        ),
        (
            r#"{"tasks":"tasks.jsonl","demos_wanted":0}"#,
            "demos_wanted is at least 1",
        ),
    ] {
        std::fs::write(dir.path().join(CONFIG_FILE), config).unwrap();
        let err = Campaign::open(dir.path()).err().unwrap();
        assert!(err.contains(says), "{err}");
    }
}

/// A person is known by their token alone; the file keeps only its digest, is its user's alone,
/// and a person removed is refused at once.
#[test]
fn people_are_their_tokens() {
    let dir = temp();
    assert_eq!(
        People::load(dir.path()).unwrap().names().count(),
        0,
        "no file yet: nobody"
    );
    let (ana, ana_token) = People::add(dir.path(), "Ana").unwrap();
    assert_eq!(ana, "ana");
    let (_, bo_token) = People::add(dir.path(), "bo").unwrap();
    assert_eq!(ana_token.len(), 64, "256 bits in hex");
    assert_ne!(ana_token, bo_token);
    let err = People::add(dir.path(), "ANA").unwrap_err();
    assert!(err.contains("already"), "{err}");
    assert!(People::add(dir.path(), "a b").is_err());
    let people = People::load(dir.path()).unwrap();
    assert_eq!(people.person(&ana_token), Some("ana"));
    assert_eq!(people.person(&bo_token), Some("bo"));
    assert_eq!(people.person(&ana_token.to_uppercase()), None);
    assert_eq!(people.person(""), None);
    assert_eq!(people.person(&ana_token[..63]), None);
    let folder = dir.path().join(PEOPLE_DIR);
    let file = folder.join(PEOPLE_FILE);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains(&ana_token) && !text.contains(&bo_token),
        "only digests are kept: {text}"
    );
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&folder), mode(&file)), (0o700, 0o600));
    assert_eq!(People::remove(dir.path(), "ANA").unwrap(), "ana");
    let people = People::load(dir.path()).unwrap();
    assert_eq!(people.person(&ana_token), None, "removed: refused at once");
    assert_eq!(people.person(&bo_token), Some("bo"));
    assert!(People::remove(dir.path(), "ana").is_err());
    // Added again, the same person with a new token.
    let (_, again) = People::add(dir.path(), "ana").unwrap();
    assert_ne!(again, ana_token);
    // A file that does not read as people's is an error, never a campaign open to anyone.
    std::fs::write(&file, r#"{"schema":"browserenv.campaign.people.v1","people":[{"name":"Eve","token_sha256":"00","added":""}]}"#).unwrap();
    let err = People::load(dir.path()).unwrap_err();
    assert!(err.contains("\"Eve\""), "{err}");
}
