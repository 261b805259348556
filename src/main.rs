//! The `ghola` binary: parses arguments and prints; the library does the work.

use clap::Parser;

fn main() -> std::process::ExitCode {
    // SAFETY: first statement of main; no other thread exists yet.
    unsafe { ghola::embed::prefer_batch_parallelism() };
    let cli = ghola_cli::Cli::parse();
    ghola_cli::init_logging(cli.verbose);
    let code = match ghola_cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ghola: {e:#}");
            std::process::ExitCode::FAILURE
        }
    };
    // For `ghola bench search`, which measures the memory of search processes it starts (a child's rusage
    // counts the parent's pages from before exec, so the child says its own).
    if std::env::var_os("GHOLA_REPORT_PEAK_RSS").is_some()
        && let Some(mib) = ghola_cli::peak_rss_mib()
    {
        eprintln!("ghola-peak-rss-mib: {mib:.0}");
    }
    code
}

#[path = "cli/mod.rs"]
mod ghola_cli;
