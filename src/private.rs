//! Only you: what ghola keeps (the index, the archive, the notes, the settings) is readable by this user alone.
//!
//! ghola's archive holds every transcript byte, also after Claude Code deleted its copy, so a folder another
//! local user can read hands them the whole history. On Unix, every folder ghola keeps is made 0700 and every
//! file in it 0600: [`tighten`] runs on each index update (under its lock) and on each notes write, so an
//! install whose folders an older ghola (or a copy) left loose is made private the next time ghola writes there
//! (a folder already 0700 costs a `stat`); [`loose`] says what is not (for `ghola status`, as OpenSSH refuses a readable key).
//! The binary also sets the umask to 077 at start ([`restrict_new_files`]), so what it creates is private from
//! the first byte; the programs it starts for the user (Claude Code in `ghola start`) get the user's umask back
//! ([`with_user_umask`]). Elsewhere (Windows) a user's profile folders are private already, and these do
//! nothing.

use std::path::{Path, PathBuf};

/// The user's umask, as it was before [`restrict_new_files`].
#[cfg(unix)]
static USER_UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Makes every file and folder this process creates from now on private (umask 077), remembering the user's
/// umask for the programs ghola starts on their behalf ([`with_user_umask`]). Called once, by the binary, before
/// anything is written; the library alone (tests, embedders of it) leaves the umask alone.
pub fn restrict_new_files() {
    #[cfg(unix)]
    {
        // SAFETY: umask only swaps the process's file-creation mask; it cannot fail.
        let old = unsafe { libc::umask(0o077) };
        let _ = USER_UMASK.set(old as u32);
    }
}

/// Has `cmd` create files under the user's own umask: Claude Code editing their project (`ghola start`) must
/// leave files as the user's other tools do, not private to them.
pub fn with_user_umask(cmd: &mut std::process::Command) {
    #[cfg(unix)]
    if let Some(&mask) = USER_UMASK.get() {
        use std::os::unix::process::CommandExt;
        // SAFETY: the hook runs in the child between fork and exec and calls only umask, which is
        // async-signal-safe and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(mask as libc::mode_t);
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = cmd;
}

/// Makes `dir` and everything below it private (folders 0700, files 0600); creates `dir` if it is missing.
/// A `dir` already 0700 is taken as done, and costs one `stat`: what ghola writes is created private (the
/// binary's umask), and whatever sits in a 0700 folder is out of other users' reach anyway, so only an install
/// whose folder is loose (an older ghola, a copy) needs the walk. Entries that vanish meanwhile are skipped;
/// the first other failure is returned with its path.
pub fn tighten(dir: &Path) -> std::io::Result<()> {
    fs_err::create_dir_all(dir)?;
    if imp::is_private_dir(dir) {
        return Ok(());
    }
    imp::tighten(dir)
}

/// The entries at or below `dir` that another user of this machine could read or enter (at most `max`), with
/// their modes: what `ghola status` warns about.
pub fn loose(dir: &Path, max: usize) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    imp::loose(dir, max, &mut out);
    out
}

#[cfg(unix)]
mod imp {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    fn wanted(is_dir: bool) -> u32 {
        if is_dir { 0o700 } else { 0o600 }
    }

    pub fn is_private_dir(dir: &Path) -> bool {
        std::fs::symlink_metadata(dir)
            .is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o777 == 0o700)
    }

    pub fn tighten(dir: &Path) -> std::io::Result<()> {
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            set(&d, true)?;
            let entries = match fs_err::read_dir(&d) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for e in entries.flatten() {
                let Ok(kind) = e.file_type() else { continue };
                if kind.is_dir() {
                    todo.push(e.path());
                } else if kind.is_file() {
                    set(&e.path(), false)?;
                }
            }
        }
        Ok(())
    }

    /// Sets `path`'s mode to the private one unless it already is (a chmod is a metadata write).
    fn set(path: &Path, is_dir: bool) -> std::io::Result<()> {
        let meta = match fs_err::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let want = wanted(is_dir);
        if meta.permissions().mode() & 0o777 != want {
            match fs_err::set_permissions(path, std::fs::Permissions::from_mode(want)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub fn loose(dir: &Path, max: usize, out: &mut Vec<(PathBuf, u32)>) {
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            if out.len() >= max {
                return;
            }
            let Ok(meta) = std::fs::symlink_metadata(&d) else {
                continue;
            };
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                out.push((d.clone(), mode));
            }
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let Ok(m) = e.metadata() else { continue };
                if m.is_dir() {
                    todo.push(e.path());
                } else if m.is_file() && m.permissions().mode() & 0o077 != 0 && out.len() < max {
                    out.push((e.path(), m.permissions().mode() & 0o777));
                }
            }
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use std::path::{Path, PathBuf};

    pub fn is_private_dir(_dir: &Path) -> bool {
        true
    }

    pub fn tighten(_dir: &Path) -> std::io::Result<()> {
        Ok(())
    }

    pub fn loose(_dir: &Path, _max: usize, _out: &mut Vec<(PathBuf, u32)>) {}
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_loose_tree_is_made_private_and_then_found_private() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("idx");
        std::fs::create_dir_all(root.join("archive")).unwrap();
        std::fs::write(root.join("manifest.bin"), b"x").unwrap();
        std::fs::write(root.join("archive/pack-000000.gha"), b"y").unwrap();
        for (p, m) in [
            (root.clone(), 0o755),
            (root.join("archive"), 0o755),
            (root.join("manifest.bin"), 0o644),
            (root.join("archive/pack-000000.gha"), 0o644),
        ] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
        }
        assert_eq!(loose(&root, 100).len(), 4);
        tighten(&root).unwrap();
        assert!(loose(&root, 100).is_empty());
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("archive")), 0o700);
        assert_eq!(mode(&root.join("manifest.bin")), 0o600);
        // A missing folder is created private.
        let fresh = tmp.path().join("fresh/notes");
        tighten(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
