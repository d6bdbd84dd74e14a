use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = browserenv_tui::cli::Cli::parse();
    if let Some(path) = &cli.flags.log {
        match std::fs::File::create(path) {
            Ok(file) => tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info,chromiumoxide=off".into()),
                )
                .with_writer(std::sync::Mutex::new(file))
                .with_ansi(false)
                .init(),
            Err(err) => {
                say(&format!(
                    "browserenv-tui: cannot write the log {}: {err}",
                    path.display()
                ));
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let code = match browserenv_tui::cli::run(cli).await {
        Ok(()) => 0,
        Err(err) => {
            say(&format!("browserenv-tui: {err:#}"));
            1
        }
    };
    // Everything that must reach the disk has (the recorder is joined); exiting here does not wait
    // for the runtime's blocking threads (a browser launch still under way), so every way out
    // ends the process at once.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// To stderr if it is still there (`eprintln!` panics on a terminal that went away). Errors quote
/// recordings, task files, servers and pages: only what is safe on a terminal is written, line by
/// line (some errors list one problem a line).
fn say(message: &str) {
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    for line in message.lines() {
        let _ = writeln!(stderr, "{}", browserenv_tui::output::printable(line));
    }
}
