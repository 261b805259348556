//! The lexical tokenizer, for code and prose alike: `ERR_CONNECTION_REFUSED`, `src/index/store.rs`,
//! `parseUserToken` and `v2.1.38` are indexed whole and by their parts, so either finds them.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Characters that join the parts of one identifier-like word (`a_b`, `a.b`, `a/b`, `a-b`, `a::b`).
fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '.' | '/' | '-' | ':' | '\\')
}

/// Splits `text` into lowercase terms with their byte spans: each word whole (joiners included) and, when it
/// has several, its alphanumeric parts and their camelCase pieces.
pub fn terms(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if !c.is_alphanumeric() {
            chars.next();
            continue;
        }
        let mut end = start;
        while let Some(&(i, c)) = chars.peek() {
            if c.is_alphanumeric() || is_joiner(c) {
                end = i + c.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        let word = text[start..end].trim_end_matches(is_joiner);
        emit_word(word, start, &mut out);
    }
    out
}

fn emit_word(word: &str, start: usize, out: &mut Vec<(usize, usize, String)>) {
    let parts: Vec<(usize, &str)> = word
        .split(|c: char| !c.is_alphanumeric())
        .scan(0usize, |pos, p| {
            let at = *pos;
            *pos += p.len() + 1;
            Some((at, p))
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let pieces: Vec<(usize, &str)> = parts
        .iter()
        .flat_map(|&(at, p)| camel_pieces(p).into_iter().map(move |(o, s)| (at + o, s)))
        .collect();
    if pieces.len() > 1 || parts.len() > 1 || word.len() != parts.first().map_or(0, |p| p.1.len()) {
        out.push((start, start + word.len(), word.to_lowercase()));
    }
    if parts.len() > 1 {
        for &(at, p) in &parts {
            out.push((start + at, start + at + p.len(), p.to_lowercase()));
        }
    }
    for (at, p) in pieces {
        let dup = parts.len() > 1 && parts.iter().any(|&(a, q)| a == at && q.len() == p.len());
        if !dup {
            out.push((start + at, start + at + p.len(), p.to_lowercase()));
        }
    }
}

/// `parseUserToken` → parse, User, Token; `HTTPServer` → HTTP, Server; `ab` → ab.
fn camel_pieces(p: &str) -> Vec<(usize, &str)> {
    let cs: Vec<(usize, char)> = p.char_indices().collect();
    let mut out = Vec::new();
    let mut begin = 0;
    for k in 1..cs.len() {
        let (prev, cur) = (cs[k - 1].1, cs[k].1);
        let next_lower = cs.get(k + 1).is_some_and(|&(_, n)| n.is_lowercase());
        let boundary = (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower);
        if boundary {
            out.push((cs[begin].0, &p[cs[begin].0..cs[k].0]));
            begin = k;
        }
    }
    out.push((cs[begin].0, &p[cs[begin].0..]));
    out
}

/// [`terms`] as a tantivy tokenizer.
#[derive(Clone, Default)]
pub struct CodeTokenizer;

/// The token stream of [`CodeTokenizer`].
pub struct CodeTokenStream {
    tokens: Vec<Token>,
    next: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream {
        let tokens = terms(text)
            .into_iter()
            .enumerate()
            .map(|(position, (from, to, text))| Token {
                offset_from: from,
                offset_to: to,
                position,
                text,
                position_length: 1,
            })
            .collect();
        CodeTokenStream { tokens, next: 0 }
    }
}

impl TokenStream for CodeTokenStream {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(t: &str) -> Vec<String> {
        terms(t).into_iter().map(|(_, _, s)| s).collect()
    }

    #[test]
    fn identifiers_whole_and_by_parts() {
        assert_eq!(
            words("ERR_CONNECTION_REFUSED"),
            ["err_connection_refused", "err", "connection", "refused"]
        );
        assert_eq!(
            words("see src/index/store.rs."),
            ["see", "src/index/store.rs", "src", "index", "store", "rs"]
        );
        assert_eq!(
            words("parseUserToken"),
            ["parseusertoken", "parse", "user", "token"]
        );
        assert_eq!(words("v2.1.38"), ["v2.1.38", "v2", "1", "38"]);
        assert_eq!(
            words("HTTPServer ok"),
            ["httpserver", "http", "server", "ok"]
        );
        assert_eq!(words("Café au lait"), ["café", "au", "lait"]);
    }

    #[test]
    fn spans_point_at_the_text() {
        let t = "call parseUserToken now";
        for (a, b, s) in terms(t) {
            assert_eq!(t[a..b].to_lowercase(), s);
        }
    }
}
