//! Resolving a user-supplied session id: a full id or a unique prefix of a known session, nothing else.
//!
//! Session ids reach ghola from users and from the model (MCP arguments). They are matched against the
//! sessions discovery found, never used to build a path, so `../x` or `/etc/passwd` cannot escape.

use thiserror::Error;

/// Why a session id was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LookupError {
    #[error(
        "'{0}' is not a session id: give a session uuid or a unique prefix of one (letters, digits, '-' and '_' only)"
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

/// Finds the one known id equal to `query` or starting with it.
pub fn resolve_session_id<'a>(
    query: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Result<&'a str, LookupError> {
    let q = query.trim();
    let valid = !q.is_empty()
        && q.len() <= 128
        && q.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
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
        for bad in ["../abc", "/etc/passwd", "", "a b", "abc/..", ".."] {
            assert!(matches!(
                resolve_session_id(bad, ids),
                Err(LookupError::Invalid(_))
            ));
        }
    }
}
