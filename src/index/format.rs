//! Every index file starts with a magic, a format version, a payload length and a CRC32 of the payload, so a
//! truncated, damaged or foreign file is detected before anything in it is trusted.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Version of every ghola index file format; bump it when a layout changes.
/// (1: content inside the segment metadata; 2: compact metadata, separate text and hash files.)
pub const FORMAT_VERSION: u32 = 2;
/// Bytes before the payload: magic (8), version (4), payload length (8), crc32 (4).
pub const HEADER_LEN: usize = 24;

/// Why an index file cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{0}: I/O error: {1}")]
    Io(String, std::io::Error),
    #[error("{0}: not a ghola {1} file (bad magic)")]
    Magic(String, &'static str),
    #[error("{0}: format version {1}, this ghola reads {FORMAT_VERSION}")]
    Version(String, u32),
    #[error("{0}: truncated or damaged (length or checksum mismatch)")]
    Damaged(String),
    #[error("{0}: cannot decode: {1}")]
    Decode(String, String),
}

fn header(magic: &[u8; 8], version: u32, payload: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(magic);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[12..20].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[20..24].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    h
}

/// A framed file written as its payload comes (a merge's vector matrix, too big to hold): a placeholder header,
/// the payload streamed with its CRC32 kept running, then the real header written over the placeholder and the
/// file fsynced by [`FramedWriter::finish`].
pub struct FramedWriter {
    file: std::io::BufWriter<File>,
    magic: [u8; 8],
    len: u64,
    crc: crc32fast::Hasher,
}

impl FramedWriter {
    /// Creates `path` (truncating it) with room for the header.
    pub fn create(path: &Path, magic: &[u8; 8]) -> std::io::Result<Self> {
        let mut file = std::io::BufWriter::with_capacity(
            1 << 20,
            fs_err::File::create(path).map(fs_err::File::into_file)?,
        );
        file.write_all(&[0u8; HEADER_LEN])?;
        Ok(Self {
            file,
            magic: *magic,
            len: 0,
            crc: crc32fast::Hasher::new(),
        })
    }

    /// Appends payload bytes.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc.update(bytes);
        self.len += bytes.len() as u64;
        self.file.write_all(bytes)
    }

    /// Payload bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no payload was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes the header and fsyncs.
    pub fn finish(self) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let mut f = self.file.into_inner().map_err(|e| e.into_error())?;
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&self.magic);
        h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        h[12..20].copy_from_slice(&self.len.to_le_bytes());
        h[20..24].copy_from_slice(&self.crc.finalize().to_le_bytes());
        f.seek(SeekFrom::Start(0))?;
        f.write_all(&h)?;
        f.sync_all()
    }
}

/// Writes `payload` framed to `path` and fsyncs it (the caller renames it into place).
pub fn write_framed(path: &Path, magic: &[u8; 8], payload: &[u8]) -> std::io::Result<()> {
    write_framed_version(path, magic, FORMAT_VERSION, payload)
}

/// [`write_framed`] with an explicit format version (tests write old formats to exercise upgrades).
pub fn write_framed_version(
    path: &Path,
    magic: &[u8; 8],
    version: u32,
    payload: &[u8],
) -> std::io::Result<()> {
    let mut f = fs_err::File::create(path).map(fs_err::File::into_file)?;
    f.write_all(&header(magic, version, payload))?;
    f.write_all(payload)?;
    f.sync_all()
}

/// Checks magic, version and payload length of `bytes`, not the checksum (for large memory-mapped files whose
/// checksum is verified on a schedule; see `segment::Verify`); returns the length-checked payload.
pub fn check_header<'a>(
    name: &str,
    bytes: &'a [u8],
    magic: &[u8; 8],
    what: &'static str,
) -> Result<&'a [u8], FormatError> {
    check_header_version(name, bytes, magic, what, FORMAT_VERSION)
}

/// [`check_header`] for a given format version (the upgrade reads older files).
fn check_header_version<'a>(
    name: &str,
    bytes: &'a [u8],
    magic: &[u8; 8],
    what: &'static str,
    expected: u32,
) -> Result<&'a [u8], FormatError> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != magic {
        return Err(if bytes.len() < 8 {
            FormatError::Damaged(name.into())
        } else {
            FormatError::Magic(name.into(), what)
        });
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != expected {
        return Err(FormatError::Version(name.into(), version));
    }
    let len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    let payload = &bytes[HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err(FormatError::Damaged(name.into()));
    }
    Ok(payload)
}

