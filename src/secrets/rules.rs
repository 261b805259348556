//! The named rules: the shapes of the credentials people paste, cat and export in a coding session.
//!
//! The provider-specific shapes (prefixes, alphabets, lengths) and the rule ids follow gitleaks' default rule set
//! (`config/gitleaks.toml` of github.com/gitleaks/gitleaks, MIT), the rule set most secret scanners derive
//! theirs from; the lengths are kept a little looser than gitleaks' so that a token format that grew still
//! matches. The generic rules (a secret-sounding name given a value) are ghola's own, tuned against
//! `../shared/corpus` so that code that merely *mentions* a password (`password = request.form["password"]`,
//! `token: string`, `${API_KEY}`) is left alone; docs/secrets.md lists what they still take and miss.

use regex::Regex;

/// What a match must also be before it counts (the regex alone says only "of this shape").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    /// The shape is distinctive enough (a fixed prefix and a long random tail).
    None,
    /// The value must look random: not a placeholder, not code, not a plain word (see [`super::looks_secret`]).
    Random,
    /// [`Check::Random`], and the name the value is given must mean the secret itself, not a count, a type,
    /// a path or an id of one (`max_tokens`, `tokenizer`, `token_type`, `key_file`; see [`super::names_a_secret`]).
    Named,
    /// [`Check::Named`] for an environment file's `NAME_SECRET=value` line, where the shape of the name says so
    /// much that a long value of letters only counts too (see [`super::looks_secret`]).
    EnvLine,
    /// A known prefix then a token: what follows the prefix is long and not a kebab or snake name
    /// (`sk-learn-style-names`; see [`super::token_after_prefix`]).
    Prefixed,
    /// The password of a URL: anything but a placeholder (`user:password@`, `:pass@`, `${PW}`; see
    /// [`super::url_password`]).
    UrlPassword,
}

/// One rule: its id (the placeholder's name), the pattern, the capture group holding the value (0: the whole
/// match) and the check the value must pass.
pub(super) struct Rule {
    pub id: &'static str,
    pub re: Regex,
    pub group: usize,
    pub check: Check,
}

/// A separator between a name and its value: `=`, `:`, `:=`, `=>`, with optional quotes (JSON-escaped, once or
/// twice, too: a tool's output quoting JSON, as a transcript line stores it), or prose: `the password is …`.
const SEP: &str = r#"(?:\\{0,3}["']?\s*(?::=|=>|=|:)\s*\\{0,3}["']?|\s+(?:is|was)\s+["']?)"#;

/// Names that say their value is a password, secret, token or key.
/// No dot: `config.api_key` is named from `api_key`, and `tokenizer.json: 100%` (a file name) is no name at all.
const SECRET_NAME: &str = r"[A-Za-z0-9_\-]*(?i:passw(?:or)?d|\bpwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|auth[_\-]?key|private[_\-]?key|credentials?|_authtoken)[A-Za-z0-9_\-]*";

/// `re` with each word boundary `\b` made ASCII's, `(?-u:\b)`. A Unicode word boundary makes the regex engine's
/// fast automaton give up at the first non-ASCII byte (an em dash, an accent, an emoji: most transcripts hold
/// some) and scan the rest with its slowest engine; every message the reader builds passes this scan. It never
/// redacts less: beside a token's ASCII letter or digit, an ASCII boundary holds wherever a Unicode one does, and
/// also beside a non-ASCII letter ("éAKIA…"); the one pattern whose name may open with `-`
/// (`secret-assignment`) then starts its match at the letter after it, and takes the same value.
fn ascii_word_boundaries(re: &str) -> String {
    re.replace(r"\b", r"(?-u:\b)")
}

