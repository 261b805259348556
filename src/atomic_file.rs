//! Files replaced whole: a reader sees the old bytes or the new, never a mix, and a crash or a full disk leaves
//! the old file as it was. The notes store, the work loop's logs and the settings file are written this way (the
//! index has its own framed, checksummed files; see `index::format`).

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: a temporary file beside it, fsynced, then renamed over it. On failure
/// (no space left, say) the temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
