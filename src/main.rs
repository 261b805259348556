//! The `ghola` binary: parses arguments and prints; the library does the work.

use clap::Parser;

/// Makes candle's matrix products single-threaded, so that parallelism comes from running one batch per core
/// (`ghola::embed::BatchPolicy::parallel_batches`): measured by `ghola bench embed`, splitting each small product across
/// cores loses ~10% to waking and parking threads. candle reads `RAYON_NUM_THREADS` for every product, so this
/// builds rayon's global pool with one thread per core first (other parallel work keeps every core), then sets
/// that variable to 1, unless the user set it.
///
/// # Safety
/// Changes the process environment: call it at the start of `main`, before any other thread exists.
unsafe fn prefer_batch_parallelism() {
    if std::env::var_os("RAYON_NUM_THREADS").is_some() {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(cores)
        .build_global();
    // SAFETY: the caller guarantees no other thread is running (rayon's workers do not read the environment).
    unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };
}

fn main() -> std::process::ExitCode {
    // SAFETY: first statement of main; no other thread exists yet.
    unsafe { prefer_batch_parallelism() };
    let cli =
        ghola_cli::Cli::parse_from(ghola_cli::remote_claude_dir_spelling(std::env::args_os()));
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
