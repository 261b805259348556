//! The plugin with the real Claude Code CLI: `claude plugin validate --strict`, install from this repository as a
//! marketplace into a scratch HOME, and `claude mcp list`, which starts the plugin's server and checks it answers.
//! The CLI comes from `.ci/run` (npm) or `$GHOLA_CLAUDE_BIN`; the test fails without it when `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn claude_bin() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        std::env::var_os("GHOLA_CLAUDE_BIN").map(PathBuf::from),
        Some(root.join(".ci/npm/node_modules/.bin/claude")),
    ];
    let found = candidates.into_iter().flatten().find(|p| p.is_file());
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but the Claude Code CLI is missing"
        );
    }
    found
}

fn claude(bin: &Path, home: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(bin)
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("GHOLA_HOME", home.join("ghola-index"))
        .current_dir(home)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn claude_code_installs_the_plugin_and_connects_to_its_server() {
    let Some(bin) = claude_bin() else { return };
    // The launcher runs target/release/ghola; make sure it is this build.
    let built = Path::new(env!("CARGO_BIN_EXE_ghola"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let expected = root.join("target/release/ghola");
    if built != expected {
        eprintln!(
            "binary at {} (not target/release): skipping the connection check",
            built.display()
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let repo = root.to_str().unwrap();
    let (ok, out) = claude(&bin, home.path(), &["plugin", "validate", "--strict", repo]);
    assert!(ok, "{out}");
    let (ok, out) = claude(&bin, home.path(), &["plugin", "marketplace", "add", repo]);
    assert!(ok, "{out}");
    let (ok, out) = claude(&bin, home.path(), &["plugin", "install", "ghola@ghola"]);
    assert!(ok, "{out}");
    let (_, out) = claude(&bin, home.path(), &["mcp", "list"]);
    let line = out
        .lines()
        .find(|l| l.contains("ghola"))
        .unwrap_or_else(|| panic!("ghola not listed:\n{out}"));
    assert!(line.contains("Connected"), "{out}");
}
