//! The sessions behind a file (issue #48): `ghola files PATH[:LINE]`, the MCP tool `file_history` and the
//! browser's file page, over real transcripts of `../shared/corpus` and over a project written here whose file
//! is on disk (lines traced to the change that wrote them).

use crate::common;

use common::browser::{Ui, http_get};
use common::mcp_client::Client;
use common::transcript::Transcript;
use common::{ghola_at, run_json, run_ok};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;

fn sessions(v: &Value) -> Vec<&str> {
    common::strings(v, "sessions", "session_id")
}

fn changes(v: &Value) -> Vec<&Value> {
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["changes"].as_array().unwrap())
        .collect()
}

#[test]
fn real_sessions_are_found_by_the_files_they_touched() {
    let idx = tempfile::tempdir().unwrap();
    let files = |args: &[&str]| {
        run_json(
            common::ghola_over_corpus("daaain-claude-code-log", idx.path())
                .arg("files")
                .args(args)
                .arg("--json"),
        )
    };

    // A file edited in one known session, with an edit put back later by the same session.
    let v = files(&[
        "/Users/dain/workspace/online-llm-tokenizer/tokenizer.js",
        "--changes",
        "100",
    ]);
    assert_eq!(v["matched"], "exact", "{v}");
    assert_eq!(sessions(&v), vec!["9e953218-585f-4692-89df-9e0747a31c68"]);
    let cs = changes(&v);
    assert!(cs.iter().any(|c| c["action"] == "edited"), "{v}");
    assert!(
        cs.iter().any(|c| c["undone"] == true),
        "an edit swapped back later is marked: {v}"
    );
    assert!(
        cs.iter()
            .filter(|c| c["action"] == "edited")
            .all(|c| c["request"].as_str().is_some_and(|r| !r.is_empty())),
        "every change names the request before it: {v}"
    );
    // What the IDE added to a request is not the request, nor the session's title.
    assert!(
        cs.iter()
            .all(|c| !c["request"].as_str().unwrap_or("").contains("<ide_")),
        "{v}"
    );
    assert!(
        !v["sessions"][0]["title"]
            .as_str()
            .unwrap_or("")
            .starts_with("<ide_"),
        "{v}"
    );
    // Newest first.
    let times: Vec<i64> = cs.iter().filter_map(|c| c["at_ms"].as_i64()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    // A relative path typed elsewhere: no session touched it here, so the recorded paths that end with it.
    let v = run_json(
        common::ghola_over_corpus("daaain-claude-code-log", idx.path())
            .current_dir(idx.path())
            .args([
                "files",
                "online-llm-tokenizer/tokenizer.js",
                "--json",
                "--no-update",
            ]),
    );
    assert_eq!(v["matched"], "ending", "{v}");
    assert_eq!(
        sessions(&v),
        vec!["9e953218-585f-4692-89df-9e0747a31c68"],
        "{v}"
    );

    // A file only read.
    let v = files(&["/Users/dain/workspace/claude-code-log/claude_code_log/models.py"]);
    let cs = changes(&v);
    assert!(!cs.is_empty(), "{v}");
    assert!(cs.iter().any(|c| c["action"] == "read"), "{v}");

    // A path no session touched: an empty list, exit 0, in both forms.
    let v = files(&["/nowhere/at/all.rs"]);
    assert_eq!(
        (v["matched"].as_str(), sessions(&v).len()),
        (Some("nothing"), 0),
        "{v}"
    );
    let text = String::from_utf8(run_ok(
        common::ghola_over_corpus("daaain-claude-code-log", idx.path()).args([
            "files",
            "/nowhere/at/all.rs",
            "--no-update",
        ]),
    ))
    .unwrap();
    assert!(text.contains("No session"), "{text}");
    // A bad line is the user's mistake, said as such.
    let out = common::ghola_over_corpus("daaain-claude-code-log", idx.path())
        .args(["files", "a.rs:9-3", "--no-update"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("PATH:LINE"),
        "{out:?}"
    );

    // A subagent's edit (Claude Code 2.0.74's Task agent) names its agent.
    let idx2 = tempfile::tempdir().unwrap();
    let v = run_json(
        common::ghola_over_corpus("kfischer-okarin-claude-history", idx2.path()).args([
            "files",
            "/Users/user/project/test-file.txt",
            "--json",
            "--changes",
            "50",
        ]),
    );
    assert!(
        changes(&v)
            .iter()
            .any(|c| c["agent_id"].is_string() && c["action"] != "read"),
        "{v}"
    );
}

/// A project on disk whose file three sessions wrote: created, a line edited twice, an edit undone, an edit
/// that failed.
struct Project {
    _root: tempfile::TempDir,
    claude: PathBuf,
    idx: PathBuf,
    dir: PathBuf,
    file: PathBuf,
}

const A: &str = "a0000000-0000-4000-8000-00000000000a";
const B: &str = "b0000000-0000-4000-8000-00000000000b";
const C: &str = "c0000000-0000-4000-8000-00000000000c";

const FINAL: &str = "fn main() {\n    let retries = 5;\n    println!(\"retries: {retries}\");\n    \
                     let timeout_ms = 2500;\n}\n";

impl Project {
    fn new() -> Project {
        let root = tempfile::tempdir().unwrap();
        let claude = root.path().join("claude");
        let idx = root.path().join("idx");
        let dir = root.path().join("my app");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let file = dir.join("src").join("my file.rs");
        let path = file.to_str().unwrap().to_string();
        let cwd = dir.to_str().unwrap();
        let edit =
            |old: &str, new: &str| json!({"file_path": path, "old_string": old, "new_string": new});
        Transcript::new(A, cwd)
            .starting("2025-03-01T10:00:00Z")
            .user("create the main file with three retries")
            .tool(
                "Write",
                json!({"file_path": path, "content": "fn main() {\n    let retries = 3;\n    \
                    println!(\"retries: {retries}\");\n    let timeout_ms = 1000;\n}\n"}),
                &format!("File created successfully at: {path}"),
            )
            .write(&claude);
        Transcript::new(B, cwd)
            .starting("2025-03-02T10:00:00Z")
            .user("raise the retries to four")
            .tool(
                "Edit",
                edit("let retries = 3;", "let retries = 4;"),
                "The file has been updated.",
            )
            .user("try a much longer timeout")
            .tool(
                "Edit",
                edit("let timeout_ms = 1000;", "let timeout_ms = 9000;"),
                "The file has been updated.",
            )
            .user("no, put the timeout back")
            .tool(
                "Edit",
                edit("let timeout_ms = 9000;", "let timeout_ms = 1000;"),
                "The file has been updated.",
            )
            .tool_error(
                "Edit",
                edit("let nope = 1;", "let nope = 2;"),
                "String to replace not found in file.",
            )
            .write(&claude);
        Transcript::new(C, cwd)
            .starting("2025-03-03T10:00:00Z")
            .user("make it five retries and a 2.5 s timeout")
            .tool(
                "Edit",
                edit("let retries = 4;", "let retries = 5;"),
                "The file has been updated.",
            )
            .tool(
                "Edit",
                edit("let timeout_ms = 1000;", "let timeout_ms = 2500;"),
                "The file has been updated.",
            )
            .write(&claude);
        std::fs::write(&file, FINAL).unwrap();
        Project {
            _root: root,
            claude,
            idx,
            dir,
            file,
        }
    }

    fn ghola(&self) -> Command {
        let mut c = ghola_at(&self.claude, &self.idx);
        c.current_dir(&self.dir)
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HUB_CACHE", self.idx.join("no-model"));
        c
    }

    fn files(&self, arg: &str) -> Value {
        run_json(
            self.ghola()
                .args(["files", arg, "--json", "--changes", "20"]),
        )
    }
}

#[test]
fn a_line_is_traced_to_the_changes_that_wrote_it_newest_first() {
    let p = Project::new();
    // Relative to the current directory, with a space in the name; line 2 is `let retries = 5;`.
    let v = p.files("src/my file.rs:2");
    assert_eq!(v["matched"], "exact", "{v}");
    assert_eq!(v["on_disk"], p.file.to_str().unwrap());
    assert_eq!(
        sessions(&v),
        vec![C, B, A],
        "the line's versions, newest first: {v}"
    );
    let first = &v["sessions"][0]["changes"][0];
    assert_eq!(
        (
            first["action"].as_str(),
            first["at_lines"].as_bool(),
            first["request"].as_str()
        ),
        (
            Some("edited"),
            Some(true),
            Some("make it five retries and a 2.5 s timeout")
        ),
        "{v}"
    );
    assert_eq!(first["new"], "let retries = 5;");
    let b = &v["sessions"][1]["changes"];
    let at_b: Vec<&Value> = b
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["at_lines"] == true)
        .collect();
    assert_eq!(at_b.len(), 1, "B wrote the line's previous version: {v}");
    assert_eq!(at_b[0]["request"], "raise the retries to four");
    assert_eq!(at_b[0]["in_file_now"], false);
    let a = &v["sessions"][2]["changes"][0];
    assert_eq!(
        (a["action"].as_str(), a["at_lines"].as_bool()),
        (Some("created"), Some(true)),
        "{v}"
    );

    // The undone edit and the failed one, in B.
    let b = b.as_array().unwrap();
    let longer = b
        .iter()
        .find(|c| c["new"] == "let timeout_ms = 9000;")
        .unwrap();
    assert_eq!(longer["undone"], true, "{v}");
    let back = b
        .iter()
        .find(|c| c["new"] == "let timeout_ms = 1000;")
        .unwrap();
    assert_eq!(
        (back["undone"].as_bool(), back["request"].as_str()),
        (Some(false), Some("no, put the timeout back"))
    );
    let failed = b.iter().find(|c| c["new"] == "let nope = 2;").unwrap();
    assert_eq!(failed["failed"], true);

    // Without lines: every session, newest first; by the absolute path too.
    let v = p.files(p.file.to_str().unwrap());
    assert_eq!(sessions(&v), vec![C, B, A]);
    // The text form says it for a person.
    let text = String::from_utf8(run_ok(p.ghola().args([
        "files",
        "src/my file.rs:2",
        "--no-update",
    ])))
    .unwrap();
    for said in [
        "wrote these lines",
        "undone later",
        "failed: nothing changed",
        "asked: \"raise the retries to four\"",
        C,
    ] {
        assert!(text.contains(said), "{said:?} missing from:\n{text}");
    }

    // Claude Code goes on in C: a change whose request was read by an earlier update (the append path reads
    // only the new lines; the request comes from the map).
    let path = p.file.to_str().unwrap();
    Transcript::new(C, p.dir.to_str().unwrap())
        .starting("2025-03-03T10:00:00Z")
        .continuing(5)
        .tool(
            "Edit",
            json!({"file_path": path, "old_string": "fn main() {", "new_string": "/// The entry point.\nfn main() {"}),
            "The file has been updated.",
        )
        .append(&p.claude);
    std::fs::write(&p.file, format!("/// The entry point.\n{FINAL}")).unwrap();
    let v = p.files("src/my file.rs:1");
    let first = &v["sessions"][0]["changes"][0];
    assert_eq!(
        (
            first["new"].as_str(),
            first["at_lines"].as_bool(),
            first["request"].as_str()
        ),
        (
            Some("/// The entry point.\nfn main() {"),
            Some(true),
            Some("make it five retries and a 2.5 s timeout")
        ),
        "{v}"
    );
}

#[test]
fn windows_paths_match_however_they_are_typed() {
    let root = tempfile::tempdir().unwrap();
    let (claude, idx) = (root.path().join("claude"), root.path().join("idx"));
    const W: &str = "d0000000-0000-4000-8000-00000000000d";
    Transcript::new(W, r"C:\Users\Me\My App")
        .user("rename the handler")
        .tool(
            "Edit",
            json!({"file_path": r"C:\Users\Me\My App\src\Handler.cs", "old_string": "void Run()", "new_string": "void Handle()"}),
            "The file has been updated.",
        )
        .tool("Bash", json!({"command": "dotnet test tests/HandlerTests.cs"}), "ok")
        .write(&claude);
    let files = |arg: &str| {
        run_json(
            ghola_at(&claude, &idx)
                .current_dir(root.path())
                .env("HF_HUB_OFFLINE", "1")
                .env("HF_HUB_CACHE", idx.join("no-model"))
                .args(["files", arg, "--json"]),
        )
    };
    for typed in [
        r"C:\Users\Me\My App\src\Handler.cs",
        "c:/users/me/my app/src/handler.cs",
        r"C:\Users\Me\My App\src\..\src\Handler.cs",
    ] {
        let v = files(typed);
        assert_eq!(
            (v["matched"].as_str(), sessions(&v)),
            (Some("exact"), vec![W]),
            "{typed}: {v}"
        );
        assert_eq!(changes(&v)[0]["request"], "rename the handler");
    }
    let v = files("src/Handler.cs");
    assert_eq!(
        (v["matched"].as_str(), sessions(&v)),
        (Some("ending"), vec![W]),
        "{v}"
    );
    // A command's relative path, joined to the session's Windows directory.
    let v = files(r"C:\Users\Me\My App\tests\HandlerTests.cs");
    assert_eq!(changes(&v)[0]["action"], "ran", "{v}");
}

#[test]
fn the_map_is_rebuilt_when_missing_or_damaged_and_forget_removes_a_session_from_it() {
    let p = Project::new();
    let before = p.files("src/my file.rs");
    assert_eq!(sessions(&before), vec![C, B, A]);
    let map = p.idx.join("files");
    // An index from before the map: rebuilt by the next update, with the same answer.
    std::fs::remove_dir_all(&map).unwrap();
    assert_eq!(p.files("src/my file.rs"), before);
    assert!(map.join("VERSION").exists());
    // A damaged bucket: answered without a panic, marked, rebuilt whole by the next update.
    for e in std::fs::read_dir(&map).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("p-") {
            let mut b = std::fs::read(e.path()).unwrap();
            let mid = b.len() / 2;
            b[mid] ^= 0x5a;
            std::fs::write(e.path(), b).unwrap();
        }
    }
    let out = p
        .ghola()
        .args(["files", "src/my file.rs", "--json", "--no-update"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !map.join("VERSION").exists(),
        "damage marks the map for a rebuild"
    );
    assert_eq!(p.files("src/my file.rs"), before);
    // Forget B: gone from the answer and from the map's bytes.
    run_ok(p.ghola().args(["forget", B, "--yes"]));
    let v = p.files("src/my file.rs");
    assert_eq!(sessions(&v), vec![C, A]);
    for e in std::fs::read_dir(&map).unwrap().flatten() {
        let bytes = std::fs::read(e.path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("put the timeout back"),
            "{} still holds a forgotten request",
            e.path().display()
        );
    }
}

#[test]
fn the_model_and_the_browser_ask_the_same_history() {
    let p = Project::new();
    run_ok(p.ghola().arg("index"));
    // MCP: relative to the calling project.
    let mut c = Client::start(
        &p.claude,
        &p.idx,
        &[("CLAUDE_PROJECT_DIR", p.dir.to_str().unwrap())],
    );
    let (err, text) = c.call(
        1,
        "file_history",
        json!({"path": "src/my file.rs", "lines": "2"}),
    );
    assert!(!err, "{text}");
    let c_at = text.find(C).expect("C listed");
    let b_at = text.find(B).expect("B listed");
    assert!(c_at < b_at, "the later change first:\n{text}");
    for said in [
        "wrote these lines",
        "asked: \"make it five retries",
        "duncan_query",
    ] {
        assert!(text.contains(said), "{said:?} missing from:\n{text}");
    }
    for bad in [
        json!({"path": ""}),
        json!({"path": "a.rs", "lines": "x"}),
        json!({"path": "a.rs", "limit": -1}),
    ] {
        let (err, text) = c.call(2, "file_history", bad.clone());
        assert!(err, "{bad} was accepted: {text}");
    }
    drop(c);

    // The browser: a tool call links to its file's page, which lists the sessions with their requests.
    let ui = Ui::start(ghola_at(&p.claude, &p.idx));
    let login = ui.log_in();
    let get = |path: &str| http_get(login.addr, &login.host, path, &login.cookie).unwrap();
    let session = get(&format!("/session/{B}"));
    let link = session
        .split("href=\"")
        .find(|s| s.starts_with("/file?path="))
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no file link on the session page:\n{session}"))
        .replace("&amp;", "&");
    let page = get(&link);
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    for said in [
        A,
        B,
        C,
        "raise the retries to four",
        "undone later",
        "created",
    ] {
        assert!(
            page.contains(said),
            "{said:?} missing from the file page:\n{page}"
        );
    }
    let lines = get(&format!("{link}&lines=2"));
    let (c_at, b_at) = (
        lines.find(C).unwrap(),
        lines.find(&format!("/session/{B}")).unwrap(),
    );
    assert!(
        c_at < b_at && lines.contains("wrote these lines"),
        "{lines}"
    );
    let bad = get(&format!("{link}&lines=x"));
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
}
