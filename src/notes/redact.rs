//! Secrets never leave the machine inside a note extraction: API keys, tokens, private keys and passwords in
//! the shaped window are replaced by `[REDACTED …]` before anything is sent.

use regex::Regex;
use std::sync::LazyLock;

/// (what it is, pattern). Patterns match the secret itself, or a `name = value` pair whose name says secret
/// (then only the value is replaced, so the model still sees which setting was involved).
static PATTERNS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    let p = |name, re: &str| (name, Regex::new(re).expect("redaction pattern"));
    vec![
        p(
            "private key",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        ),
        p("anthropic key", r"sk-ant-[A-Za-z0-9_\-]{10,}"),
        p("api key", r"\bsk-(proj-)?[A-Za-z0-9_\-]{20,}"),
        p("aws key", r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
        p(
            "github token",
            r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b",
        ),
        p("github token", r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"),
        p("gitlab token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),
        p("slack token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}\b"),
        p("google key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
        p("stripe key", r"\b[rs]k_(live|test)_[A-Za-z0-9]{16,}\b"),
        p(
            "jwt",
            r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        ),
        p(
            "bearer token",
            r"(?i)\b(authorization:\s*bearer|bearer)\s+[A-Za-z0-9_\-\.=+/]{16,}",
        ),
        p(
            "url password",
            r"\b[a-z][a-z0-9+\-.]*://[^\s:/@]+:[^\s@/]{3,}@",
        ),
    ]
});

/// `name = value` / `name: value` / `"name": "value"` where the name says secret.
static ASSIGNED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b([A-Za-z0-9_\-]*(api[_\-]?key|secret|token|passwd|password|credential|private[_\-]?key)[A-Za-z0-9_\-]*)("?\s*[:=]\s*"?)([^\s"',;]{8,})"#,
    )
    .expect("assignment pattern")
});

/// `text` with every secret replaced, and how many were.
pub fn redact(text: &str) -> (String, usize) {
    let mut out = text.to_string();
    let mut count = 0;
    for (name, re) in PATTERNS.iter() {
        if re.is_match(&out) {
            let before = re.find_iter(&out).count();
            count += before;
            out = re
                .replace_all(&out, |c: &regex::Captures| {
                    if *name == "url password" {
                        // Keep the scheme and user: only the password goes.
                        let m = &c[0];
                        let colon = m.rfind(':').unwrap_or(0);
                        format!("{}:[REDACTED password]@", &m[..colon])
                    } else {
                        format!("[REDACTED {name}]")
                    }
                })
                .into_owned();
        }
    }
    let assigned = ASSIGNED
        .captures_iter(&out)
        .filter(|c| !c[4].starts_with("[REDACTED"))
        .count();
    if assigned > 0 {
        count += assigned;
        out = ASSIGNED
            .replace_all(&out, |c: &regex::Captures| {
                if c[4].starts_with("[REDACTED") {
                    c[0].to_string()
                } else {
                    format!("{}{}[REDACTED]", &c[1], &c[3])
                }
            })
            .into_owned();
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn secrets_are_replaced_and_prose_is_kept() {
        let text = "export ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz\n\
                    aws AKIAIOSFODNN7EXAMPLE and ghp_0123456789abcdefghijklmnopqrstuvwxyz12\n\
                    DB_PASSWORD: hunter2hunter2\n\
                    curl -H 'Authorization: Bearer abcdefghijklmnop0123456789'\n\
                    postgres://admin:s3cretpass@db.local/app\n\
                    -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n\
                    The token budget is small; we chose tantivy.";
        let (out, n) = redact(text);
        for secret in [
            "abcdefghijklmnopqrstuvwxyz",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123",
            "hunter2",
            "abcdefghijklmnop0123456789",
            "s3cretpass",
            "b3BlbnNzaC1rZXk",
        ] {
            assert!(!out.contains(secret), "{secret} left in:\n{out}");
        }
        assert!(n >= 7, "{n}: {out}");
        assert!(out.contains("DB_PASSWORD: [REDACTED]"), "{out}");
        assert!(
            out.contains("postgres://admin:[REDACTED password]@db.local"),
            "{out}"
        );
        assert!(out.contains("The token budget is small; we chose tantivy."));
    }
}