/// The rules in priority order: where two matches overlap, the earlier rule's wins (so a GCP service account's
/// `private_key` is named as that rather than as a bare PEM key, and `sk-ant-…` as Anthropic's before OpenAI's).
pub(super) fn all() -> Vec<Rule> {
    let rule = |id, re: &str, group, check| Rule {
        id,
        re: Regex::new(&ascii_word_boundaries(re))
            .unwrap_or_else(|e| panic!("secret rule {id}: {e}")),
        group,
        check,
    };
    use Check::{EnvLine, Named, None as Shape, Prefixed, Random, UrlPassword};
    vec![
        rule(
            "gcp-service-account-key",
            r#"\\{0,3}"private_key\\{0,3}"\s*:\s*\\{0,3}"(-----BEGIN[ A-Z]{0,40}PRIVATE KEY-----[^"]{16,}?)\\{0,3}""#,
            1,
            Shape,
        ),
        rule(
            "private-key",
            r"-----BEGIN[ A-Z0-9_\-]{0,60}PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END[ A-Z0-9_\-]{0,60}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:\-]{40,})",
            0,
            Shape,
        ),
        rule(
            "aws-access-key-id",
            r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b",
            0,
            Shape,
        ),
        rule(
            "aws-secret-access-key",
            &format!(
                r"(?i:aws_?secret_?access_?key|aws_?secret(?:_?key)?|secret_?access_?key){SEP}([A-Za-z0-9/+]{{40}})(?:[^A-Za-z0-9/+]|$)"
            ),
            1,
            Shape,
        ),
        rule(
            "azure-connection-string",
            r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature)=([A-Za-z0-9+/%=\-&:]{20,})",
            1,
            Shape,
        ),
        rule(
            "github-token",
            r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,255}\b",
            0,
            Shape,
        ),
        rule(
            "github-fine-grained-pat",
            r"\bgithub_pat_[A-Za-z0-9_]{40,255}\b",
            0,
            Shape,
        ),
        rule(
            "gitlab-token",
            r"\bgl(?:pat|ptt|rt|dt|ft|soat|oas|cbt|imt)-[A-Za-z0-9_\-]{20,}",
            0,
            Shape,
        ),
        rule(
            "slack-webhook-url",
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}",
            0,
            Shape,
        ),
        rule(
            "slack-token",
            r"\bxox[abposre]-[A-Za-z0-9\-]{10,}",
            0,
            Shape,
        ),
        rule(
            "stripe-key",
            r"\b(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,247}\b",
            0,
            Shape,
        ),
        rule(
            "stripe-webhook-secret",
            r"\bwhsec_[A-Za-z0-9]{24,}\b",
            0,
            Shape,
        ),
        rule(
            "anthropic-api-key",
            r"\bsk-ant-(?:api\d\d|admin\d\d|oat\d\d|ort\d\d|sid\d\d)?-?[A-Za-z0-9_\-]{20,}",
            0,
            Shape,
        ),
        rule(
            "openai-api-key",
            r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
            0,
            Prefixed,
        ),
        rule(
            "huggingface-token",
            r"\bhf_[A-Za-z0-9]{30,40}\b",
            0,
            Prefixed,
        ),
        rule("gcp-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b", 0, Shape),
        rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0, Shape),
        rule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", 0, Shape),
        rule(
            "jwt",
            r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
            0,
            Shape,
        ),
        rule(
            "url-password",
            r#"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@"'<>`]{1,100}:([^\s@/"'<>`]{1,200})@[A-Za-z0-9\[]"#,
            1,
            UrlPassword,
        ),
        rule(
            "bearer-token",
            r"(?i:\bbearer)\s+([A-Za-z0-9_\-.=+/~]{16,})",
            1,
            Random,
        ),
        rule(
            "env-secret",
            r"(?m)(?:^|\\n|\x22)[ \t]*(?:export[ \t]+)?[A-Z][A-Z0-9_]*(?:_KEY|_SECRET|_TOKEN|_PASSWORD|_PASS|_PWD|_CREDENTIALS?|_AUTH)[ \t]*=[ \t]*[\x22']?([^\s\x22'#\\]{6,})",
            1,
            EnvLine,
        ),
        rule(
            "secret-assignment",
            &format!(r#"\b{SECRET_NAME}{SEP}([^\s"'`,;)\]}}<>\\]{{6,200}})"#),
            1,
            Named,
        ),
    ]
}
