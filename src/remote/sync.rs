//! One sync of one remote: take its lock, look at the remote once (its Claude dir, its name, whether it has
//! rsync), copy what grew into the local copy, record the outcome. The caller then updates the index, which
//! reads the copy as it reads this machine's transcripts.

use super::ssh::{Ssh, explain, remote_path};
use super::{Remote, RemoteError, SyncStatus, get, save_status, status};
use crate::index::machines::machine_dir;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

/// How a sync copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// rsync over ssh: only what changed crosses the network.
    Rsync,
    /// Plain ssh (the remote has no rsync): the new bytes of grown files, whole new or rewritten files.
    Ssh,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Rsync => "rsync",
            Method::Ssh => "ssh",
        }
    }
}

/// What a sync did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SyncReport {
    pub name: String,
    pub method: Method,
    /// Files that were new or grew.
    pub files: usize,
    /// Bytes written to the copy.
    pub bytes: u64,
    pub seconds: f64,
}

/// What a sync needs from its caller.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// `GHOLA_SSH`.
    pub ssh_command: Option<String>,
    /// Show progress on stderr (a terminal).
    pub progress: bool,
    /// This machine's Claude config dir: a remote that turns out to be this very folder is refused.
    pub local_claude_dir: PathBuf,
    /// Wait for another sync of the same remote instead of saying it is busy.
    pub wait: bool,
    /// Copy by plain ssh even where rsync could (`ghola bench remote` measures both).
    pub plain_ssh: bool,
}

/// What the remote said when first asked.
#[derive(Debug, Default)]
struct Probe {
    /// Its Claude dir, resolved (`pwd -P`).
    dir: String,
    host: String,
    has_projects: bool,
    has_rsync: bool,
}

/// Syncs remote `name` into its copy under `index_dir`; the outcome is recorded in its status either way.
pub fn sync(index_dir: &Path, name: &str, opts: &SyncOptions) -> Result<SyncReport, RemoteError> {
    let remote = get(index_dir, name)?;
    let dir = machine_dir(index_dir, name);
    let lock_path = dir.join("sync.lock");
    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(RemoteError::io(&lock_path))?;
    if opts.wait {
        lock.lock().map_err(RemoteError::io(&lock_path))?;
    } else if lock.try_lock().is_err() {
        return Err(RemoteError::Busy { name: name.into() });
    }
    let mut st = status(index_dir, name);
    st.last_attempt = Some(now());
    save_status(index_dir, name, &st);
    let outcome = copy(index_dir, &remote, &dir, opts);
    if outcome.is_ok() {
        follow_git_remotes(index_dir, &remote, &dir, opts);
    }
    match &outcome {
        Ok(r) => {
            st.last_success = st.last_attempt.clone();
            st.last_error = None;
            st.failures = 0;
            st.files = r.files;
            st.bytes = r.bytes;
            st.method = r.method.name().into();
        }
        Err(e) => {
            st.last_error = Some(e.to_string());
            st.failures += 1;
        }
    }
    save_status(index_dir, name, &st);
    if let Err(e) = crate::private::tighten(&dir) {
        tracing::warn!("could not make {} private: {e}", dir.display());
    }
    drop(lock);
    outcome
}

