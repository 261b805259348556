//! One notion of a project path, whatever OS recorded it. A session's project is the `cwd` Claude Code wrote,
//! and histories move between machines: a Linux `ghola` may hold sessions recorded on Windows (`C:\src\app`)
//! and the other way round. Every project `ghola projects` lists must be one that `--project` and the MCP
//! `project` argument accept, so paths are compared in a normal form: `\` and `/` alike, no trailing separator,
//! no `\\?\` prefix, and Windows paths (a drive letter or a UNC share) compared without regard to case, as
//! Windows compares them.

/// Whether `p` is written the Windows way: a drive letter (`C:`), a UNC share (`\\server`), or a verbatim
/// prefix (`\\?\`).
pub fn is_windows_path(p: &str) -> bool {
    let b = p.as_bytes();
    (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':') || p.starts_with("\\\\")
}

/// The form two project paths are compared in (see the module doc). Unix paths keep their case; a path that is
/// only separators is the root, `/`.
pub fn normal_form(p: &str) -> String {
    let p = p.trim();
    if !is_windows_path(p) {
        let t = p.trim_end_matches('/');
        return if t.is_empty() && p.starts_with('/') {
            "/".into()
        } else {
            t.into()
        };
    }
    // `\\?\C:\x` is `C:\x`; `\\?\UNC\server\share` is `\\server\share`.
    let p = match p.strip_prefix("\\\\?\\") {
        Some(rest) => match rest.strip_prefix("UNC\\") {
            Some(share) => format!("\\\\{share}"),
            None => rest.to_string(),
        },
        None => p.to_string(),
    };
    let unified = p.replace('\\', "/");
    unified.trim_end_matches('/').to_lowercase()
}

/// Whether `path` is `dir` or inside it, comparing whole components in the normal form (so `/a/bc` is not
/// inside `/a/b`, and `C:\src\app\web` is inside `c:/src/app/`).
pub fn is_within(path: &str, dir: &str) -> bool {
    let (path, dir) = (normal_form(path), normal_form(dir));
    if dir == "/" {
        return path.starts_with('/');
    }
    if dir.is_empty() {
        return false;
    }
    path == dir
        || path
            .strip_prefix(dir.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_paths_compare_by_components() {
        assert!(is_within("/a/b", "/a/b"));
        assert!(is_within("/a/b/c", "/a/b/"));
        assert!(!is_within("/a/bc", "/a/b"));
        assert!(!is_within("/A/b", "/a/b"));
        assert!(is_within("/x", "/"));
        assert!(is_within("/x", "///"));
        assert!(!is_within("C:\\x", "/"));
    }

    #[test]
    fn windows_paths_compare_whatever_their_separators_case_and_prefix() {
        let p = "C:\\src\\app\\web";
        for dir in [
            "C:\\src\\app",
            "c:\\src\\app\\",
            "C:/src/app",
            "\\\\?\\C:\\src\\app",
            "C:\\SRC\\App",
        ] {
            assert!(is_within(p, dir), "{dir}");
        }
        assert!(is_within("C:\\Users\\Mischa", "C:\\Users\\Mischa"));
        assert!(!is_within("C:\\src\\application", "C:\\src\\app"));
        assert!(!is_within("D:\\src\\app", "C:\\src\\app"));
        assert!(is_within(
            "\\\\server\\share\\proj",
            "\\\\?\\UNC\\server\\share"
        ));
        assert!(!is_within("/src/app", "C:\\src\\app"));
    }
}
