//! The same checkout on two machines, found by its git remote: a project of the remote whose `origin` is the
//! `origin` of a project here reads as that project (an automatic path rule, beside `ghola remote map`'s).
//!
//! Each side's projects are the `cwd`s their transcripts name (one per project folder). Here, `git config --get
//! remote.origin.url` runs in each that still exists; there, one ssh connection asks the same of each (read
//! only; a remote without git, or a folder that is gone, gives nothing). URLs are compared in one form
//! (`git@host:a/b.git`, `ssh://git@host/a/b` and `https://host/a/b` are the same); a URL with two checkouts here is
//! ambiguous and gives no rule.

use super::ssh::{Ssh, quote};
use super::{Remote, RemoteError};
use crate::transcript::PathMap;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The rules the git remotes of both sides give: remote project → the project here with the same origin.
pub fn rules(
    remote: &Remote,
    ssh: &Ssh,
    copy: &Path,
    local_claude_dir: &Path,
) -> Result<Vec<PathMap>, RemoteError> {
    let theirs = project_cwds(copy);
    let ours = project_cwds(local_claude_dir);
    if theirs.is_empty() || ours.is_empty() {
        return Ok(Vec::new());
    }
    // Here: origin URL → the projects with it.
    let mut here: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for cwd in &ours {
        if let Some(url) = local_origin(cwd) {
            here.entry(url).or_default().insert(cwd.clone());
        }
    }
    if here.is_empty() {
        return Ok(Vec::new());
    }
    let theirs: Vec<String> = theirs.into_iter().collect();
    let mut script = String::new();
    for (i, cwd) in theirs.iter().enumerate() {
        script.push_str(&format!(
            "printf '{i}\\t'; (cd {} 2>/dev/null && git config --get remote.origin.url 2>/dev/null) || true; echo\n",
            quote(cwd)
        ));
    }
    let out = super::sync::run_with_input(remote, ssh.command("sh"), script)?;
    let mut rules = Vec::new();
    for line in String::from_utf8_lossy(&out).lines() {
        let Some((i, url)) = line.split_once('\t') else {
            continue;
        };
        let (Ok(i), Some(url)) = (i.parse::<usize>(), normal_url(url)) else {
            continue;
        };
        let (Some(from), Some(to)) = (theirs.get(i), here.get(&url)) else {
            continue;
        };
        if to.len() == 1 && to.first() != Some(from) {
            rules.push(PathMap {
                from: from.clone(),
                to: to.first().cloned().unwrap_or_default(),
            });
        }
    }
    Ok(rules)
}

/// The `cwd` each project folder's transcripts name (from the first line that has one, in its first session file).
fn project_cwds(claude_dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(folders) = std::fs::read_dir(claude_dir.join("projects")) else {
        return out;
    };
    for f in folders.flatten() {
        let Ok(files) = std::fs::read_dir(f.path()) else {
            continue;
        };
        let first = files
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .find_map(|p| first_cwd(&p));
        out.extend(first);
    }
    out
}

/// The first `cwd` in the first 256 KB of a transcript.
fn first_cwd(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    BufReader::new(f.take(256 * 1024))
        .lines()
        .map_while(Result::ok)
        .filter(|l| l.contains("\"cwd\""))
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(&l).ok()?;
            v.get("cwd")?
                .as_str()
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
        })
}

/// `origin`'s URL of the checkout at `cwd` here, in its normal form.
fn local_origin(cwd: &str) -> Option<String> {
    if !Path::new(cwd).is_dir() {
        return None;
    }
    let out = std::process::Command::new("git")
        .args(["-C", cwd, "config", "--get", "remote.origin.url"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    normal_url(String::from_utf8_lossy(&out.stdout).trim())
}

/// A git URL as `host/path` (lowercase host, no user, scheme, port, `.git` or trailing slash); `None` for none.
pub fn normal_url(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    let rest = match url.split_once("://") {
        Some((_, r)) => r.to_string(),
        // scp-like: user@host:path
        None => match url.split_once(':') {
            Some((host, path)) if !host.contains('/') => format!("{host}/{path}"),
            _ => url.to_string(),
        },
    };
    let rest = rest.rsplit_once('@').map_or(rest.as_str(), |(_, r)| r);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    let path = path
        .trim_end_matches('/')
        .trim_end_matches(".git")
        .trim_matches('/');
    (!host.is_empty() && !path.is_empty()).then(|| format!("{host}/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_repository_has_one_url_however_it_is_written() {
        let want = Some("github.com/me/app".to_string());
        for u in [
            "git@github.com:me/app.git",
            "https://github.com/me/app",
            "https://github.com/me/app.git/",
            "ssh://git@GitHub.com:22/me/app.git",
            "https://user:token@github.com/me/app",
        ] {
            assert_eq!(normal_url(u), want, "{u}");
        }
        assert_eq!(normal_url(""), None);
        assert_ne!(normal_url("git@github.com:me/app2.git"), want);
    }
}