/// Looks for projects that are one checkout on both machines (by their git remotes) and, when the rules change,
/// records them and has that machine's sessions read again with them. A failure only costs the rules.
fn follow_git_remotes(index_dir: &Path, remote: &Remote, dir: &Path, opts: &SyncOptions) {
    let ssh = Ssh::new(remote, opts.ssh_command.as_deref());
    let rules = match super::gitmap::rules(remote, &ssh, dir, &opts.local_claude_dir) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("{}: git remotes not compared: {e}", remote.name);
            return;
        }
    };
    if rules == remote.auto_map {
        return;
    }
    let mut r = remote.clone();
    r.auto_map = rules;
    if let Err(e) = super::save(index_dir, &r) {
        tracing::warn!("{e}");
        return;
    }
    if let Err(e) = super::reread(index_dir, &remote.name) {
        tracing::warn!(
            "{}: its sessions are not read again with the new rules: {e}",
            remote.name
        );
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Probes the remote and copies its `projects/` into `dir/projects`.
fn copy(
    index_dir: &Path,
    remote: &Remote,
    dir: &Path,
    opts: &SyncOptions,
) -> Result<SyncReport, RemoteError> {
    let started = Instant::now();
    let ssh = Ssh::new(remote, opts.ssh_command.as_deref());
    let probe = probe(remote, &ssh)?;
    if is_this_machine(&probe, &opts.local_claude_dir) {
        return Err(RemoteError::Invalid(format!(
            "{}: {} on {} is this machine's own Claude history, which ghola reads already",
            remote.name, probe.dir, probe.host
        )));
    }
    let local = dir.join("projects");
    std::fs::create_dir_all(&local).map_err(RemoteError::io(&local))?;
    let forgotten: Vec<String> = crate::index::forget::forgotten(index_dir)
        .sessions
        .into_keys()
        .collect();
    let (method, files, bytes) = if !probe.has_projects {
        (Method::Ssh, 0, 0)
    } else if probe.has_rsync && !opts.plain_ssh && local_rsync() {
        let (f, b) = rsync(remote, &ssh, &probe, &local, &forgotten, opts.progress)?;
        (Method::Rsync, f, b)
    } else {
        let (f, b) =
            super::fallback::copy(remote, &ssh, &probe.dir, &local, &forgotten, opts.progress)?;
        (Method::Ssh, f, b)
    };
    Ok(SyncReport {
        name: remote.name.clone(),
        method,
        files,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Runs `cmd`, failing with the ssh advice when ssh itself failed (status 255).
pub(super) fn run(
    remote: &Remote,
    mut cmd: std::process::Command,
) -> Result<std::process::Output, RemoteError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RemoteError::Connect {
            name: remote.name.clone(),
            message: format!(
                "cannot run ssh: {e} (is OpenSSH's client installed? GHOLA_SSH names another)"
            ),
        })?;
    match ssh_failure(remote, out.status, &String::from_utf8_lossy(&out.stderr)) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The error of an ssh that failed itself (status 255: no connection, a refused key, an unknown host), with what
/// to do; `None` for any other status (the remote command's own).
pub(super) fn ssh_failure(
    remote: &Remote,
    status: std::process::ExitStatus,
    stderr: &str,
) -> Option<RemoteError> {
    (status.code() == Some(255)).then(|| RemoteError::Connect {
        name: remote.name.clone(),
        message: explain(remote, stderr),
    })
}

/// Starts `cmd` with every stream piped and `input` written to its stdin from a thread of its own (so that a
/// large script and a large answer cannot block each other); join the thread once the output is read.
pub(super) fn spawn_fed(
    remote: &Remote,
    mut cmd: std::process::Command,
    input: String,
) -> Result<(std::process::Child, std::thread::JoinHandle<()>), RemoteError> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| RemoteError::Connect {
            name: remote.name.clone(),
            message: format!("cannot run ssh: {e}"),
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(input.as_bytes());
    });
    Ok((child, writer))
}

/// Runs `cmd` with `input` on its stdin; its stdout, or the ssh advice when ssh itself failed (status 255).
pub(super) fn run_with_input(
    remote: &Remote,
    cmd: std::process::Command,
    input: String,
) -> Result<Vec<u8>, RemoteError> {
    let (child, writer) = spawn_fed(remote, cmd, input)?;
    let out = child.wait_with_output().map_err(|e| RemoteError::Connect {
        name: remote.name.clone(),
        message: format!("ssh: {e}"),
    })?;
    let _ = writer.join();
    match ssh_failure(remote, out.status, &String::from_utf8_lossy(&out.stderr)) {
        Some(e) => Err(e),
        None => Ok(out.stdout),
    }
}

/// One look at the remote: its Claude dir (resolved), its host name, whether it has `projects/` and rsync.
fn probe(remote: &Remote, ssh: &Ssh) -> Result<Probe, RemoteError> {
    let script = format!(
        "cd {} 2>/dev/null || {{ echo ghola-no-dir; exit 0; }}; echo ghola-dir; pwd -P; \
         (hostname 2>/dev/null || uname -n); \
         if test -d projects; then echo projects; else echo no-projects; fi; \
         if command -v rsync >/dev/null 2>&1; then echo rsync; else echo no-rsync; fi",
        remote_path(&remote.claude_dir)
    );
    let out = run(remote, ssh.command(&script))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    match lines.first() {
        Some(&"ghola-dir") if lines.len() >= 5 => Ok(Probe {
            dir: lines[1].to_string(),
            host: lines[2].to_string(),
            has_projects: lines[3] == "projects",
            has_rsync: lines[4] == "rsync",
        }),
        Some(&"ghola-no-dir") => Err(RemoteError::Connect {
            name: remote.name.clone(),
            message: format!(
                "there is no {} on {} (is Claude Code used there? `ghola remote add … --claude-dir DIR` names another folder)",
                remote.claude_dir, remote.host
            ),
        }),
        _ => Err(RemoteError::Connect {
            name: remote.name.clone(),
            message: format!(
                "the remote's shell did not answer as a POSIX shell does (status {}; it said: {})",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }),
    }
}

/// Whether the probed folder is this machine's own Claude dir: the same host name and the same resolved path.
fn is_this_machine(probe: &Probe, local_claude_dir: &Path) -> bool {
    let here = gethostname::gethostname().to_string_lossy().into_owned();
    let local = local_claude_dir
        .canonicalize()
        .unwrap_or_else(|_| local_claude_dir.to_path_buf());
    probe.host == here && Path::new(&probe.dir) == local
}

/// Whether this machine has rsync.
fn local_rsync() -> bool {
    std::process::Command::new("rsync")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Copies with rsync: recursive, times kept (unchanged files are skipped by size and time), files updated in
/// place (a grown transcript keeps its start, so the index reads only its new lines), nothing deleted, partial
/// files kept for the next run. Returns files and bytes transferred.
fn rsync(
    remote: &Remote,
    ssh: &Ssh,
    probe: &Probe,
    local: &Path,
    forgotten: &[String],
    progress: bool,
) -> Result<(usize, u64), RemoteError> {
    let excludes = tempfile::NamedTempFile::new().map_err(RemoteError::io(local))?;
    let list: String = forgotten
        .iter()
        .map(|id| format!("{id}.jsonl\n{id}/\n"))
        .collect();
    std::fs::write(excludes.path(), list).map_err(RemoteError::io(excludes.path()))?;
    let mut cmd = std::process::Command::new("rsync");
    cmd.args(["-rt", "--inplace", "--partial", "--stats", "--protect-args"])
        .arg(format!("--exclude-from={}", excludes.path().display()))
        .arg("-e")
        .arg(ssh.for_rsync())
        .arg(format!(
            "{}:{}/projects/",
            rsync_host(&remote.host),
            probe.dir
        ))
        .arg(format!("{}/", local.display()));
    if progress {
        cmd.arg("--info=progress2");
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| RemoteError::Connect {
            name: remote.name.clone(),
            message: format!("cannot run rsync: {e}"),
        })?;
    // Progress lines go to the terminal as they come; the whole output is kept for the totals.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            if progress {
                use std::io::Write;
                let _ = std::io::stderr().write_all(&buf[..n]);
            }
            all.extend_from_slice(&buf[..n]);
        }
        all
    });
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = child.wait().map_err(RemoteError::io(local))?;
    let out = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    if progress {
        eprintln!();
    }
    match status.code() {
        // 24: files vanished on the remote while it ran (a session deleted meanwhile) — the rest is copied.
        Some(0) | Some(24) => {}
        Some(23) => tracing::warn!(
            "{}: some files could not be read: {}",
            remote.name,
            err.trim()
        ),
        Some(255) | Some(12) | Some(5) if err.contains("ssh") || err.contains("connection") => {
            return Err(RemoteError::Connect {
                name: remote.name.clone(),
                message: explain(remote, &err),
            });
        }
        _ => {
            return Err(RemoteError::Connect {
                name: remote.name.clone(),
                message: format!("rsync failed ({status}): {}", err.trim()),
            });
        }
    }
    Ok((
        stat(&out, "Number of regular files transferred:") as usize,
        stat(&out, "Total transferred file size:"),
    ))
}

