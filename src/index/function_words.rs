//! The function words of a query written in another language. English's are left out of every query
//! (`super::lexical::FUNCTION_WORDS`), Russian's too ([`russian`]: Cyrillic, no English word is among them), but a
//! question in Spanish, French or German shares `de`, `la`, `die` or `wir` with nearly every message of its
//! language, so a question nothing answers came back with ten hits (docs/search.md, "Function words of other
//! languages"). Their words cannot be left out of every query: `die`, `also`, `war`, `come` and `son` are English
//! words too. So a query's language is read from its function words — the languages of Snowball's lists (as
//! tantivy ships them) with the most of the query's words, when they have two at least and more than English
//! has — and only that language's function words are left out of that query. The index is unchanged.

use std::sync::OnceLock;
use tantivy::tokenizer::{
    Language, LowerCaser, RawTokenizer, StopWordFilter, TextAnalyzer, TokenStream,
};

/// The languages of Latin letters whose function words tantivy knows (Snowball's lists).
const LATIN: [Language; 11] = [
    Language::Danish,
    Language::Dutch,
    Language::Finnish,
    Language::French,
    Language::German,
    Language::Hungarian,
    Language::Italian,
    Language::Norwegian,
    Language::Portuguese,
    Language::Spanish,
    Language::Swedish,
];

/// Question words that Snowball's lists leave out (they list what any sentence says, not what a question asks),
/// as English's list holds `what`, `why` and `how`: a question's word for "why" is no more evidence than `de`.
fn question_words(language: Language) -> &'static [&'static str] {
    match language {
        Language::Spanish => &[
            "cómo", "cuándo", "dónde", "cuál", "cuáles", "cuánto", "cuántos", "cuánta", "cuántas",
            "quién", "quiénes", "porqué",
        ],
        Language::French => &["pourquoi", "comment", "quand", "où", "combien", "quoi"],
        Language::German => &[
            "warum", "wann", "wozu", "wieso", "weshalb", "woher", "wohin", "wer", "wen", "wem",
        ],
        Language::Portuguese => &[
            "porque", "porquê", "quando", "onde", "quanto", "quantos", "quanta", "quantas",
        ],
        Language::Italian => &["quando", "perche", "cosa", "quali"],
        Language::Dutch => &["waarom", "wanneer", "waar", "welke", "welk"],
        _ => &[],
    }
}

/// One lowercasing analyser per language of [`LATIN`] that drops its function words: a word is one of them when
/// nothing comes out (tantivy keeps its lists private, so they are read this way).
fn filters() -> &'static [(Language, TextAnalyzer)] {
    static FILTERS: OnceLock<Vec<(Language, TextAnalyzer)>> = OnceLock::new();
    FILTERS.get_or_init(|| {
        LATIN
            .iter()
            .filter_map(|l| {
                let stop = StopWordFilter::new(*l)?;
                let a = TextAnalyzer::builder(RawTokenizer::default())
                    .filter(LowerCaser)
                    .filter(stop)
                    .build();
                Some((*l, a))
            })
            .collect()
    })
}

/// Whether `word` (lowercase) is a function word or a question word of `language`.
fn is_function_word_of(language: Language, analyzer: &TextAnalyzer, word: &str) -> bool {
    if question_words(language).contains(&word) {
        return true;
    }
    let mut a = analyzer.clone();
    let mut stream = a.token_stream(word);
    !stream.advance()
}

/// Russian's function words (Snowball's list: и, в, не, что …): a question in Russian, which the model cannot read
/// (`search::script`), is ranked by its words, and these would make every Russian sentence share one with it.
/// They are written in Cyrillic, so no English word is among them, and every query leaves them out.
pub fn russian() -> StopWordFilter {
    StopWordFilter::new(Language::Russian).unwrap_or_else(|| StopWordFilter::remove(Vec::new()))
}

