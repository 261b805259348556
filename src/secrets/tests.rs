use super::*;

/// A deterministic run of `n` characters from `alphabet` (so the planted values are generated, not real).
fn run(seed: u64, n: usize, alphabet: &str) -> String {
    let a: Vec<char> = alphabet.chars().collect();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            a[(x % a.len() as u64) as usize]
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// One planted credential: (rule expected, text holding the value, the value).
type Planted = (&'static str, String, String);

/// Every planted credential: the providers' tokens, then values given to names, in URLs and in prose.
fn planted() -> Vec<Planted> {
    let mut out = Vec::new();
    planted_tokens(&mut out);
    planted_by_name(&mut out);
    out
}

/// Credentials with a provider's shape (a fixed prefix or layout).
fn planted_tokens(out: &mut Vec<Planted>) {
    let mut add = |rule, value: String, text: String| out.push((rule, text, value));
    let k = format!("AKIA{}", run(1, 16, UPPER));
    add(
        "aws-access-key-id",
        k.clone(),
        format!("export AWS_ACCESS_KEY_ID={k}"),
    );
    let s = run(2, 40, B64);
    add(
        "aws-secret-access-key",
        s.clone(),
        format!("aws_secret_access_key = {s}\nregion = eu-west-1"),
    );
    let pem = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----",
        run(3, 64, B64),
        run(4, 40, B64)
    );
    add("private-key", pem.clone(), format!("cat id_rsa\n{pem}\n"));
    let gcp = format!(
        "-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----\\n",
        run(5, 64, B64)
    );
    add(
        "gcp-service-account-key",
        gcp.clone(),
        format!(
            r#"{{"type": "service_account", "private_key": "{gcp}", "client_email": "a@b.iam.gserviceaccount.com"}}"#
        ),
    );
    let az = format!("{}==", run(6, 86, B64));
    add(
        "azure-connection-string",
        az.clone(),
        format!(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={az};EndpointSuffix=core.windows.net"
        ),
    );
    let gh = format!("ghp_{}", run(7, 36, ALNUM));
    add(
        "github-token",
        gh.clone(),
        format!("git remote set-url origin https://{gh}@github.com/o/r"),
    );
    let ghf = format!("github_pat_{}_{}", run(8, 22, ALNUM), run(9, 59, ALNUM));
    add(
        "github-fine-grained-pat",
        ghf.clone(),
        format!("GH_TOKEN is {ghf}"),
    );
    let gl = format!("glpat-{}", run(10, 20, ALNUM));
    add("gitlab-token", gl.clone(), format!("use {gl} for the API"));
    let sl = format!(
        "xoxb-{}-{}-{}",
        run(11, 12, "0123456789"),
        run(12, 12, "0123456789"),
        run(13, 24, ALNUM)
    );
    add("slack-token", sl.clone(), format!("SLACK says {sl}"));
    let st = format!("sk_live_{}", run(14, 24, ALNUM));
    add(
        "stripe-key",
        st.clone(),
        format!("stripe.api_key = \"{st}\""),
    );
    let an = format!("sk-ant-api03-{}", run(15, 93, ALNUM));
    add(
        "anthropic-api-key",
        an.clone(),
        format!("my key is {an} please use it"),
    );
    let oa = format!("sk-proj-{}", run(16, 48, ALNUM));
    add(
        "openai-api-key",
        oa.clone(),
        format!("OPENAI_API_KEY: {oa}"),
    );
    let hf = format!("hf_{}", run(17, 34, ALNUM));
    add(
        "huggingface-token",
        hf.clone(),
        format!("huggingface-cli login --token {hf}"),
    );
    let gk = format!("AIza{}", run(18, 35, ALNUM));
    add("gcp-api-key", gk.clone(), format!("?key={gk}&q=1"));
    let npm = format!("npm_{}", run(19, 36, ALNUM));
    add(
        "npm-token",
        npm.clone(),
        format!("//registry.npmjs.org/:_authToken={npm}"),
    );
    let pypi = format!("pypi-AgEIcHlwaS5vcmc{}", run(20, 60, ALNUM));
    add("pypi-token", pypi.clone(), format!("password = {pypi}"));
    let jwt = format!(
        "eyJ{}.eyJ{}.{}",
        run(21, 20, ALNUM),
        run(22, 40, ALNUM),
        run(23, 43, ALNUM)
    );
    add("jwt", jwt.clone(), format!("Cookie: session={jwt}"));
}

/// Credentials known by where they stand: a URL's password, an `.env` line, a secret-sounding name, prose.
fn planted_by_name(out: &mut Vec<Planted>) {
    let mut add = |rule, value: String, text: String| out.push((rule, text, value));
    let pw = format!("{}7!", run(24, 12, ALNUM));
    add(
        "url-password",
        pw.clone(),
        format!("DATABASE_URL=postgres://app:{pw}@db.internal:5432/app"),
    );
    let word_pw = "supersecretpassword".to_string();
    add(
        "url-password",
        word_pw.clone(),
        format!("psql postgres://admin:{word_pw}@db.prod.internal:5432/app"),
    );
    let hf_letters = format!("hf_{}", run(31, 34, "abcdefghijklmnopqrstuvwxyz"));
    add(
        "huggingface-token",
        hf_letters.clone(),
        format!("HF_TOKEN is {hf_letters}"),
    );
    let env_letters = run(
        32,
        28,
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    );
    add(
        "env-secret",
        env_letters.clone(),
        format!("SESSION_SECRET={env_letters}\nPORT=3000"),
    );
    let env = run(25, 32, ALNUM);
    add(
        "env-secret",
        env.clone(),
        format!("# .env\nMAILGUN_SECRET={env}\nDEBUG=1"),
    );
    let pass = format!("Tr0ub4dor&{}", run(26, 4, "0123456789"));
    add(
        "secret-assignment",
        pass.clone(),
        format!("login with password: {pass} then"),
    );
    let prose = format!("{}9{}", run(28, 6, ALNUM), run(29, 5, ALNUM));
    add(
        "secret-assignment",
        prose.clone(),
        format!("fyi the staging password is {prose} until Friday"),
    );
    let tok = run(27, 40, "0123456789abcdef");
    add(
        "secret-assignment",
        tok.clone(),
        format!(r#"{{\"auth_token\": \"{tok}\"}}"#),
    );
}

/// Asserts that `rule` finds `value` in `text`.
fn assert_found(rule: &str, text: &str, value: &str) {
    let found = find(text);
    assert!(
        found
            .iter()
            .any(|f| f.rule == rule && f.value(text) == value),
        "{rule} not found in {text:?}: {found:?}"
    );
}

#[test]
fn every_planted_credential_is_found_by_its_rule_and_replaced() {
    for (rule, text, value) in planted() {
        assert_found(rule, &text, &value);
        let red = redact(&text);
        assert!(!red.contains(&value), "{rule}: {red}");
        assert!(red.contains(&placeholder(rule)), "{rule}: {red}");
    }
}

#[test]
fn credentials_in_text_that_is_not_ascii_are_found_alike() {
    // Word boundaries are ASCII's (`rules::ascii_word_boundaries`): prose around a credential in any script finds
    // it as before, and a letter outside ASCII against a token no longer hides it.
    for (rule, text, value) in planted() {
        assert_found(
            rule,
            &format!("Voilà — déjà vu ✓\n{text}\n… fin 🎉"),
            &value,
        );
    }
    let key = "AKIA1234567890ABCDEF";
    let text = format!("clé{key}é");
    assert_eq!(
        find(&text)
            .iter()
            .map(|f| f.value(&text))
            .collect::<Vec<_>>(),
        [key]
    );
}

#[test]
fn what_is_not_a_secret_is_left_alone() {
    let plain = [
        "session 550e8400-e29b-41d4-a716-446655440000 resumed",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b and a1b2c3d",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "function(a,b){return a.token=b,a.password=c,a}",
        "password = request.form[\"password\"]",
        "token: string; secret?: Option<String>",
        "api_key = os.getenv(\"API_KEY\")",
        "API_KEY=${API_KEY}",
        "export GITHUB_TOKEN=$(gh auth token)",
        "\"usage\": {\"input_tokens\": 12345, \"output_tokens\": 678}",
        "max_tokens=4096, secret_name = my-app-secret",
        "tokenizer = AutoTokenizer.from_pretrained(name)",
        "postgres://user:password@localhost/db and https://example.com:8080/x",
        "The token budget is small; we chose tantivy.",
        "sk-learn-style-names-are-words-only",
        "Authorization: Bearer $TOKEN",
        "password: ********",
        "the token is expired and the password was reset",
        "The secret is 42",
        "SECRET_KEY=your_secret_key_here\nAPI_KEY=changeme",
        "redis://:pass@localhost:6379 and https://user:${PW}@host",
    ];
    for text in plain {
        let found = find(text);
        assert!(found.is_empty(), "{text:?}: {found:?}");
    }
}

#[test]
fn placeholders_are_not_found_again_and_json_keys_are_kept() {
    let (_, text, value) = planted().remove(0);
    let once = redact(&text).into_owned();
    assert_eq!(redact(&once), once);
    let mut v = serde_json::json!({"AWS_ACCESS_KEY_ID": text, "n": 1, "list": [text]});
    let mut tally = Tally::default();
    assert_eq!(redact_json(&mut v, &mut tally), 2);
    assert!(!v.to_string().contains(&value));
    assert!(v.get("AWS_ACCESS_KEY_ID").is_some());
    assert_eq!(tally.0.get("aws-access-key-id"), Some(&2));
}

#[test]
fn a_preview_shows_four_characters_and_never_the_length() {
    assert_eq!(preview("AKIA1234567890ABCDEF"), "AKIA…****");
    assert_eq!(preview("ab"), "ab…****");
}

#[test]
fn a_private_key_cut_before_its_end_line_is_still_taken() {
    let body = run(30, 200, B64);
    let text = format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{body}");
    let red = redact(&text);
    assert!(!red.contains(&body[..40]), "{red}");
}

#[test]
fn stored_bytes_are_redacted_in_place_keeping_length_and_json() {
    let mut lines = String::new();
    let mut values = Vec::new();
    for (_, text, value) in planted() {
        let line = serde_json::json!({"type": "user", "message": {"content": text}}).to_string();
        lines.push_str(&line);
        lines.push('\n');
        values.push(value);
    }
    lines.push_str("not json but a token=ab12cd34ef56 here\n");
    let mut bytes = lines.clone().into_bytes();
    let n = redact_bytes_in_place(&mut bytes, &mut Tally::default());
    assert!(n as usize >= values.len(), "{n}");
    assert_eq!(bytes.len(), lines.len());
    let out = String::from_utf8(bytes).unwrap();
    for (line, before) in out.lines().zip(lines.lines()) {
        if serde_json::from_str::<serde_json::Value>(before).is_ok() {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("{e}: {line}"));
        }
    }
    for v in values {
        // The JSON-escaped form is what the line holds.
        let escaped = serde_json::to_string(&v).unwrap();
        let escaped = &escaped[1..escaped.len() - 1];
        assert!(!out.contains(escaped), "{v} left in {out}");
    }
    assert!(!out.contains("ab12cd34ef56"));
    // Redacting again changes nothing.
    let mut again = out.clone().into_bytes();
    assert_eq!(redact_bytes_in_place(&mut again, &mut Tally::default()), 0);
}

#[test]
fn stored_bytes_lose_a_value_that_opens_a_line_or_follows_a_tab() {
    // The line holds a message's line break as `\n`: the value follows the letter `n`, not a word boundary.
    let gh = format!("ghp_{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5");
    let ant = format!("sk-ant-api03-{}", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe");
    let text = format!("my key:\n{gh}\nand\t{ant}\n\\nghp_ not a token");
    let line = serde_json::json!({"type": "user", "message": {"content": text}}).to_string() + "\n";
    let mut bytes = line.clone().into_bytes();
    assert_eq!(redact_bytes_in_place(&mut bytes, &mut Tally::default()), 2);
    assert_eq!(bytes.len(), line.len());
    let out = String::from_utf8(bytes).unwrap();
    assert!(!out.contains(&gh) && !out.contains(&ant), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
    let content = v["message"]["content"].as_str().unwrap();
    assert!(content.starts_with("my key:\n[REDACTED"), "{content}");
    assert!(content.ends_with("\\nghp_ not a token"), "{content}");
}

#[test]
fn a_value_printed_in_colour_is_found_and_scrubbed_from_stored_bytes() {
    // A tool's output in colour: the style code before the value ends in `m`, where no word boundary is.
    let ant = format!("sk-ant-api03-{}", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe");
    let text = format!("Your key: \x1b[1;32m{ant}\x1b[0m (keep it safe)");
    assert_found("anthropic-api-key", &text, &ant);
    let red = redact(&text);
    assert!(
        !red.contains(&ant) && red.contains("\x1b[1;32m[REDACTED:anthropic-api-key]\x1b[0m"),
        "{red:?}"
    );
    // The raw line holds ESC as `\u001b`.
    let line = serde_json::json!({"type": "user", "message": {"content": text}}).to_string() + "\n";
    assert!(line.contains("\\u001b[1;32m"), "{line}");
    let mut bytes = line.clone().into_bytes();
    assert_eq!(redact_bytes_in_place(&mut bytes, &mut Tally::default()), 1);
    let out = String::from_utf8(bytes).unwrap();
    assert!(!out.contains(&ant), "{out}");
    serde_json::from_str::<serde_json::Value>(out.trim_end()).unwrap();
    // A style code with no value after it changes nothing.
    assert!(find("\x1b[31mFAILED\x1b[0m tests/auth.rs").is_empty());
}
