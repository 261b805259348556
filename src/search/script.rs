//! Queries the embedding model cannot read. all-MiniLM-L6-v2 was trained on English and its vocabulary is
//! English's: it reads most Chinese characters and kanji as `[UNK]`, and kana, Hangul, Cyrillic, Arabic or
//! Devanagari one character (or one jamo) at a time. Two unrelated sentences have a median cosine of 0.60 in
//! Chinese, 0.59 in Japanese, 0.74 in Korean, 0.58 in Russian, 0.77 in Arabic and 0.78 in Hindi, where English
//! ones have 0.04 (docs/search.md, "A query the model cannot read"). So a query written mostly in these scripts
//! has a vector that says nothing of what it asks: it would rank every message of its script alike, and carry
//! each over the floor for hits that share no word, which is how a question nothing answers came back with hits.
//! Such a query is ranked by its words alone (for scripts written without spaces, their pairs of characters,
//! `crate::index::terms`), as if no model were there. Languages written in Latin letters are read, if less well
//! (unrelated sentences: German 0.28, French 0.40, Spanish 0.47), and keep the model to order what a query's
//! words find; but in them no message is a hit on meaning alone ([`meaning_vouches`]).

use super::{Fusion, SearchParams};
use crate::index::function_words;
use crate::index::lexical::FUNCTION_WORDS;
use crate::index::terms::is_cjk;
use crate::search::prior::Rule;

/// Whether `c` is a letter of a script the model reads by words: Latin (with its accented letters), or a digit.
fn read_by_words(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || c.is_numeric()
        || matches!(c as u32,
            0x00C0..=0x024F // Latin-1 letters, Latin Extended A and B
            | 0x1E00..=0x1EFF // Latin Extended Additional
            | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A // full-width Latin, read as ASCII (`index::terms::narrow`)
        )
}

/// Whether the embedding model reads enough of `query` for its vector to mean something: false when its unread
/// words outnumber the words it reads (runs of Latin letters and digits: `React`, `19`, `CLAUDE`, `md`). A word of
/// another script (Cyrillic, Greek, Arabic, Devanagari …) is one unread word; each character of Chinese, Japanese
/// or Korean ([`is_cjk`], written without spaces, each a token of its own to the model) is one.
pub fn model_reads(query: &str) -> bool {
    #[derive(PartialEq, Clone, Copy)]
    enum In {
        Gap,
        Read,
        Unread,
    }
    let (mut read, mut unread, mut was) = (0usize, 0usize, In::Gap);
    for c in query.chars() {
        let now = if is_cjk(c) {
            unread += 1;
            In::Gap
        } else if read_by_words(c) {
            In::Read
        } else if c.is_alphabetic() {
            In::Unread
        } else {
            In::Gap
        };
        if now != was {
            read += usize::from(now == In::Read);
            unread += usize::from(now == In::Unread);
        }
        was = now;
    }
    unread <= read
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

/// Whether a message may be a hit on the query's meaning alone, sharing no word with it: not under the default
/// fusion for a query written in another language of Latin letters ([`function_words::of_the_query_language`]:
/// Spanish, French, German …; rule [`Rule::LanguageReadLoosely`]). The model reads those languages by pieces of
/// their words: two unrelated sentences have a median cosine of 0.47 in Spanish, 0.40 in French and 0.28 in
/// German (0.04 in English), as high as many an answer's, so over the 0.35 floor a question nothing answers came
/// back with its language's every message. The vector still orders the messages that share a word.
pub fn meaning_vouches(p: &SearchParams) -> bool {
    p.fusion != Fusion::Weighted
        || p.without_rules.contains(&Rule::LanguageReadLoosely)
        || function_words::of_the_query_language(&p.query, FUNCTION_WORDS).is_empty()
}

/// What a response says when [`meaning_vouches`] is false.
pub const WORDS_REQUIRED: &str = "only messages that share a word with the query are hits: the embedding model \
     reads this query's language too loosely to vouch for a message on meaning alone";

/// What a response says when the rule left the query's meaning out.
pub const WORDS_ALONE: &str = "ranked by the query's words alone: the embedding model reads English and \
     languages of Latin letters, not this query's script";

#[cfg(test)]
mod tests {
    use super::model_reads;

    #[test]
    fn a_query_mostly_in_a_script_the_model_does_not_know_is_not_read() {
        for (query, read) in [
            ("why did the upload test fail", true),
            ("fix the 認証 bug", true),
            ("数据库迁移失败的原因是什么", false),
            ("技術スタック", false),
            ("Reactのバージョンは何に更新した？", false),
            ("CLAUDE.mdの更新", false),
            ("데이터베이스 마이그레이션", false),
            ("почему миграция базы данных не удалась", false),
            ("почему упал CI на PostgreSQL", false),
            ("ошибка в src/index/store.rs", true),
            ("the α and β parameters", true),
            ("لماذا فشل ترحيل قاعدة البيانات", false),
            ("warum ist die Datenbankmigration fehlgeschlagen", true),
            ("pourquoi la migration a échoué", true),
            ("", true),
        ] {
            assert_eq!(model_reads(query), read, "{query}");
        }
    }
}
