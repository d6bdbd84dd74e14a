use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = browserenv_tui::cli::Cli::parse();
    if let Some(path) = &cli.log {
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
    match browserenv_tui::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            say(&format!("browserenv-tui: {err:#}"));
            std::process::ExitCode::FAILURE
        }
    }
}

/// To stderr if it is still there (`eprintln!` panics on a terminal that went away).
fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
}
