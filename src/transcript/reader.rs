//! Streaming a transcript file from a byte offset.
//!
//! Claude Code appends to a transcript while a session runs, so the reader must (a) resume where the last
//! read stopped, (b) never consume a final line that is still being written, and (c) keep memory flat whatever
//! the file size.
//!
//! A final line without a newline is consumed when it is a complete JSON object ([`is_complete_line`]), at
//! once: no quiet period is needed, because no proper prefix of a JSON object is itself a JSON object, so the
//! only thing a writer can still add to such a line is its newline (or further lines). When the newline arrives
//! later, the next read starts at it: an empty line, skipped, so nothing is read twice. A torn last line (a
//! write in progress, or a file cut short) is left unconsumed and reported as `pending_bytes`. Transcripts that
//! passed through other tools (backups, copies between machines) often end this way; Claude Code's own files
//! end in a newline. Lines are read straight from the file into one reusable buffer (a line is copied once, from the
//! kernel into that buffer) and parsed in place.

use super::entry::{LineKind, RawEntry, is_known_bookkeeping, is_wanted, peek_type};
use super::source::Sources;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Initial read buffer; lines longer than this grow it once to the size they need.
const INITIAL_BUFFER: usize = 256 * 1024;

/// Lines longer than this are skipped (and counted) instead of held in memory: no real conversational line
/// comes near it, and a runaway line must not take the machine's memory with it.
pub const MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// What reading one file found wrong or skipped; shown per file by `ghola sessions --json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileReport {
    /// Complete lines read (each ending in a newline).
    pub lines: u64,
    /// Lines that are not a JSON object (malformed JSON, bare values, invalid UTF-8 in the type).
    pub malformed_lines: u64,
    /// Lines of a wanted type whose fields did not have the expected shape.
    pub invalid_entries: u64,
    /// Lines longer than [`MAX_LINE_BYTES`], skipped unread.
    pub oversized_lines: u64,
    /// Entry types ghola does not know, with their counts (new Claude Code versions add some).
    pub unknown_types: BTreeMap<String, u64>,
    /// Content blocks of a type ghola does not know.
    pub unknown_blocks: u64,
    /// Bytes at the end of the file that form an unfinished line: no newline and not a complete JSON object
    /// (not consumed).
    pub pending_bytes: u64,
    /// The file was shorter than the offset we were asked to resume from: it was rewritten or truncated.
    pub shrunk: bool,
    /// An I/O error that stopped the read early (the entries before it are kept).
    pub io_error: Option<String>,
}

impl FileReport {
    /// Lines that were skipped for being broken in some way (the number users care about).
    pub fn skipped_lines(&self) -> u64 {
        self.malformed_lines + self.invalid_entries + self.oversized_lines
    }

    /// Adds another report's counts into this one.
    pub fn absorb(&mut self, other: &FileReport) {
        self.lines += other.lines;
        self.malformed_lines += other.malformed_lines;
        self.invalid_entries += other.invalid_entries;
        self.oversized_lines += other.oversized_lines;
        for (k, v) in &other.unknown_types {
            *self.unknown_types.entry(k.clone()).or_default() += v;
        }
        self.unknown_blocks += other.unknown_blocks;
        self.pending_bytes += other.pending_bytes;
        self.shrunk |= other.shrunk;
        if self.io_error.is_none() {
            self.io_error.clone_from(&other.io_error);
        }
    }
}

/// The result of a read: where to resume next time, and what went wrong.
#[derive(Debug, Clone, Default)]
pub struct ReadOutcome {
    /// Byte offset just past the last complete line consumed; pass it as `offset` next time.
    pub consumed: u64,
    pub report: FileReport,
}

/// A wanted entry together with the byte offset of its line (stable identity across incremental reads).
#[derive(Debug, Clone)]
pub struct EntryAt {
    pub offset: u64,
    pub entry: RawEntry,
}

