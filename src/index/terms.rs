//! The lexical tokenizer, for code and prose alike: `ERR_CONNECTION_REFUSED`, `src/index/store.rs`,
//! `parseUserToken` and `v2.1.38` are indexed whole and by their parts, so either finds them. Chinese, Japanese
//! and Korean, written without spaces between words, are indexed by pairs of adjacent characters (`技術スタック`
//! → 技術, 術ス, スタ, タッ, ック), as Lucene's CJK analyser does: a query's pairs then find a word wherever it
//! stands in a sentence, where the whole run of characters would only ever match itself.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Characters that join the parts of one identifier-like word (`a_b`, `a.b`, `a/b`, `a-b`, `a::b`).
fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '.' | '/' | '-' | ':' | '\\')
}

/// Whether `c` belongs to a script written without spaces between words: Han ideographs, kana, and Hangul
/// (whose words carry their particles: 서버를, "the server" as an object). Such characters are indexed by pairs
/// ([`terms`]), never as part of a word of another script (`CLAUDE.mdファイル` is `claude.md` and ファイル).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF // Hangul Jamo
        | 0x3005..=0x3007 // 々 〆 〇
        | 0x3040..=0x30FF // Hiragana, Katakana (with ー)
        | 0x3130..=0x318F // Hangul compatibility Jamo
        | 0x31F0..=0x31FF // Katakana phonetic extensions
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0xFF66..=0xFF9F // halfwidth Katakana
        | 0x20000..=0x2FFFF // CJK extensions B and after
    )
}

