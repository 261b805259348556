//! Queries the embedding model cannot read. all-MiniLM-L6-v2 was trained on English and its vocabulary is
//! English's: it reads most Chinese characters and kanji as `[UNK]`, and kana and Hangul one character (or one
//! jamo) at a time. Two unrelated sentences in Chinese have a cosine of 0.51–0.81 (median 0.60), in Japanese
//! 0.46–0.67, where English ones have a median of 0.04 (docs/search.md, "A query the model cannot read"). So a
//! query written mostly in these scripts has a vector that says nothing of what it asks: it would rank every
//! message of the same script alike, and carry each over the floor for hits that share no word, which is how a
//! question nothing answers came back with hits. Such a query is ranked by its words alone (their pairs of
//! characters, `crate::index::terms`), as if no model were there.

use super::{Fusion, SearchParams};
use crate::index::terms::is_cjk;
use crate::search::prior::Rule;

/// Whether the embedding model reads enough of `query` for its vector to mean something: false when the query's
/// characters of Chinese, Japanese or Korean ([`is_cjk`], each a token of its own to the model) outnumber its
/// other words (runs of other letters and digits: `React`, `19`, `CLAUDE`, `md`).
pub fn model_reads(query: &str) -> bool {
    let (mut unread, mut words, mut in_word) = (0usize, 0usize, false);
    for c in query.chars() {
        if is_cjk(c) {
            unread += 1;
            in_word = false;
        } else if c.is_alphanumeric() {
            words += usize::from(!in_word);
            in_word = true;
        } else {
            in_word = false;
        }
    }
    unread <= words
}

/// Whether the search ranks by the query's meaning: not under the lexical fusion, and under the default
/// (weighted) fusion only when the model reads the query ([`model_reads`]; rule [`Rule::ScriptUnread`]). The
/// other fusions, asked for by name, are left as asked.
pub fn uses_meaning(p: &SearchParams) -> bool {
    match p.fusion {
        Fusion::Lexical => false,
        Fusion::Weighted => p.without_rules.contains(&Rule::ScriptUnread) || model_reads(&p.query),
        Fusion::Semantic | Fusion::Rrf => true,
    }
}

/// What a response says when the rule left the query's meaning out.
pub const WORDS_ALONE: &str = "ranked by the query's words alone: the embedding model cannot read Chinese, Japanese or Korean";

#[cfg(test)]
mod tests {
    use super::model_reads;

    #[test]
    fn a_query_mostly_in_a_script_without_spaces_is_not_read() {
        for (query, read) in [
            ("why did the upload test fail", true),
            ("fix the 認証 bug", true),
            ("数据库迁移失败的原因是什么", false),
            ("技術スタック", false),
            ("Reactのバージョンは何に更新した？", false),
            ("CLAUDE.mdの更新", false),
            ("데이터베이스 마이그레이션", false),
            ("", true),
        ] {
            assert_eq!(model_reads(query), read, "{query}");
        }
    }
}