/// Whether `word` is one of Russian's function words ([`russian`]); the hub's query blanks them
/// (`hub::search::query_words`), as PostgreSQL's English configuration knows English's alone.
pub fn is_russian(word: &str) -> bool {
    static RUSSIAN: OnceLock<TextAnalyzer> = OnceLock::new();
    let analyzer = RUSSIAN.get_or_init(|| {
        TextAnalyzer::builder(RawTokenizer::default())
            .filter(LowerCaser)
            .filter(russian())
            .build()
    });
    let mut a = analyzer.clone();
    let mut stream = a.token_stream(word);
    !word.trim().is_empty() && !stream.advance()
}

/// The query's words that could be function words, lowercased: its runs of letters, split at apostrophes and
/// hyphens (`l'avatar`, `utilisons-nous`); a token holding a digit or another joiner (`de_la`, `v2`, `la.rs`)
/// names something and is left whole, so it is none.
fn plain_words(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in query.split_whitespace() {
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        if token.is_empty()
            || !token
                .chars()
                .all(|c| c.is_alphabetic() || matches!(c, '\'' | '’' | '-'))
        {
            continue;
        }
        out.extend(
            token
                .split(['\'', '’', '-'])
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase),
        );
    }
    out
}

/// The words of `query` (lowercase) that are function words of the language it is written in, when that is a
/// language of Latin letters other than English: the languages of [`LATIN`] among whose function words the
/// query has the most words, if two at least and more than among English's (`english`). Empty for an English
/// query, or one too short to tell ("de la"? two words, both Spanish and French: both are left out).
pub fn of_the_query_language(query: &str, english: &[&str]) -> Vec<String> {
    let words = plain_words(query);
    let english_count = words
        .iter()
        .filter(|w| english.contains(&w.as_str()))
        .count();
    let per_language: Vec<(Language, Vec<&String>)> = filters()
        .iter()
        .map(|(l, a)| {
            let found = words
                .iter()
                .filter(|w| is_function_word_of(*l, a, w))
                .collect();
            (*l, found)
        })
        .collect();
    let most = per_language.iter().map(|(_, f)| f.len()).max().unwrap_or(0);
    if most < 2 || most <= english_count {
        return Vec::new();
    }
    let mut out: Vec<String> = per_language
        .into_iter()
        .filter(|(_, f)| f.len() == most)
        .flat_map(|(_, f)| f.into_iter().cloned())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::{is_russian, of_the_query_language};
    use crate::index::lexical::FUNCTION_WORDS;

    fn of(q: &str) -> Vec<String> {
        of_the_query_language(q, FUNCTION_WORDS)
    }

    #[test]
    fn a_question_in_spanish_french_or_german_loses_its_function_words_and_keeps_its_words() {
        assert_eq!(
            of("¿por qué falló la migración de la base?"),
            ["de", "la", "por", "qué"]
        );
        assert_eq!(
            of("pourquoi l'avatar ne s'affichait pas ?"),
            ["l", "ne", "pas", "pourquoi", "s"]
        );
        assert_eq!(of("wann läuft der Cache ab?"), ["der", "wann"]);
        assert_eq!(of("utilisons-nous le cache"), ["le", "nous"]);
        // Portuguese and Italian by their own lists.
        assert_eq!(of("por que o build falhou"), ["o", "por", "que"]);
        assert_eq!(of("perché il build fallisce"), ["il", "perché"]);
    }

    #[test]
    fn an_english_query_or_an_identifier_is_not_read_as_another_language() {
        // `die`, `also`, `was` are German function words, and English words too.
        assert!(of("why did the build process die").is_empty());
        assert!(of("was the die also cast").is_empty());
        // One word of another language is not enough to tell it.
        assert!(of("de facto standard").is_empty());
        // Identifiers name something: `de_la`, `la.rs` are no function words.
        assert!(of("de_la la.rs de_en").is_empty());
        assert!(of("").is_empty());
    }

    #[test]
    fn russian_function_words_are_told_from_its_words() {
        assert!(is_russian("не") && is_russian("По"));
        assert!(!is_russian("кэш") && !is_russian("the") && !is_russian(" "));
    }
}
