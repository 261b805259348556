//! Which stretch of a long message a cut body shows: the one around the first of the query's telling words, not
//! the first of any of its words. A query's words include its frame ("what did we …", "how does it …"), whose
//! first occurrence is nearly always in a message's first line, so a long reply was cut to its opening and the
//! takeaway the question asked about fell behind the cut (docs/search.md, "The stretch a cut shows").

use crate::index::lexical::FUNCTION_WORDS;

/// Whether a query word is worth finding in a body: three characters or more and not a function word.
fn telling(term: &str) -> bool {
    term.chars().count() >= 3 && !FUNCTION_WORDS.contains(&term)
}

/// Where a cut of `max` characters of `text` starts, in characters of `text`: a third of `max` before the first
/// occurrence of a telling query word (`terms`, lowercase; [`telling`]); with none in `text`, before the first
/// occurrence of any query word of two characters or more; with none at all, at the start. 0 when `text` fits.
pub fn start_of_cut(text: &str, terms: &[String], max: usize) -> usize {
    let n = text.chars().count();
    if n <= max {
        return 0;
    }
    let lower = text.to_lowercase();
    let first = |keep: &dyn Fn(&str) -> bool| {
        terms
            .iter()
            .filter(|t| keep(t))
            .filter_map(|t| lower.find(t.as_str()))
            .min()
    };
    let Some(byte) = first(&telling).or_else(|| first(&|t: &str| t.len() > 1)) else {
        return 0;
    };
    char_of_lowercase_byte(text, byte)
        .saturating_sub(max / 3)
        .min(n - max)
}

/// The index among `text`'s characters of the one that byte `byte` of `text.to_lowercase()` came from: a
/// character may lowercase to more bytes ("İ" to "i̇"), and a cut is counted in `text`'s characters. (The final
/// sigma `str::to_lowercase` reads by context is two bytes either way.)
fn char_of_lowercase_byte(text: &str, byte: usize) -> usize {
    let mut end = 0;
    for (i, c) in text.chars().enumerate() {
        end += c.to_lowercase().map(char::len_utf8).sum::<usize>();
        if end > byte {
            return i;
        }
    }
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(q: &str) -> Vec<String> {
        crate::search::query_terms(q)
    }

    fn cut(text: &str, q: &str, max: usize) -> String {
        text.chars()
            .skip(start_of_cut(text, &terms(q), max))
            .take(max)
            .collect()
    }

    #[test]
    fn a_long_reply_is_cut_at_the_questions_words_not_where_its_frame_first_occurs() {
        let text = format!(
            "What we did today: {} Takeaway: subagents terminate on return, so a multi-round workflow spawns \
             fresh ones. {}",
            "we merged the branches and we read the docs. ".repeat(60),
            "Then we wrote the report. ".repeat(40)
        );
        let q = "what did we conclude about multi-round workflows with subagents?";
        assert!(cut(&text, q, 1000).contains("subagents terminate on return"));
        assert!(start_of_cut(&text, &terms(q), 1000) > 2000);
    }

    #[test]
    fn without_a_telling_word_any_query_word_places_the_cut_and_without_one_it_starts_at_the_top() {
        let text = format!("{}and then it was done.", "x ".repeat(3000));
        assert!(cut(&text, "was it", 300).contains("it was done"));
        assert_eq!(
            start_of_cut(&"z ".repeat(3000), &terms("nothing here"), 300),
            0
        );
        assert_eq!(start_of_cut("short text", &terms("anything"), 500), 0);
    }

    #[test]
    fn a_text_whose_lowercase_is_longer_is_cut_in_its_own_characters() {
        let text = format!("{} KEY {}", "İ".repeat(3000), "İ".repeat(3000));
        let start = start_of_cut(&text, &terms("key"), 90);
        assert_eq!(start, 3001 - 30);
        assert!(cut(&text, "key", 90).contains("KEY"));
    }
}
