//! The plugin with the real Claude Code CLI: `claude plugin validate --strict`, install from this repository as a
//! marketplace into a scratch HOME, and `claude mcp list`, which starts the plugin's server and checks it answers;
//! then a whole `claude -p` turn against a loopback stand-in of the model whose scripted reply calls
//! `search_project_history`, asserting on the tool result Claude Code sends back.
//! The CLI comes from `.ci/run` (npm) or `$GHOLA_CLAUDE_BIN`; the test fails without it when `CI=true`.
// The plugin's POSIX launcher and the Claude Code CLI from npm: Unix only (Windows: .ci/windows/run).
#![cfg(unix)]

use crate::common;

use common::claude_bin;
use common::files::{FileServer, host_target, hub_files, release_artifact};
use common::mcp_client::Client;
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

/// This checkout's plugin files, exactly what the plugin ships (no `target/`, no model), staged as a small
/// marketplace directory.
fn stage_plugin_files(into: &Path) -> PathBuf {
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
    for item in [
        ".claude-plugin",
        ".mcp.json",
        "bin",
        "commands",
        "hooks",
        "skills",
    ] {
        copy(&root.join(item), &dir.join(item));
    }
    dir
}

/// This checkout's plugin files staged as a small marketplace directory, with the built binary and the model
/// linked in. Claude Code copies a directory marketplace whole (all but `.git`) into its plugin cache, and this
/// checkout's `target/` is gigabytes; the staged copy holds exactly the files the plugin ships.
fn stage_marketplace(into: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = stage_plugin_files(into);
    std::fs::create_dir_all(dir.join("target/release")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_ghola"),
        dir.join("target/release/ghola"),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("models"), dir.join("models")).unwrap();
    dir
}

