//! A raw JSON-RPC client of `ghola serve` over stdio, for tests.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Every tool the server offers, with the arguments its schema names (what the argument fuzzer and the schema
/// checks go by).
pub const TOOLS: &[(&str, &[&str])] = &[
    (
        "search_project_history",
        &[
            "query",
            "project",
            "after",
            "before",
            "context_before_after",
            "threshold",
            "relative_floor",
            "max_results",
            "offset",
            "include_subagents",
            "since",
            "session_id",
            "group_by",
            "max_chars",
            "format",
        ],
    ),
    (
        "search_global_history",
        &[
            "query",
            "after",
            "before",
            "max_results",
            "offset",
            "threshold",
            "since",
            "group_by",
            "format",
        ],
    ),
    (
        "get_session_detail",
        &[
            "session_id",
            "window",
            "offset",
            "limit",
            "around",
            "before",
            "after",
            "format",
        ],
    ),
    ("duncan_projects", &["offset", "limit"]),
    (
        "duncan_list_sessions",
        &["mode", "project", "limit", "offset", "since"],
    ),
    ("project_notes", &["category", "project", "limit", "offset"]),
    (
        "duncan_query",
        &[
            "question",
            "mode",
            "scope",
            "project",
            "session_id",
            "window",
            "git_branch",
            "limit",
            "offset",
            "copies",
            "batch_size",
            "include_subagents",
            "model",
        ],
    ),
];

/// A running `ghola serve`.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Notifications received while waiting for responses.
    pub notifications: Vec<Value>,
}

impl Client {
    /// Starts the server on `claude`/`idx` with extra environment, and completes the handshake.
    pub fn start(claude: &Path, idx: &Path, env: &[(&str, &str)]) -> Client {
        let mut cmd = super::ghola_at(claude, idx);
        cmd.args(["serve", "--poll-seconds", "1"])
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Client::spawn(cmd)
    }

    /// Starts any command that serves MCP on stdio (the plugin's launcher, say) and completes the handshake.
    pub fn spawn(mut cmd: Command) -> Client {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        Client::attach(cmd.spawn().unwrap())
    }

    /// Completes the handshake with a process already started with piped stdin and stdout (so that several can
    /// be started at once).
    pub fn attach(mut child: Child) -> Client {
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Client {
            child,
            stdin,
            stdout,
            notifications: Vec::new(),
        };
        let init = c.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "ghola");
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c
    }

    pub fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line from the server.
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout is not JSON-RPC: {line:?} ({e})"))
    }

    /// Sends a request and returns its response, keeping notifications that arrive meanwhile.
    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    /// Waits for the response to `id`.
    pub fn response(&mut self, id: u64) -> Value {
        loop {
            let v = self.recv();
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                return v;
            }
            self.notifications.push(v);
        }
    }

    /// Calls a tool; returns (is_error, text).
    pub fn call(&mut self, id: u64, name: &str, args: Value) -> (bool, String) {
        let r = self.request(id, "tools/call", json!({"name": name, "arguments": args}));
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (r["result"]["isError"] == json!(true), text)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
