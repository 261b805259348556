//! Resolving a user-supplied session id: a full id or a unique prefix of a known session, nothing else.
//!
//! Session ids reach ghola from users and from the model (MCP arguments). They are matched against the
//! sessions discovery found, never used to build a path, so `../x` or `/etc/passwd` cannot escape.

use thiserror::Error;

/// Why a session id was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LookupError {
    #[error(
        "'{0}' is not a session id: give a session id or a unique prefix of one (no path separators or control characters)"
    )]
    Invalid(String),
    #[error("no session matches '{0}' (list them with `ghola sessions --global`)")]
    NotFound(String),
    #[error("'{prefix}' matches {count} sessions ({examples}): give more characters")]
    Ambiguous {
        prefix: String,
        count: usize,
        examples: String,
    },
}

/// The first eight characters of a session id, for display: ids are file names, so not always ASCII, and a
/// byte slice could cut a character.
pub fn short_id(id: &str) -> &str {
    id.char_indices().nth(8).map_or(id, |(at, _)| &id[..at])
}

/// Whether `id` can name a session: any name Claude Code could give a transcript file (what ghola lists, it
/// opens), never one that could only be a path (`/`, `\`, control characters, `.`, `..`), although ids are never
/// joined to a path. The hooks and the lookup below share it.
pub fn is_session_name(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && id != "."
        && id != ".."
        && !id.chars().any(|c| c == '/' || c == '\\' || c.is_control())
}

/// Finds the one known id equal to `query` or starting with it.
pub fn resolve_session_id<'a>(
    query: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Result<&'a str, LookupError> {
    let q = query.trim();
    if !is_session_name(q) {
        return Err(LookupError::Invalid(query.to_string()));
    }
    let mut matches: Vec<&str> = Vec::new();
    for id in known {
        if id == q {
            return Ok(id);
        }
        if id.starts_with(q) && !matches.contains(&id) {
            matches.push(id);
        }
    }
    match matches.len() {
        0 => Err(LookupError::NotFound(q.to_string())),
        1 => Ok(matches[0]),
        n => Err(LookupError::Ambiguous {
            prefix: q.to_string(),
            count: n,
            examples: matches
                .iter()
                .take(3)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_cut_between_characters() {
        assert_eq!(short_id("fec0adcb-1234"), "fec0adcb");
        assert_eq!(short_id("aéééé"), "aéééé");
        assert_eq!(short_id("aééééééééé"), "aééééééé");
        assert_eq!(short_id(""), "");
    }

    #[test]
    fn resolves_prefixes_and_refuses_paths() {
        let ids = ["abc-123", "abd-456", "zzz"];
        assert_eq!(resolve_session_id("abc", ids), Ok("abc-123"));
        assert_eq!(resolve_session_id("zzz", ids), Ok("zzz"));
        assert!(matches!(
            resolve_session_id("ab", ids),
            Err(LookupError::Ambiguous { count: 2, .. })
        ));
        assert!(matches!(
            resolve_session_id("q", ids),
            Err(LookupError::NotFound(_))
        ));
        let odd = ["aéééé", "x y"];
        assert_eq!(resolve_session_id("aé", odd), Ok("aéééé"));
        assert_eq!(resolve_session_id("x y", odd), Ok("x y"));
        for bad in [
            "../abc",
            "/etc/passwd",
            "",
            "abc/..",
            "..",
            "a\\b",
            "a\u{0}b",
            "C:\\x",
        ] {
            assert!(matches!(
                resolve_session_id(bad, ids),
                Err(LookupError::Invalid(_))
            ));
        }
    }
}
