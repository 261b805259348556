//! The copy without rsync: plain ssh and the POSIX tools every remote has. One connection lists the remote's
//! files with their sizes (`find … -exec wc -c`); a second sends, in one stream, the new bytes of every file that
//! grew (from a little before the local copy's end, so that the overlap proves the start is unchanged) and every
//! new or shorter file whole. Grown files are appended to; new and rewritten ones replace the copy whole through a
//! temporary file. A file whose overlap differs is fetched whole in a third pass. A file of the same size is
//! taken as unchanged (transcripts only grow; rsync, where there is one, compares times too).

use super::ssh::{Ssh, quote, remote_path};
use super::{Remote, RemoteError};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Bytes before the local end that a grown file's fetch starts at.
const OVERLAP: u64 = 64;

/// One file to fetch: from `start`, `len` bytes as listed (fewer if it shrank meanwhile); the local copy has
/// `have` bytes, of which those from `start` must match.
#[derive(Debug, Clone)]
struct Want {
    path: String,
    start: u64,
    have: u64,
}

/// Copies what changed under the remote's `dir/projects` into `local`, leaving out `forgotten` sessions.
/// Returns files and bytes written.
pub fn copy(
    remote: &Remote,
    ssh: &Ssh,
    dir: &str,
    local: &Path,
    forgotten: &[String],
    progress: bool,
) -> Result<(usize, u64), RemoteError> {
    let projects = format!("{}/projects", remote_path(dir));
    let listed = list(remote, ssh, &projects)?;
    let mut wants = Vec::new();
    for (path, size) in listed {
        if forgotten.iter().any(|id| is_of_session(&path, id)) {
            continue;
        }
        let have = std::fs::metadata(local.join(&path)).map_or(0, |m| m.len());
        if have == size {
            continue;
        }
        // A grown file resumes a little before its end; a new or shorter one comes whole.
        let grown = have > 0 && size > have;
        wants.push(Want {
            path,
            start: if grown {
                have.saturating_sub(OVERLAP)
            } else {
                0
            },
            have: if grown { have } else { 0 },
        });
    }
    let bar = progress.then(|| {
        let b = indicatif::ProgressBar::new(wants.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} files {bytes} {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let (mut files, mut bytes, again) = fetch(remote, ssh, &projects, local, &wants, bar.as_ref())?;
    if !again.is_empty() {
        // Their start changed: fetched whole.
        let whole: Vec<Want> = again
            .into_iter()
            .map(|path| Want {
                path,
                start: 0,
                have: 0,
            })
            .collect();
        let (f, b, _) = fetch(remote, ssh, &projects, local, &whole, bar.as_ref())?;
        files += f;
        bytes += b;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok((files, bytes))
}

/// Whether `path` (relative, `./-proj/<id>.jsonl` or `./-proj/<id>/subagents/…`) belongs to session `id`.
fn is_of_session(path: &str, id: &str) -> bool {
    path.split('/')
        .any(|c| c == id || c.strip_suffix(".jsonl") == Some(id))
}

/// Whether a listed path is one to take: relative, inside the folder, one line.
fn acceptable(path: &str) -> bool {
    path.starts_with("./")
        && !path.split('/').any(|c| c == "..")
        && !path.contains(['\n', '\r', '\0'])
}

/// The remote's files under `projects` with their sizes.
fn list(remote: &Remote, ssh: &Ssh, projects: &str) -> Result<Vec<(String, u64)>, RemoteError> {
    let cmd = format!("cd {projects} && find . -type f -exec wc -c {{}} +");
    let out = super::sync::run(remote, ssh.command(&cmd))?;
    if !out.status.success() {
        return Err(RemoteError::Connect {
            name: remote.name.clone(),
            message: format!(
                "listing the remote's transcripts failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let (size, path) = l.split_once(' ')?;
            let path = path.trim_start();
            (acceptable(path)).then(|| Some((path.to_string(), size.parse().ok()?)))?
        })
        .collect())
}

/// Fetches `wants` in one stream. Returns files and bytes written, and the files whose overlap did not match.
fn fetch(
    remote: &Remote,
    ssh: &Ssh,
    projects: &str,
    local: &Path,
    wants: &[Want],
    bar: Option<&indicatif::ProgressBar>,
) -> Result<(usize, u64, Vec<String>), RemoteError> {
    if wants.is_empty() {
        return Ok((0, 0, Vec::new()));
    }
    // Each file: a header with its index and the byte count it will send, the bytes, an end mark. The count is
    // taken first and the same bytes sent second, so a file that grows meanwhile sends what was counted.
    let mut script = String::from("set -u\n");
    for (i, w) in wants.iter().enumerate() {
        let p = quote(&w.path);
        if w.start == 0 {
            // A whole file: its size now, then that many bytes (two processes a file).
            script.push_str(&format!(
                "n=$(($(wc -c < {p} 2>/dev/null || echo 0))); printf 'F {i} %s\\n' \"$n\"; head -c \"$n\" {p}; \
                 printf '\\nE\\n'\n"
            ));
        } else {
            script.push_str(&format!(
                "n=$(($(wc -c < {p} 2>/dev/null || echo {s}) - {s})); [ \"$n\" -ge 0 ] || n=0; \
                 printf 'F {i} %s\\n' \"$n\"; tail -c +{s1} {p} | head -c \"$n\"; printf '\\nE\\n'\n",
                s = w.start,
                s1 = w.start + 1
            ));
        }
    }
    let (mut child, writer) =
        super::sync::spawn_fed(remote, ssh.command(&format!("cd {projects} && sh")), script)?;
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let result = read_stream(&mut out, local, wants, bar);
    drop(out);
    let _ = writer.join();
    let status = child.wait().map_err(RemoteError::io(local))?;
    let err = err_reader.join().unwrap_or_default();
    if let Some(e) = super::sync::ssh_failure(remote, status, &err) {
        return Err(e);
    }
    result.map_err(|e| match e {
        StreamError::Io(path, source) => RemoteError::Io { path, source },
        StreamError::Garbled(what) => RemoteError::Connect {
            name: remote.name.clone(),
            message: format!(
                "the copy stream broke off ({what}); what arrived whole is kept, the next sync goes on from there{}",
                if err.trim().is_empty() { String::new() } else { format!(" (remote said: {})", err.trim()) }
            ),
        },
    })
}

enum StreamError {
    Io(PathBuf, std::io::Error),
    Garbled(String),
}

/// Reads the stream of [`fetch`]: per file, its bytes go where they belong as they arrive.
fn read_stream(
    out: &mut impl BufRead,
    local: &Path,
    wants: &[Want],
    bar: Option<&indicatif::ProgressBar>,
) -> Result<(usize, u64, Vec<String>), StreamError> {
    let mut files = 0;
    let mut bytes = 0;
    let mut again = Vec::new();
    let mut seen: HashMap<usize, ()> = HashMap::new();
    loop {
        let mut header = String::new();
        match out.read_line(&mut header) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(StreamError::Garbled(e.to_string())),
        }
        let mut parts = header.trim_end().split(' ');
        let (Some("F"), Some(i), Some(n)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(StreamError::Garbled(format!(
                "unexpected {:?}",
                header.trim_end()
            )));
        };
        let (Ok(i), Ok(n)) = (i.parse::<usize>(), n.parse::<u64>()) else {
            return Err(StreamError::Garbled(format!(
                "unexpected {:?}",
                header.trim_end()
            )));
        };
        let Some(w) = wants.get(i).filter(|_| seen.insert(i, ()).is_none()) else {
            return Err(StreamError::Garbled(format!("a file not asked for ({i})")));
        };
        let target = local.join(&w.path);
        let io = |e| StreamError::Io(target.clone(), e);
        let mut body = out.by_ref().take(n);
        if w.have > 0 {
            // A grown file: the overlap must be the copy's own end; then the rest is appended.
            let overlap = (w.have - w.start).min(n);
            let mut theirs = vec![0u8; overlap as usize];
            body.read_exact(&mut theirs)
                .map_err(|e| StreamError::Garbled(e.to_string()))?;
            let mut ours = vec![0u8; overlap as usize];
            let same = std::fs::File::open(&target)
                .and_then(|mut f| {
                    use std::io::Seek;
                    f.seek(std::io::SeekFrom::Start(w.start))?;
                    f.read_exact(&mut ours)
                })
                .is_ok()
                && ours == theirs
                && n > w.have - w.start;
            if same {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&target)
                    .map_err(io)?;
                let copied = std::io::copy(&mut body, &mut f).map_err(io)?;
                f.sync_all().map_err(io)?;
                bytes += copied;
                files += 1;
            } else {
                std::io::copy(&mut body, &mut std::io::sink()).map_err(io)?;
                again.push(w.path.clone());
            }
        } else if n == 0 {
            // Gone (or emptied) on the remote since it was listed: nothing to keep.
        } else {
            let parent = target.parent().unwrap_or(local).to_path_buf();
            std::fs::create_dir_all(&parent).map_err(|e| StreamError::Io(parent.clone(), e))?;
            let mut tmp = tempfile::NamedTempFile::new_in(&parent)
                .map_err(|e| StreamError::Io(parent.clone(), e))?;
            let copied = std::io::copy(&mut body, &mut tmp).map_err(io)?;
            if copied < n {
                return Err(StreamError::Garbled(format!("{} ended early", w.path)));
            }
            tmp.as_file().sync_all().map_err(io)?;
            tmp.persist(&target)
                .map_err(|e| StreamError::Io(target.clone(), e.error))?;
            bytes += copied;
            files += 1;
        }
        let mut end = [0u8; 3];
        out.read_exact(&mut end)
            .map_err(|e| StreamError::Garbled(e.to_string()))?;
        if &end != b"\nE\n" {
            return Err(StreamError::Garbled(format!(
                "{} did not end where it said",
                w.path
            )));
        }
        if let Some(b) = bar {
            b.inc(1);
            b.set_message(w.path.clone());
        }
    }
    Ok((files, bytes, again))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_appends_grown_files_replaces_others_and_refuses_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path();
        std::fs::create_dir_all(local.join("-p")).unwrap();
        std::fs::write(local.join("-p/a.jsonl"), b"line one\n").unwrap();
        std::fs::write(local.join("-p/b.jsonl"), b"old start\n").unwrap();
        let wants = vec![
            Want {
                path: "./-p/a.jsonl".into(),
                start: 0,
                have: 9,
            },
            Want {
                path: "./-p/b.jsonl".into(),
                start: 0,
                have: 10,
            },
            Want {
                path: "./-p/c.jsonl".into(),
                start: 0,
                have: 0,
            },
        ];
        let mut stream = Vec::new();
        stream.extend_from_slice(b"F 0 18\nline one\nline two\n\nE\n");
        stream.extend_from_slice(b"F 1 19\nnew start\nmore one\n\nE\n");
        stream.extend_from_slice(b"F 2 4\nnew\n\nE\n");
        let Ok((files, bytes, again)) = read_stream(&mut &stream[..], local, &wants, None) else {
            panic!("the stream was read")
        };
        assert_eq!(
            std::fs::read(local.join("-p/a.jsonl")).unwrap(),
            b"line one\nline two\n"
        );
        assert_eq!(
            std::fs::read(local.join("-p/b.jsonl")).unwrap(),
            b"old start\n",
            "kept until fetched whole"
        );
        assert_eq!(again, vec!["./-p/b.jsonl".to_string()]);
        assert_eq!(std::fs::read(local.join("-p/c.jsonl")).unwrap(), b"new\n");
        assert_eq!((files, bytes), (2, 13));
        for bad in [
            &b"F 9 1\nx\nE\n"[..],
            b"F 2 4\nne",
            b"hello\n",
            b"F 2 1\nxAAA",
        ] {
            assert!(read_stream(&mut &bad[..], local, &wants, None).is_err());
        }
        assert!(
            is_of_session("./-p/abc.jsonl", "abc")
                && is_of_session("./-p/abc/subagents/x.jsonl", "abc")
        );
        assert!(!is_of_session("./-p/abcd.jsonl", "abc"));
        assert!(acceptable("./-p/a.jsonl") && !acceptable("../x") && !acceptable("./a/../../x"));
    }
}