/// Adds this checkout's staged plugin as a marketplace in `home` and installs it.
fn install_plugin(bin: &Path, home: &Path) {
    let market = stage_marketplace(home);
    let market = market.to_str().unwrap();
    for args in [
        &["plugin", "marketplace", "add", market][..],
        &["plugin", "install", "ghola@ghola"][..],
    ] {
        let (ok, out) = claude(bin, home, args);
        assert!(ok, "{out}");
    }
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
const DETAIL: &str = "mcp__plugin_ghola_ghola__get_session_detail";

/// A past session and the calling session, both in `project`, both mentioning the codeword.
fn history(claude_dir: &Path, project: &str) {
    let dir = claude_dir
        .join("projects")
        .join(project.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    std::fs::create_dir_all(&dir).unwrap();
    let session = |id: &str, t: &str, q: &str, a: &str| -> String {
        [
            json!({"type":"user","uuid":format!("1{t}{}", &id[2..]),"parentUuid":null,"sessionId":id,"cwd":project,"timestamp":format!("2025-06-0{t}T10:00:00Z"),"isSidechain":false,"userType":"external","version":"2.1.330","message":{"role":"user","content":q}}),
            json!({"type":"assistant","uuid":format!("2{t}{}", &id[2..]),"parentUuid":format!("1{t}{}", &id[2..]),"sessionId":id,"cwd":project,"timestamp":format!("2025-06-0{t}T10:00:05Z"),"isSidechain":false,"userType":"external","version":"2.1.330","message":{"id":format!("msg_{t}"),"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":a}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}),
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

/// The top hit's session and hit ids in a search result's text: its first header,
/// `[1] … · session <id> window <w> · … · hit <id>`.
fn top_hit(text: &str) -> Option<(String, String)> {
    let header = text.lines().find(|l| l.starts_with("[1] "))?;
    let after = |key: &str| {
        header
            .split(" · ")
            .find_map(|part| part.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
    };
    Some((after("session ")?, after("hit ")?))
}

/// What a scripted model reads off a request: the conversation so far, its last message, the tools offered.
struct Turn {
    messages: Vec<Value>,
    last: String,
    tools: Vec<String>,
}

impl Turn {
    fn of(req: &Value) -> Turn {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        let last = messages
            .last()
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        let tools = req["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        Turn {
            messages,
            last,
            tools,
        }
    }

    fn offers(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }

    /// Whether the model already called `tool` in this conversation.
    fn called(&self, tool: &str) -> bool {
        let name = format!("\"name\":\"{tool}\"");
        self.messages.iter().any(|m| m.to_string().contains(&name))
    }
}

/// Asks ToolSearch for a deferred tool by name.
fn search_for_tool(tool: &str) -> Reply {
    Reply::tool_use(
        "ToolSearch",
        json!({"query": format!("select:{tool}"), "max_results": 1}),
    )
}

/// The stand-in's script, a model that recalls in two steps: find the tools through ToolSearch when they are
/// deferred, search, read more around the top hit by its ids (one expansion, no second search), then finish.
fn script(req: &Value) -> Reply {
    let turn = Turn::of(req);
    if !turn.called(TOOL) {
        if turn.offers(TOOL) || turn.last.contains("tool_reference") {
            return Reply::tool_use(
                TOOL,
                json!({"query": "KESTREL-ROTATE signing keys", "context_before_after": 0}),
            );
        }
        if turn.offers("ToolSearch") {
            return search_for_tool(TOOL);
        }
        return Reply::text("ok");
    }
    if turn.called(DETAIL) {
        return Reply::text("Done.");
    }
    let Some((session, hit)) = tool_results(req).iter().find_map(|(_, t)| top_hit(t)) else {
        return Reply::text("Nothing found.");
    };
    if !turn.offers(DETAIL) && turn.offers("ToolSearch") && !turn.last.contains("tool_reference") {
        return search_for_tool(DETAIL);
    }
    Reply::tool_use(
        DETAIL,
        json!({"session_id": session, "around": hit, "before": 2, "after": 2}),
    )
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
    install_plugin(&bin, home.path());
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
    let out = claude_p(
        &bin,
        home.path(),
        &project,
        &standin.url,
        &[
            "What did we decide about rotating the signing keys?",
            "--resume",
            CALLING,
            "--allowedTools",
            &format!("{TOOL},{DETAIL}"),
        ],
    );
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
    let text = past_answer_reached_the_model(&reqs, &said);
    assert!(
        !text.contains(&format!("session {}", &CALLING[..8])),
        "the calling session is excluded: {text}"
    );
}

const BROWSER: &str = "mcp__plugin_ghola_ghola__open_history_browser";

/// The stand-in's script for `/ghola:ui`: when the command's text reaches it, it finds and calls
/// `open_history_browser` (open=false: no browser here), then fetches the address the tool returned — while
/// Claude Code and its server still run — and says the HTTP status it got.
fn browser_script(req: &Value) -> Reply {
    let turn = Turn::of(req);
    if !turn.called(BROWSER) {
        if !turn
            .messages
            .iter()
            .any(|m| m.to_string().contains("open_history_browser"))
        {
            return Reply::text("the command's text did not arrive");
        }
        if turn.offers(BROWSER) || turn.last.contains("tool_reference") {
            return Reply::tool_use(BROWSER, json!({"open": false}));
        }
        return search_for_tool(BROWSER);
    }
    let Some(url) = tool_results(req).iter().find_map(|(_, t)| {
        t.split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .map(str::to_owned)
    }) else {
        return Reply::text("no address came back");
    };
    // The one-time link logs in (by its way-in page, on the server's own host name); the page it leads to must
    // then answer.
    let status = common::browser::log_in(&url)
        .and_then(|l| common::browser::http_get(l.addr, &l.host, &l.to, &l.cookie))
        .and_then(|page| page.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "none".into());
    Reply::text(&format!("The history browser is at {url} (HTTP {status})."))
}

#[test]
fn the_ui_command_opens_the_history_browser_through_claude_code() {
    let Some(bin) = claude_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    history(&home.path().join(".claude"), project.to_str().unwrap());
    install_plugin(&bin, home.path());
    let standin = StandIn::start(4, Arc::new(browser_script));
    let out = claude_p(
        &bin,
        home.path(),
        &project,
        &standin.url,
        &["/ghola:ui", "--allowedTools", BROWSER],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("(HTTP 200)"),
        "the page did not answer through the command: {said}\nmodel requests: {}",
        standin.requests().len()
    );
}

/// The search tool's answer as Claude Code sent it back to the model stand-in (Claude Code may append a system
/// reminder after the tool's own text), asserted to have the past session's answer as its top hit; and the
/// expansion around that hit, asserted to hold the question before it. Returns the search's text.
fn past_answer_reached_the_model(requests: &[Value], said: &str) -> String {
    let results: Vec<(String, String)> = requests.iter().flat_map(tool_results).collect();
    let search = results
        .iter()
        .map(|(_, text)| text)
        .find(|t| top_hit(t).is_some())
        .unwrap_or_else(|| {
            panic!(
                "no search result reached the model; {} requests; tool results {results:#?}; claude said: {said}",
                requests.len()
            )
        });
    let (session, hit) = top_hit(search).unwrap();
    assert_eq!(session, &PAST[..8], "{search}");
    assert!(search.contains("every 90 days"), "{search}");
    // One expansion: the messages around the hit, by its ids, the hit marked.
    let detail = results
        .iter()
        .map(|(_, text)| text)
        .find(|t| t.starts_with("session ") && t.contains(&format!("> {hit}")))
        .unwrap_or_else(|| {
            panic!("no expansion reached the model; tool results {results:#?}; claude said: {said}")
        });
    assert!(
        detail.contains("How do we rotate the signing keys?"),
        "{detail}"
    );
    search.clone()
}

/// A PATH with the system's tools (node for Claude Code; sh, curl, tar, sha256sum for the launcher) and neither
/// cargo nor ghola: a machine without Rust.
const NO_RUST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The plugin's launcher (`bin/ghola-mcp` of `plugin`) as a user without Rust runs it, with releases at
/// `release`, the model hub unreachable and `data` as the plugin's data folder.
fn launcher(plugin: &Path, home: &Path, data: &Path, release: &str) -> Command {
    let mut cmd = Command::new(plugin.join("bin/ghola-mcp"));
    user_env(&mut cmd, home, release, "http://127.0.0.1:9");
    cmd.env("CLAUDE_PLUGIN_ROOT", plugin)
        .env("CLAUDE_PLUGIN_DATA", data);
    cmd
}

/// The environment of a user's machine for this test: scratch HOME, no Rust, the release and the Hub on loopback.
fn user_env(cmd: &mut Command, home: &Path, release: &str, hub: &str) {
    cmd.env("HOME", home)
        .env("PATH", NO_RUST_PATH)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("GHOLA_BIN")
        .env_remove("GHOLA_MODEL_DIR")
        .env_remove("HF_HUB_CACHE")
        .env_remove("XDG_CACHE_HOME")
        .env("HF_HOME", home.join("hf"))
        .env("HF_ENDPOINT", hub)
        .env("GHOLA_RELEASE_URL", release)
        .env("GHOLA_HOME", home.join("ghola-index"))
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("ANTHROPIC_API_KEY", "test-key")
        .stdin(std::process::Stdio::null());
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Serves this checkout's release artifact (optionally damaged) as a GitHub release for this version would.
fn release_server(scratch: &Path, damage: bool) -> FileServer {
    release_server_with_delay(scratch, damage, std::time::Duration::ZERO)
}

fn release_server_with_delay(
    scratch: &Path,
    damage: bool,
    delay: std::time::Duration,
) -> FileServer {
    let (mut archive, sha) = release_artifact(scratch);
    if damage {
        let at = archive.len() / 2;
        archive[at] ^= 0x20;
    }
    let name = format!("ghola-{}.tar.gz", host_target());
    let v = version();
    FileServer::start_with_delay(
        [
            (format!("/v{v}/{name}"), archive),
            (format!("/v{v}/{name}.sha256"), sha.into_bytes()),
        ]
        .into_iter()
        .collect(),
        delay,
    )
}

#[test]
fn plugin_and_cargo_agree_on_version_and_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let plugin: Value =
        serde_json::from_slice(&std::fs::read(root.join(".claude-plugin/plugin.json")).unwrap())
            .unwrap();
    assert_eq!(
        plugin["version"],
        version(),
        "the launcher downloads the release of plugin.json's version"
    );
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let repo = plugin["repository"].as_str().unwrap();
    assert!(
        cargo.contains(&format!("repository = \"{repo}\"")),
        "{repo} is not Cargo.toml's repository"
    );
}

/// CI does not run cargo-dist (see `release_artifact`): what it would build is checked here instead, against
/// what the launchers download — the targets, `.tar.gz` / `.zip` archives holding `ghola-<target>/ghola`, and a
/// sha256 file beside each.
#[test]
fn the_release_contract_is_what_cargo_dist_is_told_to_build() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    let config: toml_edit::DocumentMut = read("dist-workspace.toml").parse().unwrap();
    let dist = &config["dist"];
    let text = |key: &str| dist[key].as_str().unwrap_or_default().to_string();
    assert_eq!(
        text("unix-archive"),
        ".tar.gz",
        "bin/ghola-mcp downloads .tar.gz"
    );
    assert_eq!(
        text("windows-archive"),
        ".zip",
        "bin/ghola-mcp.cmd downloads .zip"
    );
    assert_eq!(text("checksum"), "sha256", "the launchers check a .sha256");
    assert_eq!(
        dist["auto-includes"].as_bool(),
        Some(false),
        "the archive holds the binary only"
    );
    let mut targets: Vec<String> = dist["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    targets.sort();
    let launcher = read("bin/ghola-mcp");
    let line = launcher
        .lines()
        .find(|l| l.trim_start().starts_with("x86_64-unknown-linux-gnu |"))
        .expect("bin/ghola-mcp lists the targets it downloads");
    let mut downloads: Vec<String> = line
        .trim()
        .trim_end_matches(";;")
        .trim_end()
        .trim_end_matches(')')
        .split('|')
        .map(|t| t.trim().to_string())
        .collect();
    downloads.sort();
    assert_eq!(
        targets, downloads,
        "dist-workspace.toml builds what bin/ghola-mcp downloads"
    );
    assert!(
        read("bin/ghola-mcp.cmd").contains("'ghola-x86_64-pc-windows-msvc.zip'")
            && targets.iter().any(|t| t == "x86_64-pc-windows-msvc"),
        "bin/ghola-mcp.cmd downloads the Windows target dist builds"
    );
    let cargo: toml_edit::DocumentMut = read("Cargo.toml").parse().unwrap();
    assert!(
        cargo["profile"]["dist"].is_table(),
        "cargo-dist builds the `dist` profile"
    );
    // The archive's binary is `ghola`: `release_artifact` packs `CARGO_BIN_EXE_ghola`, which exists only if so.
    let workflow = read(".github/workflows/release.yml");
    let pinned = format!(
        "cargo-dist/releases/download/v{}/",
        text("cargo-dist-version")
    );
    assert!(
        workflow.contains(&pinned),
        "the release workflow installs the cargo-dist dist-workspace.toml names ({pinned})"
    );
}

#[test]
fn first_start_without_rust_downloads_the_release_and_the_model_and_answers_the_first_question() {
    let Some(bin) = claude_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let check = Command::new("sh")
        .args([
            "-c",
            "command -v cargo || command -v rustc || command -v ghola",
        ])
        .env("PATH", NO_RUST_PATH)
        .output()
        .unwrap();
    assert!(
        !check.status.success(),
        "the test PATH has Rust or ghola: {}",
        String::from_utf8_lossy(&check.stdout)
    );
    let project = home.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    history(&home.join(".claude"), project.to_str().unwrap());
    let release = release_server(home, false);
    let hub = FileServer::start(hub_files(false));
    let release_url = format!("{}/v{}", release.url, version());
    let market = stage_plugin_files(home);
    assert!(!market.join("target").exists());
    let claude = |args: &[&str]| {
        let mut c = Command::new(&bin);
        c.args(args).current_dir(&project);
        user_env(&mut c, home, &release_url, &hub.url);
        let out = c.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    for args in [
        &["plugin", "marketplace", "add", market.to_str().unwrap()][..],
        &["plugin", "install", "ghola@ghola"][..],
    ] {
        let (ok, out) = claude(args);
        assert!(ok, "{out}");
    }

    // The first turn, right after start: the server downloads its binary, connects, and the search made in
    // that turn gets the past session's answer (nothing was indexed before).
    let standin = StandIn::start(4, Arc::new(script));
    let started = std::time::Instant::now();
    let mut c = Command::new(&bin);
    c.args([
        "-p",
        "What did we decide about rotating the signing keys?",
        "--resume",
        CALLING,
    ])
    .args([
        "--allowedTools",
        &format!("{TOOL},{DETAIL}"),
        "--output-format",
        "json",
    ])
    .env("ANTHROPIC_BASE_URL", &standin.url)
    .current_dir(&project);
    user_env(&mut c, home, &release_url, &hub.url);
    let out = c.output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("first turn took {:?}", started.elapsed());
    let archive = format!("/v{}/ghola-{}.tar.gz", version(), host_target());
    assert!(
        release.requested().contains(&archive),
        "{:?}; claude said {said}",
        release.requested()
    );
    past_answer_reached_the_model(&standin.requests(), &said);

    // The user keeps working: the server (started by the launcher as Claude Code starts it) downloads the
    // model and embeds the history meanwhile.
    let plugin_dir = find(&home.join(".claude/plugins"), &|p| {
        p.ends_with("bin/ghola-mcp")
    })
    .expect("the installed launcher");
    let cached = find(home, &|p| p.ends_with(format!("bin/{}/ghola", version())))
        .unwrap_or_else(|| panic!("no cached binary under {}", home.display()));
    // The data folder Claude Code gave the plugin: the one the binary was cached in.
    let data = cached.ancestors().nth(3).unwrap().to_path_buf();
    let launch = |release: &str, hub: &str| {
        let mut cmd = Command::new(&plugin_dir);
        user_env(&mut cmd, home, release, hub);
        cmd.env(
            "CLAUDE_PLUGIN_ROOT",
            plugin_dir.parent().unwrap().parent().unwrap(),
        )
        .env("CLAUDE_PLUGIN_DATA", &data)
        .env("CLAUDE_PROJECT_DIR", &project)
        .stderr(std::process::Stdio::null());
        Client::spawn(cmd)
    };
    let fully_embedded = |client: &mut Client| {
        let t = std::time::Instant::now();
        for id in 2.. {
            let (err, text) = client.call(
                id,
                "search_project_history",
                json!({"query": "how often are keys rotated?", "format": "json"}),
            );
            assert!(!err, "{text}");
            let r: Value = serde_json::from_str(&text).unwrap();
            if r.get("note").is_none() {
                return r;
            }
            assert!(t.elapsed().as_secs() < 90, "the model never loaded: {r:#}");
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        unreachable!()
    };
    fully_embedded(&mut launch(&release_url, &hub.url));

    // The network gone: the next start uses the cached binary and the cached weights.
    drop(release);
    drop(hub);
    let dead = "http://127.0.0.1:9";
    let mut c = Command::new(&bin);
    c.args(["mcp", "list"]).current_dir(&project);
    user_env(&mut c, home, dead, dead);
    let out = c.output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    let line = listed
        .lines()
        .find(|l| l.contains("ghola"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("Connected"), "{listed}");
    let r = fully_embedded(&mut launch(dead, dead));
    assert_eq!(
        r["results"][0]["matched_message"]["session_id"], PAST,
        "{r:#}"
    );
    assert!(
        r["results"][0]["scores"]["semantic"].as_f64().unwrap() > 0.2,
        "{r:#}"
    );
}

/// The first file under `dir` (depth-first) that `wanted` accepts.
fn find(dir: &Path, wanted: &dyn Fn(&Path) -> bool) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        let ft = e.file_type().ok()?;
        if ft.is_dir() {
            if let Some(f) = find(&p, wanted) {
                return Some(f);
            }
        } else if wanted(&p) {
            return Some(p);
        }
    }
    None
}

#[test]
fn the_launcher_refuses_a_tampered_release_and_installs_nothing() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let release = release_server(home, true);
    let plugin = stage_plugin_files(home);
    let data = home.join("plugin-data");
    let release_url = format!("{}/v{}", release.url, version());
    let out = launcher(&plugin, home, &data, &release_url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        out.stdout.is_empty(),
        "stdout belongs to MCP: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains("refusing") && err.contains("sha256") && err.contains("nothing was installed"),
        "{err}"
    );
    let installed = find(&data, &|p| p.file_name().is_some_and(|n| n == "ghola"));
    assert!(installed.is_none(), "{installed:?}");
}

#[test]
fn the_launcher_says_what_to_do_when_offline() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let plugin = stage_plugin_files(home);
    let t = std::time::Instant::now();
    let out = launcher(&plugin, home, &home.join("data"), "http://127.0.0.1:9/v0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        t.elapsed().as_secs() < 30,
        "the launcher must fail inside Claude Code's connect window"
    );
    assert!(
        err.contains("could not download")
            && err.contains("GHOLA_BIN")
            && err.contains("cargo install"),
        "{err}"
    );
}

/// A stand-in `ghola` executable: `--version` prints `version`, anything else prints `<label> <args>`.
fn fake_ghola(dir: &Path, label: &str, version: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("ghola");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"ghola {version}\"; else echo \"{label} $*\"; fi\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn the_launcher_runs_ghola_bin_then_the_cache_then_a_ghola_on_path_of_its_version() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let plugin = stage_plugin_files(home);
    let data = home.join("data");
    let run = |path: &str, extra: &[(&str, &Path)]| {
        let mut cmd = launcher(&plugin, home, &data, "http://127.0.0.1:9/v0");
        cmd.env("PATH", path);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let same = home.join("same");
    fake_ghola(&same, "path-ghola", version());
    let other = home.join("other");
    fake_ghola(&other, "old-ghola", "0.0.1");
    let path_with = |dir: &Path| format!("{}:{NO_RUST_PATH}", dir.display());
    // A ghola on PATH of another version is not used: the launcher goes on to download (offline here).
    let (out, err) = run(&path_with(&other), &[]);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("not using") && err.contains("could not download"),
        "{err}"
    );
    // Of the same version, it is.
    assert_eq!(run(&path_with(&same), &[]).0, "path-ghola serve");
    // The cached binary comes before it.
    fake_ghola(
        &data.join(format!("bin/{}", version())),
        "cached-ghola",
        version(),
    );
    assert_eq!(run(&path_with(&same), &[]).0, "cached-ghola serve");
    // $GHOLA_BIN before everything.
    let explicit = fake_ghola(&home.join("explicit"), "explicit-ghola", "9.9.9");
    assert_eq!(
        run(&path_with(&same), &[("GHOLA_BIN", &explicit)]).0,
        "explicit-ghola serve"
    );
}

#[test]
fn two_launchers_starting_at_once_both_end_with_a_whole_binary() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    // Each response held back, so that both launchers are downloading at the same time.
    let release = release_server_with_delay(home, false, std::time::Duration::from_millis(700));
    let plugin = stage_plugin_files(home);
    let data = home.join("data");
    let url = format!("{}/v{}", release.url, version());
    let children: Vec<_> = (0..2)
        .map(|_| {
            let mut cmd = launcher(&plugin, home, &data, &url);
            cmd.env("HF_HUB_OFFLINE", "1")
                .env("CLAUDE_CONFIG_DIR", home.join("claude"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null());
            cmd.spawn().unwrap()
        })
        .collect();
    // Both started before either finished its download; both answer the handshake (asserted by attach).
    let clients: Vec<Client> = children.into_iter().map(Client::attach).collect();
    assert_eq!(
        release
            .requested()
            .iter()
            .filter(|p| p.ends_with(".tar.gz"))
            .count(),
        2
    );
    drop(clients);
    let cached = data.join(format!("bin/{}/ghola", version()));
    let out = Command::new(&cached).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("ghola {}", version())
    );
    let leftovers: Vec<_> = std::fs::read_dir(cached.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "ghola")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The stand-in for the notes test: the worker's extraction call gets the findings, Claude Code's own calls a
/// short reply.
fn notes_script(req: &Value) -> Reply {
    if req["tool_choice"]["name"] == "record_notes" {
        return Reply::tool_use(
            "record_notes",
            json!({
                "architecture": [], "failures": [], "supersedes": [], "no_updates": false,
                "decisions": ["Chose PELICAN-7 over RabbitMQ as the queue broker because it keeps per-key order"],
                "plan": ["Move the billing consumer onto PELICAN-7"],
            }),
        );
    }
    Reply::text("Noted.")
}

/// `claude -p` in `project` with the plugin installed in `home`, against the stand-in; returns its JSON result.
/// `claude -p ARGS --output-format json` in `project` with the plugin installed in `home`, against the stand-in at
/// `url` (ghola's index and notes in `home`).
fn claude_p(
    bin: &Path,
    home: &Path,
    project: &Path,
    url: &str,
    args: &[&str],
) -> std::process::Output {
    Command::new(bin)
        .args(["-p"])
        .args(args)
        .args(["--output-format", "json"])
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("GHOLA_HOOKS_OFF")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", url)
        .env("GHOLA_HOME", home.join("ghola-index"))
        .env("GHOLA_NOTES_DIR", home.join("ghola-notes"))
        .current_dir(project)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// [`claude_p`], its JSON result.
fn claude_turn(bin: &Path, home: &Path, project: &Path, url: &str, args: &[&str]) -> Value {
    let out = claude_p(bin, home, project, url, args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no JSON result: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

fn wait_until(what: &str, ok: impl FnMut() -> bool) {
    common::wait_for(what, std::time::Duration::from_secs(180), ok)
}

#[test]
fn a_session_ends_its_notes_are_extracted_and_the_next_session_starts_with_them() {
    let Some(bin) = claude_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("shop");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    install_plugin(&bin, home.path());
    let notes_dir = home.path().join("ghola-notes");
    let ghola = |args: &[&str]| {
        common::run_ok(
            Command::new(env!("CARGO_BIN_EXE_ghola"))
                .args(args)
                .env("HOME", home.path())
                .env_remove("CLAUDE_CONFIG_DIR")
                .env("GHOLA_HOME", home.path().join("ghola-index"))
                .env("GHOLA_NOTES_DIR", &notes_dir)
                .current_dir(&project),
        )
    };
    let standin = StandIn::start(4, Arc::new(notes_script));
    let extraction_requests = || -> Vec<Value> {
        standin
            .requests()
            .into_iter()
            .filter(|r| r["tool_choice"]["name"] == "record_notes")
            .collect()
    };
    let status =
        || serde_json::from_slice::<Value>(&ghola(&["notes", "status", "--json"])).unwrap();

    // First session, extraction off (the default): its end sends nothing.
    let first = claude_turn(
        &bin,
        home.path(),
        &project,
        &standin.url,
        &["We settled on PELICAN-7 for the queue; remember that."],
    );
    let session = first["session_id"].as_str().unwrap().to_string();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        extraction_requests().is_empty(),
        "nothing is sent before `notes on`"
    );
    assert_eq!(status()["queued_sessions"], 0);

    // Extraction on, then the first session is compacted: the PreCompact hook queues it and the detached worker
    // extracts the window about to be compacted.
    ghola(&["notes", "on"]);
    claude_turn(
        &bin,
        home.path(),
        &project,
        &standin.url,
        &["/compact", "--resume", &session],
    );
    let decisions = || {
        String::from_utf8_lossy(&ghola(&["notes", "show", "--category", "decisions"])).into_owned()
    };
    wait_until("the first session's notes", || {
        decisions().contains("PELICAN-7")
    });
    let meta_path = std::fs::read_dir(notes_dir.join("projects"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("meta.json"))
        .find(|p| p.exists())
        .unwrap();
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    assert_eq!(
        meta["windows"][format!("{session}:0")]["trigger"],
        "pre-compact",
        "{meta:#}"
    );
    let sent = extraction_requests()[0]["messages"].to_string();
    assert!(sent.contains("We settled on PELICAN-7"), "{sent}");

    // Second session: its first model request carries the notes as SessionStart context; when it ends, the
    // SessionEnd hook has it extracted too.
    wait_until("the worker to go idle", || {
        let s = status();
        s["worker_running"] == false && s["queued_sessions"] == 0
    });
    let before = standin.requests().len();
    let second = claude_turn(
        &bin,
        home.path(),
        &project,
        &standin.url,
        &["What queue do we use?"],
    );
    let second = second["session_id"].as_str().unwrap().to_string();
    let reqs = standin.requests();
    let main = reqs[before..]
        .iter()
        .find(|r| r["tool_choice"]["name"] != "record_notes" && r["tools"].is_array())
        .unwrap_or_else(|| panic!("no request from the second session"));
    let text = main["messages"].to_string();
    assert!(
        text.contains("Chose PELICAN-7 over RabbitMQ"),
        "the notes reach the model: {}",
        &text[..text.len().min(3000)]
    );
    assert!(text.contains("Move the billing consumer onto PELICAN-7"));
    wait_until("the second session's extraction", || {
        std::fs::read_to_string(&meta_path).is_ok_and(|m| {
            let m: Value = serde_json::from_str(&m).unwrap_or_default();
            m["windows"][format!("{second}:0")]["trigger"] == "session-end"
                && m["windows"][format!("{second}:0")]["extracted_ms"].is_number()
        })
    });
    assert!(
        extraction_requests()
            .iter()
            .any(|r| r["messages"].to_string().contains("What queue do we use?"))
    );
    assert!(
        !std::fs::read_dir(home.path().join(".claude/projects"))
            .unwrap()
            .flatten()
            .any(|d| d.file_name().to_string_lossy().contains("ghola")),
        "extraction wrote no transcript into ~/.claude/projects"
    );
}
