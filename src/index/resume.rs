//! Where reading a grown transcript resumes, so that an append costs the parsing and embedding of the appended
//! lines, not of the whole file: at the start of its last message when that is an assistant reply (later lines
//! of the same reply merge into it), else at the end of what was consumed.

use super::records::Resume;
use crate::transcript::{Role, Session};

/// What a stream (one conversation in one file) continues from.
pub(super) struct StreamEnd {
    pub seq: u32,
    pub prev_text: String,
    pub last: Option<LastMessage>,
}

/// The last message a stream read, where a resumed read may start again.
pub(super) struct LastMessage {
    pub offset: u64,
    pub role: Role,
    pub window: u32,
    pub seq: u32,
    pub uuid: String,
    /// Its live version's gid and content hash.
    pub gid: u64,
    pub hash: u64,
    /// The neighbour text in front of it.
    pub prev_text: String,
}

/// Where reading `file` resumes: at the start of its last message when that is an assistant reply (later lines
/// of the same reply merge into it), else at the end of what was consumed.
pub(super) fn resume_of(
    s: &Session,
    is_main: bool,
    consumed: u64,
    end: Option<StreamEnd>,
    before: Option<&Resume>,
) -> Resume {
    let ms = |b: &Option<chrono::DateTime<chrono::Utc>>| b.map(|t| t.timestamp_millis());
    let all_boundaries: Vec<Option<i64>> = if is_main {
        s.boundaries.iter().map(ms).collect()
    } else {
        Vec::new()
    };
    let end_window = if is_main { s.windows - 1 } else { 0 };
    let at_end = |seq: u32, prev_text: String| Resume {
        offset: consumed,
        window: end_window,
        boundaries: all_boundaries.clone(),
        seq,
        prev_text,
        last: None,
        project: s.project.clone(),
    };
    match end {
        Some(StreamEnd {
            last: Some(last), ..
        }) if last.role == Role::Assistant => Resume {
            offset: last.offset,
            window: if is_main { last.window } else { 0 },
            boundaries: all_boundaries
                .iter()
                .take(if is_main { last.window as usize } else { 0 })
                .copied()
                .collect(),
            seq: last.seq,
            prev_text: last.prev_text,
            last: Some((last.uuid, last.gid, last.hash)),
            project: s.project.clone(),
        },
        Some(StreamEnd {
            last: Some(_),
            seq,
            prev_text,
        }) => at_end(seq, prev_text),
        // Nothing read: continue from the earlier state, past what was consumed.
        _ => match before {
            Some(b) if b.last.is_some() => b.clone(),
            Some(b) => at_end(b.seq, b.prev_text.clone()),
            None => at_end(0, String::new()),
        },
    }
}
