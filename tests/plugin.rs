//! The plugin with the real Claude Code CLI: `claude plugin validate --strict`, install from this repository as a
//! marketplace into a scratch HOME, and `claude mcp list`, which starts the plugin's server and checks it answers;
//! then a whole `claude -p` turn against a loopback stand-in of the model whose scripted reply calls
//! `search_project_history`, asserting on the tool result Claude Code sends back.
//! The CLI comes from `.ci/run` (npm) or `$GHOLA_CLAUDE_BIN`; the test fails without it when `CI=true`.

mod common;

use common::claude_bin;
use common::standin::{Reply, StandIn, tool_results};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

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

/// This checkout's plugin files staged as a small marketplace directory, with the built binary and the model
/// linked in. Claude Code copies a directory marketplace whole (all but `.git`) into its plugin cache, and this
/// checkout's `target/` is gigabytes; the staged copy holds exactly the files the plugin ships.
fn stage_marketplace(into: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = into.join("ghola-marketplace");
    fn copy(from: &Path, to: &Path) {
        if from.is_dir() {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap().flatten() {
                copy(&e.path(), &to.join(e.file_name()));
            }
        } else {
            std::fs::copy(from, to).unwrap();
        }
    }
    for item in [".claude-plugin", ".mcp.json", "bin", "skills"] {
        copy(&root.join(item), &dir.join(item));
    }
    std::fs::create_dir_all(dir.join("target/release")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_ghola"),
        dir.join("target/release/ghola"),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("models"), dir.join("models")).unwrap();
    dir
}

#[test]
fn claude_code_installs_the_plugin_and_connects_to_its_server() {
    let Some(bin) = claude_bin() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = tempfile::tempdir().unwrap();
    let repo = root.to_str().unwrap();
    let t = std::time::Instant::now();
    let (ok, out) = claude(&bin, home.path(), &["plugin", "validate", "--strict", repo]);
    eprintln!("validate {:?}", t.elapsed());
    assert!(ok, "{out}");
    let market = stage_marketplace(home.path());
    let market = market.to_str().unwrap();
    let (ok, out) = claude(&bin, home.path(), &["plugin", "marketplace", "add", market]);
    assert!(ok, "{out}");
    let (ok, out) = claude(&bin, home.path(), &["plugin", "install", "ghola@ghola"]);
    assert!(ok, "{out}");
    eprintln!("install {:?}", t.elapsed());
    let (_, out) = claude(&bin, home.path(), &["mcp", "list"]);
    eprintln!("mcp list {:?}", t.elapsed());
    let line = out
        .lines()
        .find(|l| l.contains("ghola"))
        .unwrap_or_else(|| panic!("ghola not listed:\n{out}"));
    assert!(line.contains("Connected"), "{out}");
}

const PAST: &str = "aaaaaaaa-1111-4111-8111-111111111111";
const CALLING: &str = "cccccccc-3333-4333-8333-333333333333";
const TOOL: &str = "mcp__plugin_ghola_ghola__search_project_history";

