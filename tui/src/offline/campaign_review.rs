//! `browserenv-tui review`: a campaign's demonstrations reviewed one after another, each fetched
//! from the server (`crate::net::campaign`), shown in the viewer's review mode, and its verdict
//! sent back.

use crate::output::printable;

/// `review --token TOKEN`: fetch the next demonstration for the token's person into a folder of
/// its own, show it in the review mode, send the verdict back; until none is left or the
/// reviewer leaves one undecided.
pub async fn run(
    server: &str,
    token: String,
    graphics: crate::graphics::GraphicsChoice,
) -> anyhow::Result<()> {
    let sessions = crate::net::sessions::Sessions::new(server, Some(token))?;
    let mut reviewed = 0;
    loop {
        let dir = std::env::temp_dir().join(format!(
            "browserenv-review-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        let fetched = crate::net::campaign::fetch_review(&sessions, &dir).await;
        let fetched = match fetched {
            Ok(Some(fetched)) => fetched,
            Ok(None) => {
                let _ = std::fs::remove_dir_all(&dir);
                println!("nothing left for you to review ({reviewed} reviewed now)");
                return Ok(());
            }
            Err(err) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(err);
            }
        };
        println!(
            "reviewing {}'s demonstration of {}: {}",
            printable(&fetched.person),
            printable(&fetched.task),
            printable(&fetched.instruction)
        );
        for problem in &fetched.problems {
            eprintln!("warning: {}", printable(problem));
        }
        let shown = {
            let (dir, name) = (dir.clone(), fetched.reviewer.clone());
            tokio::task::spawn_blocking(move || {
                crate::offline::viewer::run_viewer(&dir, graphics, Some(name))
            })
            .await?
        };
        let sent = match shown {
            Ok(()) => crate::net::campaign::submit_review(&sessions, &dir, &fetched).await,
            Err(err) => Err(err),
        };
        let _ = std::fs::remove_dir_all(&dir);
        match sent? {
            Some(accepted) => {
                reviewed += 1;
                println!(
                    "{} {}",
                    if accepted {
                        "accepted"
                    } else {
                        "rejected (its task goes back to the queue):"
                    },
                    printable(&fetched.episode_id)
                );
            }
            None => {
                println!(
                    "no verdict on {} (G good accepts, B bad rejects): `review` again takes it up \
                     (others get it after the campaign's lease_idle_seconds); {reviewed} reviewed now",
                    printable(&fetched.episode_id)
                );
                return Ok(());
            }
        }
    }
}
