use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,chromiumoxide=off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = browserenv_server::cli::Cli::parse();
    match browserenv_server::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("browserenv-server: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
