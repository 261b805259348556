//! One line of a transcript, as Claude Code wrote it.
//!
//! Most lines of a real file are bookkeeping (`progress`, `attachment`, snapshots, API request records), so a
//! line is first read only far enough to learn its `type` ([`peek_type`]); only the few kinds ghola needs are
//! then deserialised in full ([`RawEntry`]). Every field is optional: versions from 1.0.17 to 2.1.3xx disagree
//! on which ones exist.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// What the first pass over a line found.
#[derive(Debug, PartialEq, Eq)]
pub enum LineKind<'a> {
    /// A JSON object whose top-level `type` is this string.
    Typed(Cow<'a, str>),
    /// A JSON object without a string `type`.
    Untyped,
    /// Not a JSON object at all (a bare string, number, array, or malformed text).
    NotAnObject,
}

/// Entry types ghola reads in full; everything else is skipped after [`peek_type`].
pub fn is_wanted(kind: &str) -> bool {
    matches!(
        kind,
        "user" | "assistant" | "system" | "summary" | "custom-title"
    )
}

/// Entry types known to be bookkeeping: skipped quietly. Types in neither list are counted as unknown.
pub fn is_known_bookkeeping(kind: &str) -> bool {
    matches!(
        kind,
        "progress"
            | "attachment"
            | "file-history-snapshot"
            | "queue-operation"
            | "permission-mode"
            | "last-prompt"
            | "atis-latch"
            | "cost-state"
            | "api-request"
            | "api-request-shape"
            | "api-request-blob"
            | "tag"
            | "content-replacement"
            | "tools-used"
            | "mode"
            | "agent-name"
            | "pr-link"
            | "ai-title"
    )
}

/// Reads a line only as far as its top-level `type` key, without building the rest of the object.
///
/// The scan stops as soon as `type` is found (keys before it are skipped with `IgnoredAny`), so a 100 MB
/// `progress` line costs a few hundred bytes of parsing. The price is that the part after `type` is not
/// validated; that is fine because those lines are never used.
pub fn peek_type(line: &[u8]) -> LineKind<'_> {
    let mut found: Option<LineKind<'_>> = None;
    let mut de = serde_json::Deserializer::from_slice(line);
    // The seed stops early by returning an error once it has recorded the answer; the error itself is ignored.
    let _ = PeekSeed { out: &mut found }.deserialize(&mut de);
    found.unwrap_or(LineKind::NotAnObject)
}

struct PeekSeed<'s, 'a> {
    out: &'s mut Option<LineKind<'a>>,
}

impl<'de, 's> DeserializeSeed<'de> for PeekSeed<'s, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 's> Visitor<'de> for PeekSeed<'s, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "type" {
                let value: Value = map.next_value()?;
                *self.out = Some(match value {
                    Value::String(s) => LineKind::Typed(Cow::Owned(s)),
                    _ => LineKind::Untyped,
                });
                return Err(de::Error::custom("stop: type found"));
            }
            map.next_value::<IgnoredAny>()?;
        }
        *self.out = Some(LineKind::Untyped);
        Ok(())
    }
}

/// A conversational or structural entry, deserialised in full.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct RawEntry {
    #[serde(rename = "type")]
    pub kind: String,
    pub uuid: Option<String>,
    pub parent_uuid: Option<String>,
    pub logical_parent_uuid: Option<String>,
    pub session_id: Option<String>,
    pub agent_id: Option<String>,
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    pub timestamp: Option<String>,
    pub is_sidechain: Option<bool>,
    pub is_meta: Option<bool>,
    pub is_compact_summary: Option<bool>,
    pub is_visible_in_transcript_only: Option<bool>,
    pub subtype: Option<String>,
    pub message: Option<RawMessage>,
    /// `summary` lines: the session title.
    pub summary: Option<String>,
    /// `summary` lines: the last message the summary covers (often in another file).
    pub leaf_uuid: Option<String>,
    /// `custom-title` lines: a title the user set with `/rename`.
    pub custom_title: Option<String>,
}

/// The `message` object of a `user` or `assistant` entry.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct RawMessage {
    /// The API message id; assistant entries sharing it are one response written in pieces.
    pub id: Option<String>,
    pub role: Option<String>,
    pub model: Option<String>,
    pub content: Option<RawContent>,
}

/// Message content: a plain string (user prompts, old versions) or a list of blocks.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawContent {
    Text(String),
    Blocks(Vec<RawBlock>),
    /// Anything else (null, a number): treated as empty rather than failing the line.
    Other(IgnoredValue),
}

/// A value whose shape ghola does not use.
#[derive(Debug, Clone, Default)]
pub struct IgnoredValue;

impl<'de> Deserialize<'de> for IgnoredValue {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| IgnoredValue)
    }
}

/// One content block. A flat struct of optional fields rather than a tagged enum: it deserialises without
/// buffering, and an unknown block type is just a block whose fields ghola does not read.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct RawBlock {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
    pub thinking: Option<String>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub input: Option<Value>,
    pub tool_use_id: Option<String>,
    pub content: Option<RawContent>,
    pub is_error: Option<bool>,
    /// `tool_reference` blocks name a tool.
    pub tool_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_finds_type_without_reading_the_rest() {
        let line = br#"{"parentUuid":null,"type":"progress","data":{"type":"x"}, BROKEN"#;
        assert_eq!(peek_type(line), LineKind::Typed(Cow::Borrowed("progress")));
    }

    #[test]
    fn peek_classifies_non_objects() {
        assert_eq!(peek_type(b"\"a string\""), LineKind::NotAnObject);
        assert_eq!(peek_type(b"null"), LineKind::NotAnObject);
        assert_eq!(peek_type(b"42"), LineKind::NotAnObject);
        assert_eq!(peek_type(b"[1,2]"), LineKind::NotAnObject);
        assert_eq!(peek_type(b"{not json"), LineKind::NotAnObject);
        assert_eq!(peek_type(b"{\"a\":1}"), LineKind::Untyped);
        assert_eq!(peek_type(b"{\"type\":3}"), LineKind::Untyped);
        assert_eq!(peek_type(b""), LineKind::NotAnObject);
    }

    #[test]
    fn raw_entry_tolerates_odd_content() {
        let e: RawEntry =
            serde_json::from_str(r#"{"type":"user","message":{"role":"user","content":null}}"#)
                .unwrap();
        assert!(matches!(
            e.message.unwrap().content,
            Some(RawContent::Other(_)) | None
        ));
    }
}
