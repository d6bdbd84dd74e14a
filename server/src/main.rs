use clap::Parser;

fn main() -> std::process::ExitCode {
    // Before the runtime starts any thread: as a container's pid 1 this forks a reaper.
    browserenv_server::operations::init::reap_if_pid_1();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,chromiumoxide=off,rmcp=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = browserenv_server::cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("cannot start the async runtime");
    match runtime.block_on(browserenv_server::cli::run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("browserenv-server: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