/// Splits `text` into lowercase terms with their byte spans: each word whole (joiners included) and, when it
/// has several, its alphanumeric parts and their camelCase pieces; a run of [`is_cjk`] characters as its
/// overlapping pairs (a lone character as itself).
pub fn terms(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if is_cjk(c) {
            let mut run = Vec::new();
            while let Some(&(i, c)) = chars.peek().filter(|(_, c)| is_cjk(*c)) {
                run.push((i, c));
                chars.next();
            }
            emit_pairs(text, &run, &mut out);
            continue;
        }
        if !c.is_alphanumeric() {
            chars.next();
            continue;
        }
        let mut end = start;
        while let Some(&(i, c)) = chars.peek() {
            if !is_cjk(c) && (c.is_alphanumeric() || is_joiner(c)) {
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

/// The terms of a run of [`is_cjk`] characters (`run`: each one's byte offset in `text`): every two adjacent
/// characters, or the character itself when it stands alone (these scripts have no case to lower).
fn emit_pairs(text: &str, run: &[(usize, char)], out: &mut Vec<(usize, usize, String)>) {
    let end_of = |k: usize| run[k].0 + run[k].1.len_utf8();
    if let [(at, _)] = run {
        out.push((*at, end_of(0), text[*at..end_of(0)].to_string()));
    }
    for k in 1..run.len() {
        let (from, to) = (run[k - 1].0, end_of(k));
        out.push((from, to, text[from..to].to_string()));
    }
}

/// Whether `c` is katakana (with ー), the script in which Japanese writes borrowed words: サーバー, データベース.
fn is_katakana(c: char) -> bool {
    matches!(c as u32, 0x30A1..=0x30FA | 0x30FC..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F)
}

/// The pairs of each word of katakana of `text` three characters long or more (サービス → サー, ービ, ビス). Such a
/// word is one borrowed word, and its pairs are loose alone: サービス ("service") shares サー with サーバー
/// ("server"), データベース shares ース with トレース. A query asks for two of a word's pairs at least
/// ([`super::lexical::Lexical::search`]), so that it finds a message that holds a piece of the word, not one that
/// holds a pair any word of the script may have.
pub fn katakana_words(text: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunk_by(|a, b| is_katakana(*a) == is_katakana(*b))
        .filter(|run| run.len() >= 3 && is_katakana(run[0]))
        .map(|run| run.windows(2).map(|w| w.iter().collect()).collect())
        .collect()
}

/// Whether a term of [`terms`] made of [`is_cjk`] characters carries grammar rather than content, as English's
/// function words do: it holds hiragana, in which Japanese writes its particles, endings and auxiliaries (した,
/// ます, について: nearly every Japanese sentence shares such a pair with every other), or one of Chinese's
/// commonest function characters ([`CHINESE_FUNCTION_CHARACTERS`]: the 的 of 的原, the 么 of 什么). A query
/// leaves these out when it has other words, so that a question shares a word with a message only where a word of
/// substance is shared; the index keeps them. Words of kanji and katakana (技術, スタック), which carry a
/// Japanese sentence's content, are never grammar.
pub fn is_grammar(term: &str) -> bool {
    term.chars().all(is_cjk)
        && term.chars().any(|c| {
            matches!(c, '\u{3041}'..='\u{309F}') || CHINESE_FUNCTION_CHARACTERS.contains(c)
        })
}

/// Chinese characters that, in a pair, nearly always make a function word or straddle one (simplified and
/// traditional): particles (的 了 吗 呢 吧 啊), the pronouns, 这 and 那, 是, and the 么, 什 and 怎 of "what" and
/// "how". Characters that also start common content words (在 of 在线 "online", 还 of 还原 "restore", 为 of 行为
/// "behaviour") are not among them.
pub const CHINESE_FUNCTION_CHARACTERS: &str = "的了吗呢吧啊么麼嗎们們这這那我你妳他她它是什怎";

/// `c` as ASCII when it is a letter or digit of the full width (Ａ, ａ, ３), else itself: Japanese and Chinese text
/// often writes ＡＰＩ or ３０００ in the width of its own characters, which a query typed as API or 3000 should
/// find.
pub fn narrow(c: char) -> char {
    match c as u32 {
        0xFF10..=0xFF19 | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A => {
            char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
        }
        _ => c,
    }
}

/// `word` lowercased, its letters and digits of the full width as ASCII's ([`narrow`]).
fn folded(word: &str) -> String {
    word.to_lowercase().chars().map(narrow).collect()
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
        out.push((start, start + word.len(), folded(word)));
    }
    if parts.len() > 1 {
        for &(at, p) in &parts {
            out.push((start + at, start + at + p.len(), folded(p)));
        }
    }
    for (at, p) in pieces {
        let dup = parts.len() > 1 && parts.iter().any(|&(a, q)| a == at && q.len() == p.len());
        if !dup {
            out.push((start + at, start + at + p.len(), folded(p)));
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
        for t in [
            "call parseUserToken now",
            "CLAUDE.mdファイルを更新、デフォルトポート3000に修正",
            "ＡＰＩキーを３０００に",
        ] {
            for (a, b, s) in terms(t) {
                assert_eq!(folded(&t[a..b]), s);
            }
        }
    }

    /// A word of Japanese inside a sentence is found by its pairs, which the query's word shares; a run of
    /// them is never one term, nor part of a word of Latin letters beside it.
    #[test]
    fn runs_without_spaces_are_indexed_by_pairs() {
        assert_eq!(
            words("技術スタック"),
            ["技術", "術ス", "スタ", "タッ", "ック"]
        );
        let sentence = words("主な更新内容：技術スタック更新");
        for pair in words("技術スタック") {
            assert!(sentence.contains(&pair), "{pair} in {sentence:?}");
        }
        // A run never joins a word of another script; letters and digits of the full width read as ASCII.
        let cases: [(&str, &[&str]); 7] = [
            (
                "CLAUDE.mdファイル",
                &["claude.md", "claude", "md", "ファ", "ァイ", "イル"],
            ),
            (
                "ポート3000に修正",
                &["ポー", "ート", "3000", "に修", "修正"],
            ),
            ("中 文", &["中", "文"]),
            ("서버를 재시작", &["서버", "버를", "재시", "시작"]),
            (
                "在src/main.rs中",
                &["在", "src/main.rs", "src", "main", "rs", "中"],
            ),
            (
                "ＡＰＩキーを３０００に",
                &["api", "キー", "ーを", "3000", "に"],
            ),
            ("ＵｓｅｒＩＤ", &["userid", "user", "id"]),
        ];
        for (text, terms) in cases {
            assert_eq!(words(text), terms, "{text}");
        }
    }

    /// A query's pairs of grammar are told from its pairs of substance by script: hiragana (and Chinese function
    /// characters) make grammar, kanji and katakana content.
    #[test]
    fn pairs_of_grammar_are_told_from_pairs_of_substance() {
        let kept =
            |q: &str| -> Vec<String> { words(q).into_iter().filter(|t| !is_grammar(t)).collect() };
        assert_eq!(
            kept("リトライについて何を決めましたか"),
            ["リト", "トラ", "ライ"]
        );
        assert_eq!(
            kept("数据库迁移失败的原因是什么"),
            ["数据", "据库", "库迁", "迁移", "移失", "失败", "原因"]
        );
        assert_eq!(
            kept("ログイン画面"),
            ["ログ", "グイ", "イン", "ン画", "画面"]
        );
        assert_eq!(
            kept("在线 restore the API"),
            ["在线", "restore", "the", "api"]
        );
        assert!(kept("した ます").is_empty());
    }

    #[test]
    fn words_of_katakana_are_their_pairs() {
        assert_eq!(
            katakana_words("決済サービスとデータベースのメモ"),
            [
                vec!["サー", "ービ", "ビス"],
                vec!["デー", "ータ", "タベ", "ベー", "ース"]
            ]
        );
        assert!(katakana_words("メモ 技術 retry").is_empty());
    }
}
