//! Other machines' histories: each is a folder laid out as a Claude config dir (`projects/<escaped-cwd>/…`), a
//! copy `ghola remote sync` keeps of that machine's `~/.claude/projects`. Readers find their sessions beside this
//! machine's and tell them apart by where their files are; nothing in a transcript names its machine.
//!
//! A machine's project paths may differ from this machine's for the same checkout (`/home/me/src/app` on a dev
//! box, `/Users/me/src/app` on a laptop): [`PathMap`] rules, set by `ghola remote map`, rewrite them as its
//! sessions are read, so one project is one project whichever machine its sessions were recorded on.

use super::project_path::{is_within, normal_form};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A rule that reads a project path of another machine as one of this machine's: `from` (a folder there) and
/// everything in it becomes `to` (the same checkout here) and the same relative path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathMap {
    pub from: String,
    pub to: String,
}

/// Another machine whose history ghola keeps: its name (what results say they were recorded on), the local
/// folder that holds the copy, and its path rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    pub name: String,
    /// Laid out as a Claude config dir: `dir/projects/<escaped-cwd>/<session>.jsonl`.
    pub dir: PathBuf,
    pub map: Vec<PathMap>,
}

impl Machine {
    /// Whether `path` (a transcript, a project folder) is in this machine's copy.
    pub fn holds(&self, path: &Path) -> bool {
        path.starts_with(&self.dir)
    }

    /// `project` as this machine's rules read it: the longest rule whose `from` holds it rewrites it; otherwise it
    /// stays as recorded.
    pub fn map_project(&self, project: &str) -> String {
        let Some(rule) = self
            .map
            .iter()
            .filter(|r| is_within(project, &r.from))
            .max_by_key(|r| normal_form(&r.from).len())
        else {
            return project.to_string();
        };
        let from = normal_form(&rule.from);
        let rest = normal_form(project)
            .get(from.trim_end_matches('/').len()..)
            .unwrap_or("")
            .trim_start_matches('/')
            .to_string();
        if rest.is_empty() {
            rule.to.clone()
        } else {
            let sep = if super::project_path::is_windows_path(&rule.to) {
                '\\'
            } else {
                '/'
            };
            let rest = if sep == '\\' {
                rest.replace('/', "\\")
            } else {
                rest
            };
            format!("{}{sep}{rest}", rule.to.trim_end_matches(['/', '\\']))
        }
    }
}

/// The machine among `machines` whose copy holds `path`, if any (`None`: this machine's own history).
pub fn machine_of<'a>(machines: &'a [Machine], path: &Path) -> Option<&'a Machine> {
    machines.iter().find(|m| m.holds(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_reads_the_other_machines_paths_as_this_ones() {
        let m = Machine {
            name: "devbox".into(),
            dir: "/idx/remotes/devbox".into(),
            map: vec![
                PathMap {
                    from: "/home/me/src".into(),
                    to: "/Users/me/code".into(),
                },
                PathMap {
                    from: "/home/me/src/app".into(),
                    to: "C:\\work\\app".into(),
                },
            ],
        };
        assert_eq!(m.map_project("/home/me/src/web"), "/Users/me/code/web");
        assert_eq!(
            m.map_project("/home/me/src/web/api"),
            "/Users/me/code/web/api"
        );
        assert_eq!(m.map_project("/home/me/src"), "/Users/me/code");
        assert_eq!(m.map_project("/home/me/src/app/ui"), "C:\\work\\app\\ui");
        assert_eq!(m.map_project("/home/me/srcx"), "/home/me/srcx");
        assert_eq!(m.map_project("/opt/x"), "/opt/x");
        assert!(m.holds(Path::new("/idx/remotes/devbox/projects/-a/s.jsonl")));
        assert!(!m.holds(Path::new("/idx/remotes/devbox2/projects/-a/s.jsonl")));
        let all = [m];
        assert_eq!(
            machine_of(&all, Path::new("/idx/remotes/devbox/projects/x")).map(|m| m.name.as_str()),
            Some("devbox")
        );
        assert!(machine_of(&all, Path::new("/home/me/.claude/projects/x")).is_none());
    }
}