/// A past session and the calling session, both in `project`, both mentioning the codeword.
fn history(claude_dir: &Path, project: &str) {
    let dir = claude_dir
        .join("projects")
        .join(project.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    std::fs::create_dir_all(&dir).unwrap();
    let session = |id: &str, t: &str, q: &str, a: &str| -> String {
        [
            json!({"type":"user","uuid":format!("{id}-u"),"parentUuid":null,"sessionId":id,"cwd":project,"timestamp":format!("2025-06-0{t}T10:00:00Z"),"isSidechain":false,"userType":"external","version":"2.1.330","message":{"role":"user","content":q}}),
            json!({"type":"assistant","uuid":format!("{id}-a"),"parentUuid":format!("{id}-u"),"sessionId":id,"cwd":project,"timestamp":format!("2025-06-0{t}T10:00:05Z"),"isSidechain":false,"userType":"external","version":"2.1.330","message":{"id":format!("msg_{t}"),"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":a}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}),
        ]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect()
    };
    std::fs::write(
        dir.join(format!("{PAST}.jsonl")),
        session(
            PAST,
            "1",
            "How do we rotate the signing keys?",
            "Rotate the signing keys with the KESTREL-ROTATE job every 90 days.",
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{CALLING}.jsonl")),
        session(
            CALLING,
            "2",
            "Remind me about KESTREL-ROTATE",
            "KESTREL-ROTATE in the calling session itself.",
        ),
    )
    .unwrap();
}

/// The stand-in's script: find the tool through ToolSearch when it is deferred, call it, then finish.
fn script(req: &Value) -> Reply {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let last = messages
        .last()
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    let tools: Vec<&str> = req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let called_search = messages
        .iter()
        .any(|m| m.to_string().contains(&format!("\"name\":\"{TOOL}\"")));
    if called_search {
        return Reply::text("Done.");
    }
    if tools.contains(&TOOL) || last.contains("tool_reference") {
        return Reply::tool_use(
            TOOL,
            json!({"query": "KESTREL-ROTATE signing keys", "context_before_after": 0}),
        );
    }
    if tools.contains(&"ToolSearch") {
        return Reply::tool_use(
            "ToolSearch",
            json!({"query": format!("select:{TOOL}"), "max_results": 1}),
        );
    }
    Reply::text("ok")
}

#[test]
fn claude_code_calls_the_search_tool_and_gets_the_past_session_back() {
    let Some(bin) = claude_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let project_str = project.to_str().unwrap();
    history(&home.path().join(".claude"), project_str);
    let market = stage_marketplace(home.path());
    let market = market.to_str().unwrap();
    for args in [
        &["plugin", "marketplace", "add", market][..],
        &["plugin", "install", "ghola@ghola"][..],
    ] {
        let (ok, out) = claude(&bin, home.path(), args);
        assert!(ok, "{out}");
    }
    // Index first, as the user's machine would have: the server then answers from it at once.
    common::run_ok(
        Command::new(env!("CARGO_BIN_EXE_ghola"))
            .args([
                "--claude-dir",
                home.path().join(".claude").to_str().unwrap(),
            ])
            .args([
                "--index-dir",
                home.path().join("ghola-index").to_str().unwrap(),
                "index",
            ]),
    );

    let standin = StandIn::start(4, Arc::new(script));
    let started = std::time::Instant::now();
    let out = Command::new(&bin)
        .args([
            "-p",
            "What did we decide about rotating the signing keys?",
            "--resume",
            CALLING,
        ])
        .args(["--allowedTools", TOOL, "--output-format", "json"])
        .env("HOME", home.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &standin.url)
        .env("GHOLA_HOME", home.path().join("ghola-index"))
        .current_dir(&project)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = standin.requests();
    eprintln!(
        "claude -p took {:?}, {} model requests",
        started.elapsed(),
        reqs.len()
    );
    // Claude Code sends the tool's result back to the model: assert on that, not on the exit code.
    let results: Vec<(String, String)> = reqs.iter().flat_map(tool_results).collect();
    let search = results
        .iter()
        .map(|(_, text)| text)
        .find(|t| t.contains("matched_message") || t.contains("KESTREL"))
        .unwrap_or_else(|| panic!("no search result reached the model; {} requests; tool results {results:#?}; claude said: {said}", reqs.len()));
    // Claude Code may append a system reminder after the tool's own text: read the first JSON value.
    let resp: Value = serde_json::Deserializer::from_str(search)
        .into_iter::<Value>()
        .next()
        .unwrap_or_else(|| panic!("empty result"))
        .unwrap_or_else(|e| panic!("{e}: {search}"));
    let hits = resp["results"].as_array().unwrap();
    assert!(!hits.is_empty(), "{resp:#}");
    assert_eq!(hits[0]["matched_message"]["session_id"], PAST, "{resp:#}");
    assert!(
        hits[0]["matched_message"]["content"]
            .as_str()
            .unwrap()
            .contains("every 90 days")
    );
    assert!(
        hits.iter()
            .all(|h| h["matched_message"]["session_id"] != CALLING),
        "the calling session is excluded: {resp:#}"
    );
}