/// The host as rsync takes it before the colon: an IPv6 address in brackets.
fn rsync_host(host: &str) -> String {
    let (user, h) = match host.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, host),
    };
    let h = if h.contains(':') && !h.starts_with('[') {
        format!("[{h}]")
    } else {
        h.to_string()
    };
    match user {
        Some(u) => format!("{u}@{h}"),
        None => h,
    }
}

/// A number from rsync's `--stats` (digits with `,` or `.` as thousands separators).
fn stat(out: &str, label: &str) -> u64 {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| {
            let digits: String = rest
                .split_whitespace()
                .next()?
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

/// Whether a remote's last sync failed recently enough that the background sync should wait: after `n`
/// failures in a row it waits `base × 2^(n-1)`, at most an hour.
pub fn backoff_over(
    st: &SyncStatus,
    base: std::time::Duration,
    now: chrono::DateTime<chrono::Utc>,
) -> bool {
    if st.failures == 0 {
        return true;
    }
    let Some(last) = st
        .last_attempt
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    else {
        return true;
    };
    let wait = (base * 2u32.saturating_pow(st.failures.saturating_sub(1).min(8)))
        .min(std::time::Duration::from_secs(3600));
    now.signed_duration_since(last.with_timezone(&chrono::Utc))
        .to_std()
        .is_ok_and(|d| d >= wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsync_numbers_and_hosts_and_the_backoff() {
        let out = "Number of files: 12\nNumber of regular files transferred: 1,234\nTotal transferred file size: 5.678.901 bytes\n";
        assert_eq!(stat(out, "Number of regular files transferred:"), 1234);
        assert_eq!(stat(out, "Total transferred file size:"), 5678901);
        assert_eq!(stat(out, "Nothing:"), 0);
        assert_eq!(rsync_host("me@::1"), "me@[::1]");
        assert_eq!(rsync_host("dev"), "dev");
        let now = chrono::Utc::now();
        let base = std::time::Duration::from_secs(60);
        let mut st = SyncStatus::default();
        assert!(backoff_over(&st, base, now));
        st.failures = 3;
        st.last_attempt = Some((now - chrono::Duration::seconds(200)).to_rfc3339());
        assert!(
            !backoff_over(&st, base, now),
            "three failures wait four minutes"
        );
        st.last_attempt = Some((now - chrono::Duration::seconds(241)).to_rfc3339());
        assert!(backoff_over(&st, base, now));
    }
}