/// Streams the wanted entries of `path` from byte `offset`, calling `visit` for each.
///
/// Never fails: I/O errors end the read early and are recorded in the report. A final line without a
/// newline is consumed only when it is a complete JSON object (see the module doc); otherwise it is left
/// unconsumed and counted in `pending_bytes`. When the file is shorter than `offset` it was rewritten: nothing is read and
/// `report.shrunk` is set, so the caller can start over from 0.
pub fn stream_entries(
    src: &Sources,
    path: &Path,
    offset: u64,
    visit: impl FnMut(EntryAt),
) -> ReadOutcome {
    stream_entries_capped(src, path, offset, MAX_LINE_BYTES, visit)
}

/// [`stream_entries`] with a chosen line-length cap (tests use a small one).
fn stream_entries_capped(
    src: &Sources,
    path: &Path,
    offset: u64,
    max_line: usize,
    mut visit: impl FnMut(EntryAt),
) -> ReadOutcome {
    stream_lines_capped(src, path, offset, max_line, |offset, bytes, report| {
        classify(bytes, offset, report, &mut visit)
    })
}

/// Streams every complete line of `path` from byte `offset` (with its offset), whatever its type: for
/// readers that need the bookkeeping lines too, such as the replay's parent chain, which runs through
/// `progress` and `attachment` entries. Same guarantees as [`stream_entries`]; oversized lines are counted
/// and skipped.
pub fn stream_lines(
    src: &Sources,
    path: &Path,
    offset: u64,
    mut visit: impl FnMut(u64, &[u8]),
) -> ReadOutcome {
    stream_lines_capped(src, path, offset, MAX_LINE_BYTES, |offset, bytes, _| {
        visit(offset, trim_line(bytes))
    })
}

fn stream_lines_capped(
    src: &Sources,
    path: &Path,
    offset: u64,
    max_line: usize,
    mut visit: impl FnMut(u64, &[u8], &mut FileReport),
) -> ReadOutcome {
    let mut outcome = ReadOutcome {
        consumed: offset,
        report: FileReport::default(),
    };
    let (mut file, len) = match src.open(path) {
        Ok(f) => f,
        Err(e) => {
            outcome.report.io_error = Some(format!("open: {e}"));
            return outcome;
        }
    };
    if len < offset {
        outcome.report.shrunk = true;
        return outcome;
    }
    if let Err(e) = file.seek(SeekFrom::Start(offset)) {
        outcome.report.io_error = Some(format!("seek: {e}"));
        return outcome;
    }
    let mut lines = LineSplitter::new(file, offset, len, max_line);
    loop {
        match lines.next_line() {
            Ok(Some(Line::Complete { offset, bytes })) => {
                outcome.report.lines += 1;
                visit(offset, bytes, &mut outcome.report);
            }
            Ok(Some(Line::Oversized)) => {
                outcome.report.lines += 1;
                outcome.report.oversized_lines += 1;
            }
            Ok(None) => break,
            Err(e) => {
                outcome.report.io_error = Some(format!("read: {e}"));
                break;
            }
        }
    }
    if outcome.report.io_error.is_none()
        && let Some((offset, bytes)) = lines.complete_tail()
    {
        outcome.report.lines += 1;
        visit(offset, bytes, &mut outcome.report);
        lines.consumed = lines.limit;
        lines.pending = 0;
    }
    outcome.consumed = lines.consumed;
    outcome.report.pending_bytes = lines.pending;
    outcome
}

