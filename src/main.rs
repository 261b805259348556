//! The `ghola` binary: parses arguments and prints; the library does the work.

use clap::Parser;

fn main() -> std::process::ExitCode {
    // SAFETY: first statement of main; no other thread exists yet.
    unsafe { ghola::embed::prefer_batch_parallelism() };
    let cli = ghola_cli::Cli::parse();
    ghola_cli::init_logging(cli.verbose);
    match ghola_cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ghola: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[path = "cli/mod.rs"]
mod ghola_cli;