/// Checks the whole frame of `bytes` (header and checksum) and returns the payload.
pub fn check_framed<'a>(
    name: &str,
    bytes: &'a [u8],
    magic: &[u8; 8],
    what: &'static str,
) -> Result<&'a [u8], FormatError> {
    check_framed_version(name, bytes, magic, what, FORMAT_VERSION)
}

/// [`check_framed`] for a given format version.
fn check_framed_version<'a>(
    name: &str,
    bytes: &'a [u8],
    magic: &[u8; 8],
    what: &'static str,
    version: u32,
) -> Result<&'a [u8], FormatError> {
    let payload = check_header_version(name, bytes, magic, what, version)?;
    let crc = u32::from_le_bytes(bytes[20..24].try_into().unwrap());
    if crc32fast::hash(payload) != crc {
        return Err(FormatError::Damaged(name.into()));
    }
    Ok(payload)
}

/// Reads a framed file whole and checks it.
pub fn read_framed(
    path: &Path,
    magic: &[u8; 8],
    what: &'static str,
) -> Result<Vec<u8>, FormatError> {
    read_framed_version(path, magic, what, FORMAT_VERSION)
}

/// [`read_framed`] for a given format version (the upgrade reads older files).
pub fn read_framed_version(
    path: &Path,
    magic: &[u8; 8],
    what: &'static str,
    version: u32,
) -> Result<Vec<u8>, FormatError> {
    let name = path.display().to_string();
    let mut bytes = fs_err::read(path).map_err(|e| FormatError::Io(name.clone(), e))?;
    check_framed_version(&name, &bytes, magic, what, version)?;
    bytes.drain(..HEADER_LEN);
    Ok(bytes)
}

/// The format version in a framed file's header, if it has this magic.
pub fn version_of(path: &Path, magic: &[u8; 8]) -> Option<u32> {
    use std::io::Read;
    let mut h = [0u8; 12];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut h))
        .ok()?;
    (&h[..8] == magic).then(|| u32::from_le_bytes(h[8..12].try_into().unwrap()))
}

/// bincode 2 (serde mode, standard config): compact, and pinned to the 2.0.x line.
pub fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, bincode::config::standard())
        .expect("in-memory encoding cannot fail")
}

/// Decodes a bincode payload, naming the file on failure.
pub fn decode<T: serde::de::DeserializeOwned>(
    name: &str,
    payload: &[u8],
) -> Result<T, FormatError> {
    bincode::serde::decode_from_slice(payload, bincode::config::standard())
        .map(|(v, _)| v)
        .map_err(|e| FormatError::Decode(name.into(), e.to_string()))
}

/// fsyncs a directory so that renames inside it are durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        fs_err::File::open(dir)?.sync_all()
    }
    // Windows cannot open a directory as a file (access denied), and NTFS journals its metadata: a rename is
    // durable once the call returns, so there is nothing to flush.
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_file_is_the_same_as_one_written_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        write_framed(&a, b"GHOLATST", b"hello, world").unwrap();
        let mut w = FramedWriter::create(&b, b"GHOLATST").unwrap();
        w.write(b"hello, ").unwrap();
        w.write(b"world").unwrap();
        w.finish().unwrap();
        assert_eq!(fs_err::read(&a).unwrap(), fs_err::read(&b).unwrap());
    }

    #[test]
    fn every_damage_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        write_framed(&p, b"GHOLATST", b"hello payload").unwrap();
        assert_eq!(
            read_framed(&p, b"GHOLATST", "test").unwrap(),
            b"hello payload"
        );
        let good = fs_err::read(&p).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(
                check_framed("f", &bad, b"GHOLATST", "test").is_err(),
                "flip at {i} undetected"
            );
        }
        for n in 0..good.len() {
            assert!(
                check_framed("f", &good[..n], b"GHOLATST", "test").is_err(),
                "truncation to {n} undetected"
            );
        }
    }
}