/// Whether `bytes`, a line without its newline, is a whole JSON object: a last line that is one is consumed
/// even without a newline, as nothing but the newline can still be added to it.
pub fn is_complete_line(bytes: &[u8]) -> bool {
    let bytes = trim_line(bytes);
    bytes.first() == Some(&b'{')
        && bytes.last() == Some(&b'}')
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// Reads the wanted entries of a file into memory (for one session at a time; see [`stream_entries`]).
pub fn read_entries(src: &Sources, path: &Path, offset: u64) -> (Vec<EntryAt>, ReadOutcome) {
    let mut entries = Vec::new();
    let outcome = stream_entries(src, path, offset, |e| entries.push(e));
    (entries, outcome)
}

fn classify(bytes: &[u8], offset: u64, report: &mut FileReport, visit: &mut impl FnMut(EntryAt)) {
    let bytes = trim_line(bytes);
    if bytes.is_empty() {
        return;
    }
    match peek_type(bytes) {
        LineKind::NotAnObject => report.malformed_lines += 1,
        LineKind::Untyped => *report.unknown_types.entry("<none>".into()).or_default() += 1,
        LineKind::Typed(kind) => {
            if is_wanted(&kind) {
                match serde_json::from_slice::<RawEntry>(bytes) {
                    Ok(entry) => visit(EntryAt { offset, entry }),
                    Err(_) => report.invalid_entries += 1,
                }
            } else if !is_known_bookkeeping(&kind) {
                *report.unknown_types.entry(kind.into_owned()).or_default() += 1;
            }
        }
    }
}

fn trim_line(mut b: &[u8]) -> &[u8] {
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

enum Line<'a> {
    Complete { offset: u64, bytes: &'a [u8] },
    Oversized,
}

/// Splits a file into newline-terminated lines with one buffer, reading each byte from the file once.
struct LineSplitter<R> {
    src: R,
    buf: Vec<u8>,
    /// Valid bytes in `buf` are `start..end`.
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    pos: u64,
    /// File length when the read began: bytes appended later are left for the next read.
    limit: u64,
    /// Offset just past the last complete line.
    consumed: u64,
    /// Unterminated bytes left at the end.
    pending: u64,
    /// The pending bytes are all in the buffer (`buf[start..end]`, not the rest of a skipped oversized line).
    tail_buffered: bool,
    eof: bool,
    /// Lines longer than this are skipped.
    max_line: usize,
}

impl<R: Read> LineSplitter<R> {
    fn new(src: R, offset: u64, limit: u64, max_line: usize) -> Self {
        let first = (limit - offset).min(INITIAL_BUFFER as u64) as usize;
        Self {
            src,
            buf: vec![0; first.max(4096)],
            start: 0,
            end: 0,
            pos: offset,
            limit,
            consumed: offset,
            pending: 0,
            tail_buffered: false,
            eof: false,
            max_line,
        }
    }

    fn file_end(&self) -> u64 {
        self.pos + (self.end - self.start) as u64
    }

    /// Reads more bytes into the buffer; returns false at the end of what may be read.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let remaining = self.limit.saturating_sub(self.file_end());
        if remaining == 0 {
            self.eof = true;
            return Ok(false);
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                // One long line fills the buffer: grow fourfold (never past the file's end or the line cap).
                // Large buffers live in their own mapping, which the allocator moves by remapping pages, so
                // the bytes already read are not copied again.
                let want = (self.buf.len() as u64 * 4)
                    .min(self.buf.len() as u64 + remaining)
                    .min(self.max_line as u64 + 1) as usize;
                if want <= self.buf.len() {
                    return Ok(true);
                }
                self.buf.resize(want, 0);
            }
        }
        let room = (self.buf.len() - self.end).min(remaining.min(usize::MAX as u64) as usize);
        let n = loop {
            match self.src.read(&mut self.buf[self.end..self.end + room]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            // The file shrank while we read it: stop at what we have.
            self.eof = true;
            return Ok(false);
        }
        self.end += n;
        Ok(true)
    }

    fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.shrink_if_idle();
        let mut scanned = 0;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start + scanned..self.end]) {
                let line_start = self.start;
                let line_end = self.start + scanned + i;
                let offset = self.pos;
                let len = (line_end + 1 - line_start) as u64;
                self.start = line_end + 1;
                self.pos += len;
                self.consumed = self.pos;
                return Ok(Some(Line::Complete {
                    offset,
                    bytes: &self.buf[line_start..line_end],
                }));
            }
            scanned = self.end - self.start;
            if scanned > self.max_line {
                return self
                    .skip_oversized()
                    .map(|found| found.then_some(Line::Oversized));
            }
            if !self.fill()? {
                self.pending = (self.end - self.start) as u64;
                self.tail_buffered = true;
                return Ok(None);
            }
        }
    }

    /// The unterminated last line, with its offset, when it runs to the length the read began with and is a
    /// complete JSON object ([`is_complete_line`]).
    fn complete_tail(&self) -> Option<(u64, &[u8])> {
        let tail = &self.buf[self.start..self.end];
        (self.pending > 0
            && self.tail_buffered
            && self.file_end() == self.limit
            && is_complete_line(tail))
        .then_some((self.pos, tail))
    }

    /// Discards the rest of an oversized line without buffering it. Returns false when the line has no end
    /// yet (it stays pending and unconsumed).
    fn skip_oversized(&mut self) -> io::Result<bool> {
        let line_pos = self.pos;
        // `pos` is the file offset of `buf[start]`; dropping the buffered bytes moves it past them.
        self.pos += (self.end - self.start) as u64;
        self.start = 0;
        self.end = 0;
        self.buf.truncate(INITIAL_BUFFER);
        self.buf.shrink_to_fit();
        loop {
            if !self.fill()? {
                self.pending = self.pos - line_pos + self.end as u64;
                return Ok(false);
            }
            if let Some(i) = memchr::memchr(b'\n', &self.buf[..self.end]) {
                self.start = i + 1;
                self.pos += (i + 1) as u64;
                self.consumed = self.pos;
                return Ok(true);
            }
            self.pos += self.end as u64;
            self.end = 0;
        }
    }

    /// After a huge line, give the memory back so that the reader stays flat.
    fn shrink_if_idle(&mut self) {
        if self.buf.len() > 4 * INITIAL_BUFFER && self.end - self.start <= INITIAL_BUFFER {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            self.buf.truncate(INITIAL_BUFFER);
            self.buf.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(content: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        f.flush().unwrap();
        f
    }

    const USER: &str = r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}"#;

    #[test]
    fn partial_last_line_is_not_consumed() {
        let body = format!("{USER}\n{{\"type\":\"user\",\"uuid\":\"u2\"");
        let f = write(body.as_bytes());
        let (entries, out) = read_entries(&Sources::disk(), f.path(), 0);
        assert_eq!(entries.len(), 1);
        assert_eq!(out.consumed, USER.len() as u64 + 1);
        assert_eq!(out.report.pending_bytes, body.len() as u64 - out.consumed);
    }

    #[test]
    fn a_complete_last_line_without_newline_is_consumed_once() {
        let second = USER.replace("u1", "u2");
        let body = format!("{USER}\n{second}");
        let f = write(body.as_bytes());
        let (entries, out) = read_entries(&Sources::disk(), f.path(), 0);
        let ids: Vec<_> = entries
            .iter()
            .map(|e| e.entry.uuid.clone().unwrap())
            .collect();
        assert_eq!(ids, ["u1", "u2"]);
        assert_eq!(out.consumed, body.len() as u64);
        assert_eq!(out.report.pending_bytes, 0);
        assert_eq!(out.report.lines, 2);
        // The newline arrives, then one more line: read from where the last read stopped, only the new line.
        let third = USER.replace("u1", "u3");
        let grown = write(format!("{body}\n{third}\n").as_bytes());
        let (more, out2) = read_entries(&Sources::disk(), grown.path(), out.consumed);
        let ids: Vec<_> = more.iter().map(|e| e.entry.uuid.clone().unwrap()).collect();
        assert_eq!(ids, ["u3"]);
        assert_eq!(out2.consumed, body.len() as u64 + third.len() as u64 + 2);
        // Trailing whitespace (a CR) is part of the line, not a tear.
        let cr = write(format!("{USER}\r").as_bytes());
        let (entries, out) = read_entries(&Sources::disk(), cr.path(), 0);
        assert_eq!((entries.len(), out.report.pending_bytes), (1, 0));
    }

    #[test]
    fn a_torn_last_line_is_pending_whatever_it_looks_like() {
        for torn in [
            r#"{"type":"user""#,
            r#"{"type":"user"}}"#,
            "{",
            "}",
            r#"{"a":1} {"b":2}"#,
        ] {
            let body = format!("{USER}\n{torn}");
            let f = write(body.as_bytes());
            let (entries, out) = read_entries(&Sources::disk(), f.path(), 0);
            assert_eq!(entries.len(), 1, "{torn}");
            assert_eq!(out.consumed, USER.len() as u64 + 1, "{torn}");
            assert_eq!(out.report.pending_bytes, torn.len() as u64, "{torn}");
        }
    }

    #[test]
    fn resumes_from_offset() {
        let body = format!("{USER}\n{}\n", USER.replace("u1", "u2"));
        let f = write(body.as_bytes());
        let (first, out) = read_entries(&Sources::disk(), f.path(), 0);
        assert_eq!(first.len(), 2);
        let (again, out2) = read_entries(&Sources::disk(), f.path(), out.consumed);
        assert!(again.is_empty());
        assert_eq!(out2.consumed, out.consumed);
        let (second, _) = read_entries(&Sources::disk(), f.path(), USER.len() as u64 + 1);
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].entry.uuid.as_deref(), Some("u2"));
        assert_eq!(second[0].offset, USER.len() as u64 + 1);
    }

    #[test]
    fn shrunk_file_is_reported() {
        let f = write(format!("{USER}\n").as_bytes());
        let (entries, out) = read_entries(&Sources::disk(), f.path(), 10_000);
        assert!(entries.is_empty());
        assert!(out.report.shrunk);
    }

    #[test]
    fn bad_lines_are_counted_not_fatal() {
        let mut body = Vec::new();
        body.extend_from_slice(b"not json\n");
        body.extend_from_slice(b"\"str\"\n");
        body.extend_from_slice(b"{\"type\":\"user\",\"message\":{\"content\":\"\xff\xfe\"}}\n");
        body.extend_from_slice(b"{\"type\":\"user\",\"uuid\":42}\n");
        body.extend_from_slice(b"{\"type\":\"brand-new-kind\"}\n");
        body.extend_from_slice(b"{\"type\":\"progress\",\"data\":{}}\n");
        body.extend_from_slice(b"\n");
        body.extend_from_slice(USER.as_bytes());
        body.push(b'\n');
        let f = write(&body);
        let (entries, out) = read_entries(&Sources::disk(), f.path(), 0);
        assert_eq!(entries.len(), 1);
        assert_eq!(out.report.malformed_lines, 2);
        assert_eq!(out.report.invalid_entries, 2);
        assert_eq!(out.report.unknown_types.get("brand-new-kind"), Some(&1));
        assert_eq!(out.consumed, body.len() as u64);
    }

    fn long_user(uuid: &str, len: usize) -> String {
        let text = "x".repeat(len);
        format!(
            r#"{{"type":"user","uuid":"{uuid}","message":{{"role":"user","content":"{text}"}}}}"#
        )
    }

    #[test]
    fn long_lines_are_read_whole() {
        // Lines of 3x and 20x the buffer, separated by short ones: the buffer grows, then shrinks back.
        let body = format!(
            "{USER}\n{}\n{USER}\n{}\n{USER}\n{}\n",
            long_user("big", 3 * INITIAL_BUFFER),
            long_user("huge", 20 * INITIAL_BUFFER),
            long_user("big2", 5 * INITIAL_BUFFER),
        );
        let f = write(body.as_bytes());
        let (entries, out) = read_entries(&Sources::disk(), f.path(), 0);
        let ids: Vec<_> = entries
            .iter()
            .map(|e| e.entry.uuid.clone().unwrap())
            .collect();
        assert_eq!(ids, ["u1", "big", "u1", "huge", "u1", "big2"]);
        assert_eq!(out.consumed, body.len() as u64);
        assert_eq!(out.report.skipped_lines(), 0);
    }

    #[test]
    fn oversized_lines_are_skipped_and_counted() {
        let cap = 2 * INITIAL_BUFFER;
        let body = format!(
            "{USER}\n{}\n{USER}\n{}",
            long_user("big", 3 * cap),
            long_user("tail", 3 * cap)
        );
        let f = write(body.as_bytes());
        let mut ids = Vec::new();
        let out = stream_entries_capped(&Sources::disk(), f.path(), 0, cap, |e| {
            ids.push(e.entry.uuid.unwrap())
        });
        assert_eq!(ids, ["u1", "u1"]);
        assert_eq!(out.report.oversized_lines, 1);
        // The unfinished oversized last line stays pending, not consumed.
        let tail_start = body.rfind('\n').unwrap() as u64 + 1;
        assert_eq!(out.consumed, tail_start);
        assert_eq!(out.report.pending_bytes, body.len() as u64 - tail_start);
    }

    #[test]
    fn missing_file_is_an_error_in_the_report() {
        let out = stream_entries(
            &Sources::disk(),
            Path::new("/nonexistent/ghola/x.jsonl"),
            0,
            |_| {},
        );
        assert!(out.report.io_error.is_some());
        assert_eq!(out.consumed, 0);
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        fn line() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                Just(USER.as_bytes().to_vec()),
                Just(br#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"a"}]}}"#.to_vec()),
                Just(br#"{"type":"progress","data":{"x":[1,2,{"y":"}"}]}}"#.to_vec()),
                proptest::collection::vec(any::<u8>(), 0..200),
                "[ -~]{0,120}".prop_map(|s| format!("{{\"type\":{s}").into_bytes()),
            ]
        }

        proptest! {
            // proptest's default: 256 cases, or `PROPTEST_CASES` (its own setting) for a longer run.
            #![proptest_config(ProptestConfig::default())]
            /// Arbitrary lines never panic the reader; reading in two steps (as an index that resumes from
            /// `consumed` does) finds exactly the entries of one read; nothing past the last newline is consumed.
            #[test]
            fn any_bytes_read_consistently(lines in proptest::collection::vec(line(), 0..30), cut in 0usize..4000) {
                let mut body = Vec::new();
                for l in &lines {
                    body.extend_from_slice(l);
                    body.push(b'\n');
                }
                let cut = cut.min(body.len());
                let f = write(&body[..cut]);
                let (first, out1) = read_entries(&Sources::disk(), f.path(), 0);
                let last_nl = body[..cut].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                // A cut that leaves a whole JSON object as the last line consumes it; any other cut stops at
                // the last newline.
                let expected = if is_complete_line(&body[last_nl..cut]) { cut } else { last_nl };
                prop_assert_eq!(out1.consumed, expected as u64);
                prop_assert_eq!(out1.report.pending_bytes, (cut - expected) as u64);
                let f2 = write(&body);
                let (rest, out2) = read_entries(&Sources::disk(), f2.path(), out1.consumed);
                let (whole, out3) = read_entries(&Sources::disk(), f2.path(), 0);
                prop_assert_eq!(out2.consumed, body.len() as u64);
                prop_assert_eq!(out3.consumed, body.len() as u64);
                let split: Vec<u64> = first.iter().chain(rest.iter()).map(|e| e.offset).collect();
                let once: Vec<u64> = whole.iter().map(|e| e.offset).collect();
                prop_assert_eq!(split, once);
            }
        }
    }
}
