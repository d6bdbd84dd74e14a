//! Task packs that outlive the web (docs/archives.md): the demo tasks snapshotted into a pack
//! (`browserenv-tui tasks snapshot`), then served from it with the demo site gone: every reference
//! solution earns 1.0, twice in a row with the same pixels at every step.

use base64::Engine;
use browserenv::{Client, StepResult};
use browserenv_server::environment::TaskCatalog;
use browserenv_server::ServerConfig;
use browserenv_tests::{assets_dir, chromium_path, test_settings, Harness, Picture};
use browserenv_tui::offline::task_files::{snapshot, Snapshot, PACK_SOLUTIONS, PACK_TASKS};
use serde_json::{json, Map};

async fn run_solutions(
    client: &mut Client,
    solutions: &[browserenv_collect::solutions::Solution],
) -> Vec<(String, Vec<StepResult>)> {
    let mut runs = Vec::new();
    for solution in solutions {
        let mut kwargs = Map::new();
        kwargs.insert("task_id".into(), json!(solution.task_id));
        kwargs.insert("seed".into(), json!(7));
        let first = client.reset_with(kwargs).await.unwrap();
        assert_eq!(
            first.observation.metadata["archive"]["replay"]
                .as_str()
                .map(|s| s.starts_with("archives/")),
            Some(true),
            "{}: {:?}",
            solution.task_id,
            first.observation.metadata
        );
        let mut seen = vec![first];
        for action in &solution.actions {
            let result = client.step(action.clone()).await.unwrap();
            assert_eq!(
                result.observation.error, "",
                "{} {action:?}",
                solution.task_id
            );
            assert!(
                result.observation.metadata.get("archive_misses").is_none(),
                "{} {action:?}: {:?}",
                solution.task_id,
                result.observation.metadata["archive_misses"]
            );
            seen.push(result);
        }
        let last = seen.last().unwrap();
        assert_eq!(
            last.reward,
            Some(1.0),
            "{}: {:?}",
            solution.task_id,
            last.observation.metadata.get("verdict")
        );
        runs.push((solution.task_id.clone(), seen));
    }
    runs
}

#[tokio::test]
async fn the_demo_tasks_as_a_pack_are_solved_offline_twice_with_the_same_pixels() {
    let pack = std::env::temp_dir().join(format!("browserenv-pack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&pack);
    let asked = Snapshot {
        file: assets_dir().join("tasks/demo.jsonl"),
        out: pack.clone(),
        solutions: None,
        base_url: None,
        site: assets_dir().join("site"),
        chromium: chromium_path(),
        wacz: false,
    };
    let report = snapshot(&asked).await.unwrap();
    assert_eq!(report.tasks, 20);
    assert_eq!(report.solved.len(), 20);
    assert!(
        report.solved.iter().all(|(_, reward)| *reward == Some(1.0)),
        "{:?}",
        report.solved
    );
    // A pack is not written over.
    let again = snapshot(&asked).await.unwrap_err().to_string();
    assert!(again.contains("is not empty"), "{again}");

    // The snapshot's demo site is gone with it: the pack alone answers.
    let catalog = TaskCatalog::load(&pack.join(PACK_TASKS), None).unwrap();
    assert!(catalog
        .tasks
        .tasks
        .iter()
        .all(|t| t.archive.is_some() && t.start_url.starts_with("http://127.0.0.1:")));
    let start = reqwest::get(&catalog.tasks.tasks[0].start_url).await;
    assert!(start.is_err(), "the demo site is not running");
    let solutions = browserenv_collect::solutions::load(&pack.join(PACK_SOLUTIONS)).unwrap();
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        tasks: Some(std::sync::Arc::new(catalog)),
        ..ServerConfig::default()
    })
    .await;
    let mut client = harness.client().await;
    let first = run_solutions(&mut client, &solutions).await;
    let second = run_solutions(&mut client, &solutions).await;
    for ((task, a), (_, b)) in first.iter().zip(&second) {
        for (n, (a, b)) in a.iter().zip(b).enumerate() {
            let (pa, pb) = (
                Picture::from_base64(&a.observation.screenshot),
                Picture::from_base64(&b.observation.screenshot),
            );
            if pa.pixels != pb.pixels {
                // Say where the pictures differ and how each step settled, and keep both
                // pictures, so a failure in CI can be explained from its log and files.
                let kept = std::env::temp_dir().join(format!("browserenv-pack-diff-{task}-{n}"));
                let _ = std::fs::create_dir_all(&kept);
                for (name, shot) in [("first", a), ("second", b)] {
                    let png = base64::engine::general_purpose::STANDARD
                        .decode(&shot.observation.screenshot)
                        .unwrap();
                    let _ = std::fs::write(kept.join(format!("{name}.png")), png);
                }
                panic!(
                    "{task}, observation {n}: other pixels the second time, in {:?} (pictures in {}); first {:?}; second {:?}",
                    pa.differing_box(&pb),
                    kept.display(),
                    a.observation.metadata,
                    b.observation.metadata
                );
            }
        }
    }
    client.close().await.unwrap();
    harness.stop().await;
    std::fs::remove_dir_all(&pack).unwrap();
}

/// The same pack with each task's archive a WACZ (`tasks snapshot --wacz`): read through the
/// package's own index, every reference solution earns 1.0 offline.
#[tokio::test]
async fn the_demo_tasks_as_a_wacz_pack_are_solved_offline() {
    let pack = std::env::temp_dir().join(format!("browserenv-wacz-pack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&pack);
    let asked = Snapshot {
        file: assets_dir().join("tasks/demo.jsonl"),
        out: pack.clone(),
        solutions: None,
        base_url: None,
        site: assets_dir().join("site"),
        chromium: chromium_path(),
        wacz: true,
    };
    let report = snapshot(&asked).await.unwrap();
    assert_eq!(report.tasks, 20);
    let catalog = TaskCatalog::load(&pack.join(PACK_TASKS), None).unwrap();
    for task in &catalog.tasks.tasks {
        let archive = task.archive.as_deref().unwrap_or_default();
        assert!(archive.ends_with(".wacz"), "{}: {archive}", task.id);
        assert!(pack.join(archive).is_file());
    }
    let leftovers: Vec<_> = std::fs::read_dir(pack.join("archives"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".wacz"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let solutions = browserenv_collect::solutions::load(&pack.join(PACK_SOLUTIONS)).unwrap();
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        tasks: Some(std::sync::Arc::new(catalog)),
        ..ServerConfig::default()
    })
    .await;
    let mut client = harness.client().await;
    run_solutions(&mut client, &solutions).await;
    client.close().await.unwrap();
    harness.stop().await;
    std::fs::remove_dir_all(&pack).unwrap();
}
