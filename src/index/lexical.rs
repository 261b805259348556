//! The lexical half of the index: tantivy (BM25) over each message's readable text, analysed by the code-aware
//! tokenizer and an English stemmer. Documents carry the message's gid. Every commit's payload is the manifest
//! generation it belongs to; a lexical index whose payload differs from the manifest is rebuilt from the stored
//! text, never trusted half-written.

use super::terms::{CodeTokenizer, is_grammar, katakana_words};
use std::path::Path;
use std::sync::Arc;
use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{Language, LowerCaser, Stemmer, StopWordFilter, TextAnalyzer};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

const TOKENIZER: &str = "ghola_code";

/// The version of what a text is indexed as (the tokenizer and its filters), written beside the generation in
/// every commit. Bump it when [`super::terms::terms`] or [`analyzer`] changes the terms of any text: an index
/// written by another version is rebuilt from the stored text by the next update ([`Lexical::is_current`]), as a
/// damaged one is, and searched as it is until then ([`Lexical::generation`]). 1 was the bare generation (until
/// 2026-12-07); 2 indexed Chinese, Japanese and Korean by pairs of characters (commits `5248f92` to `c487bea`
/// of the same day); 3 also reads letters and digits of the full width as ASCII's.
pub const ANALYSIS: u32 = 3;

/// tantivy's writer, which on drop waits for the merges it started in the background: a merge still running when
/// the next update opens its own writer races it over the same files (seen as a segment file missing from under
/// the next writer's reader).
pub struct LexWriter(Option<IndexWriter>);

impl std::ops::Deref for LexWriter {
    type Target = IndexWriter;
    fn deref(&self) -> &IndexWriter {
        self.0.as_ref().expect("taken only by drop")
    }
}

impl std::ops::DerefMut for LexWriter {
    fn deref_mut(&mut self) -> &mut IndexWriter {
        self.0.as_mut().expect("taken only by drop")
    }
}

impl Drop for LexWriter {
    fn drop(&mut self) {
        if let Some(w) = self.0.take()
            && let Err(e) = w.wait_merging_threads()
        {
            tracing::warn!("lexical index: a background merge failed: {e}");
        }
    }
}

pub use super::spelling::Correction;

/// What a BM25 search found: (gid, score), best first.
pub type Hits = Vec<(u64, f32)>;

/// The messages a search may return, by gid (a set of bits): those its filters keep — one project of a history
/// that holds many, a date range, a session. A keyword search over a scope collects only its messages, so the
/// best matches of other projects cannot fill the candidate list before a project's own are reached. Scores
/// keep the whole index's statistics (scoring by the scope's own was measured and not kept: docs/search.md,
/// "A project's matches, found within it").
#[derive(Clone)]
pub struct Scope {
    bits: Arc<Vec<u64>>,
}

impl Scope {
    /// The scope of these gids.
    pub fn of(gids: impl IntoIterator<Item = u64>) -> Self {
        let mut bits: Vec<u64> = Vec::new();
        for gid in gids {
            let word = usize::try_from(gid / 64).unwrap_or(usize::MAX);
            if word >= bits.len() {
                bits.resize(word + 1, 0);
            }
            bits[word] |= 1 << (gid % 64);
        }
        Self {
            bits: Arc::new(bits),
        }
    }

    /// Whether the message of `gid` is in the scope.
    pub fn contains(&self, gid: u64) -> bool {
        usize::try_from(gid / 64)
            .ok()
            .and_then(|w| self.bits.get(w))
            .is_some_and(|w| w & (1 << (gid % 64)) != 0)
    }
}

/// The lexical index of one index directory.
pub struct Lexical {
    index: Index,
    gid: Field,
    text: Field,
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer)
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The word of `text` that the index holds as `term`, as `text` writes it (lowercased): "festival" for the
/// stem "festiv". The index keeps stems only, so a word searched in place of another is shown to the reader in a
/// form some message has; `None` when `text` has no word with that stem.
pub fn surface_word(text: &str, term: &str) -> Option<String> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    while let Some(t) = stream.next() {
        if t.text == term {
            return text.get(t.offset_from..t.offset_to).map(str::to_lowercase);
        }
    }
    None
}

/// English function words: in a question ("what did we decide about retries") they are not evidence, and a
/// message that shares only them with the query is noise. They are left out of the query, not of the index, so
/// an identifier that contains one (`the_config`, `is-ready`) still matches whole.
pub const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "done", "down", "during", "each", "either",
    "else", "ever", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her",
    "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "let", "lets", "may", "me", "might", "more", "most", "must", "my", "myself", "no",
    "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out",
    "over", "own", "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "to",
    "too", "under", "until", "up", "us", "very", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "whose", "why", "will", "with", "would", "yes", "yet", "you",
    "your", "yours",
];

/// The query analyser: the index's, with function words dropped before stemming — English's, Russian's
/// ([`super::function_words::russian`]), and those of the language of Latin letters `query` is written in
/// ([`super::function_words::of_the_query_language`]: `de`, `la` of a question in Spanish).
fn query_analyzer(query: &str) -> TextAnalyzer {
    use super::function_words;
    TextAnalyzer::builder(CodeTokenizer)
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            FUNCTION_WORDS
                .iter()
                .map(|w| w.to_string())
                .chain(function_words::of_the_query_language(query, FUNCTION_WORDS)),
        ))
        .filter(function_words::russian())
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The query's terms as the index analysed them (deduplicated), function words and pairs of grammar
/// ([`super::terms::is_grammar`]: した, 的原) left out — unless the query has nothing else, when they are what the
/// user is looking for. The team hub asks for the same pairs (`hub::search::query_words`).
pub fn query_terms(query: &str) -> Vec<String> {
    query_words(query).into_iter().map(|(t, _)| t).collect()
}

/// [`query_terms`], each with the word of the query it came from, lowercased (a typo is looked for under both:
/// the stemmer reads "torunament" as "toruna", far from the "tournament" it leaves whole).
fn query_words(query: &str) -> Vec<(String, String)> {
    let collect = |mut a: TextAnalyzer, grammar: bool| {
        let mut stream = a.token_stream(query);
        let mut out: Vec<(String, String)> = Vec::new();
        while let Some(t) = stream.next() {
            if (grammar || !is_grammar(&t.text)) && !out.iter().any(|(term, _)| *term == t.text) {
                let word = query
                    .get(t.offset_from..t.offset_to)
                    .unwrap_or(&t.text)
                    .to_lowercase();
                out.push((t.text.clone(), word));
            }
        }
        out
    };
    let content = collect(query_analyzer(query), false);
    if content.is_empty() {
        collect(analyzer(), true)
    } else {
        content
    }
}

impl Lexical {
    /// Opens (or creates) the lexical index under `dir`.
    pub fn open(dir: &Path) -> tantivy::Result<Self> {
        fs_err::create_dir_all(dir)?;
        let mut builder = Schema::builder();
        let gid = builder.add_u64_field("gid", INDEXED | FAST | STORED);
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let text = builder.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(indexing),
        );
        let schema = builder.build();
        let directory = tantivy::directory::MmapDirectory::open(dir)?;
        let index = Index::open_or_create(directory, schema)?;
        index.tokenizers().register(TOKENIZER, analyzer());
        Ok(Self { index, gid, text })
    }

    /// The manifest generation and the analysis of the last commit (`12/3`; a bare `12` is analysis 1, as ghola
    /// wrote before it named the analysis).
    fn last_commit(&self) -> Option<(u64, u32)> {
        let payload = self.index.load_metas().ok()?.payload?;
        match payload.split_once('/') {
            Some((generation, analysis)) => {
                Some((generation.parse().ok()?, analysis.parse().ok()?))
            }
            None => Some((payload.parse().ok()?, 1)),
        }
    }

    /// The manifest generation of the last commit, if any, whatever analysis made its terms: a reader searches an
    /// index of an older analysis until the writer has rebuilt it ([`Self::is_current`]), since the two read
    /// alike every text but the one the newer analysis changed (for analyses 2 and 3, Chinese, Japanese and Korean),
    /// where keywords are better late than never.
    pub fn generation(&self) -> Option<u64> {
        self.last_commit().map(|(generation, _)| generation)
    }

    /// Whether the last commit belongs to manifest `generation` and its terms were made as this build makes them
    /// ([`ANALYSIS`]): the writer rebuilds anything else from the stored text.
    pub fn is_current(&self, generation: u64) -> bool {
        self.last_commit() == Some((generation, ANALYSIS))
    }

    /// A writer (tantivy holds its own lock file; only the ghola writer, under the index lock, calls this).
    /// `big`: a large batch is coming (a first index, a rewrite), worth one indexing thread per core (up to 4:
    /// twice as fast on two cores); a small append commits faster with one.
    pub fn writer(&self, big: bool) -> tantivy::Result<LexWriter> {
        let threads = if big {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(1, 4)
        } else {
            1
        };
        self.index
            .writer_with_num_threads(threads, 40_000_000 * threads)
            .map(|w| LexWriter(Some(w)))
    }

    /// Adds one message's text.
    pub fn add(&self, w: &IndexWriter, gid: u64, text: &str) -> tantivy::Result<()> {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.gid, gid);
        doc.add_text(self.text, text);
        w.add_document(doc)?;
        Ok(())
    }

    /// Removes a message.
    pub fn delete(&self, w: &IndexWriter, gid: u64) {
        w.delete_term(Term::from_field_u64(self.gid, gid));
    }

    /// Rewrites the committed segments as one and deletes the old files: tantivy only marks a deleted
    /// message, so its words would stay in the files until some later merge (`ghola forget` calls this).
    pub fn compact(&self, w: &mut IndexWriter) -> tantivy::Result<()> {
        let ids = self.index.searchable_segment_ids()?;
        if !ids.is_empty() {
            w.merge(&ids).wait()?;
        }
        w.garbage_collect_files().wait()?;
        Ok(())
    }

    /// Commits with the manifest generation and the analysis as payload (`12/3`).
    pub fn commit(&self, w: &mut IndexWriter, generation: u64) -> tantivy::Result<()> {
        let mut prepared = w.prepare_commit()?;
        prepared.set_payload(&format!("{generation}/{ANALYSIS}"));
        prepared.commit()?;
        Ok(())
    }

    /// A reader of the last commit.
    pub fn reader(&self) -> tantivy::Result<IndexReader> {
        // tantivy panics on some damaged files instead of returning an error (a document store whose footer
        // points outside the file: `FileSlice::slice`'s bounds check), so the reader is opened on a thread of its
        // own and such a panic ends as this error — a search without words, a rebuild by the next update —
        // not as the process.
        std::thread::scope(|s| {
            s.spawn(|| {
                self.index
                    .reader_builder()
                    .reload_policy(ReloadPolicy::Manual)
                    .try_into()
            })
            .join()
            .unwrap_or_else(|_| {
                Err(tantivy::TantivyError::InternalError(
                    "the keyword index is damaged: opening it failed inside tantivy".into(),
                ))
            })
        })
    }

    /// BM25 search: up to `limit` (gid, score), best first, and the query's terms that no message contains and
    /// were read as the indexed term one typo away ([`super::spelling::nearest_term`]) — only words that
    /// `knows_word` does not know (a real word the history lacks is not a typo of its neighbour: "mother" is
    /// not "other"); `None` corrects nothing. Any query term may match, a word of katakana by two of its pairs
    /// at least ([`super::terms::katakana_words`]). With a `scope`, only its messages are found ([`Scope`]);
    /// without, every message.
    pub fn search(
        &self,
        reader: &IndexReader,
        query: &str,
        limit: usize,
        knows_word: Option<&dyn Fn(&str) -> bool>,
        scope: Option<&Scope>,
    ) -> tantivy::Result<(Hits, Vec<Correction>)> {
        let searcher = reader.searcher();
        let mut terms: Vec<String> = Vec::new();
        let mut corrections = Vec::new();
        for (term, word) in query_words(query) {
            let typo = knows_word.is_some_and(|knows| !knows(&word));
            let nearest = if typo {
                super::spelling::nearest_term(&searcher, self.text, &term, &word)?
            } else {
                None
            };
            let t = match nearest {
                Some(searched) => {
                    corrections.push(Correction {
                        typed: word,
                        searched: searched.clone(),
                        written: None,
                    });
                    searched
                }
                None => term,
            };
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        let term_query = |t: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(self.text, t),
                IndexRecordOption::WithFreqs,
            ))
        };
        // A word of katakana matches by two of its pairs at least (`terms::katakana_words`); its pairs are not
        // also asked for alone.
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let mut grouped: Vec<String> = Vec::new();
        for word in katakana_words(query) {
            let mut pairs: Vec<&String> = word.iter().filter(|p| terms.contains(p)).collect();
            pairs.sort();
            pairs.dedup();
            if pairs.len() >= 2 {
                let each = pairs
                    .iter()
                    .map(|p| (Occur::Should, term_query(p)))
                    .collect();
                clauses.push((
                    Occur::Should,
                    Box::new(BooleanQuery::with_minimum_required_clauses(each, 2)),
                ));
                grouped.extend(pairs.into_iter().cloned());
            }
        }
        clauses.extend(
            terms
                .iter()
                .filter(|t| !grouped.contains(t))
                .map(|t| (Occur::Should, term_query(t))),
        );
        if clauses.is_empty() {
            return Ok((Vec::new(), corrections));
        }
        let query = BooleanQuery::new(clauses);
        let best = TopDocs::with_limit(limit.max(1));
        let top = match scope {
            None => searcher.search(&query, &best)?,
            Some(scope) => {
                let kept = scope.clone();
                let within = FilterCollector::new(
                    "gid".to_string(),
                    move |gid: u64| kept.contains(gid),
                    best,
                );
                searcher.search(&query, &within)?
            }
        };
        // A segment's gid column is opened once per search, not once per hit: opening it reads the column's
        // block index, which for two thousand hits was a third of a global search's keyword time at 1M messages.
        let mut columns: Vec<Option<tantivy::columnar::Column<u64>>> =
            vec![None; searcher.segment_readers().len()];
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let slot = &mut columns[addr.segment_ord as usize];
            let col = match slot {
                Some(col) => col,
                None => slot.insert(
                    searcher
                        .segment_reader(addr.segment_ord)
                        .fast_fields()
                        .u64("gid")?,
                ),
            };
            if let Some(gid) = col.first(addr.doc_id) {
                out.push((gid, score));
            }
        }
        Ok((out, corrections))
    }

    /// What is wrong with the committed files, if anything: a file the last commit names that is missing, or
    /// one whose checksum (tantivy's footer) does not match. Damaged postings can make tantivy panic or answer
    /// wrongly, and its generation payload (in `meta.json`) says nothing of them, so the full update path checks
    /// this and rebuilds the lexical index from the stored text when it finds anything.
    pub fn damage(&self, dir: &Path) -> Option<String> {
        let metas = match self.index.searchable_segment_metas() {
            Ok(m) => m,
            Err(e) => return Some(e.to_string()),
        };
        // tantivy lists a deletes file for every segment; only a segment with deletes has one.
        let wanted = |m: &tantivy::SegmentMeta, f: &std::path::Path| {
            m.has_deletes() || f.extension().is_none_or(|x| x != "del")
        };
        if let Some(missing) = metas
            .iter()
            .flat_map(|m| m.list_files().into_iter().filter(move |f| wanted(m, f)))
            .find(|f| !dir.join(f).exists())
        {
            return Some(format!("{} is missing", missing.display()));
        }
        match self.index.validate_checksum() {
            Ok(bad) if bad.is_empty() => None,
            Ok(bad) => Some(format!(
                "checksum mismatch in {}",
                bad.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Err(e) => Some(e.to_string()),
        }
    }

    /// Deletes everything (before a rebuild).
    pub fn clear(&self, w: &mut IndexWriter) -> tantivy::Result<()> {
        w.delete_all_documents()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Lexical, Scope, surface_word};

    /// A project's matches are found within it even when another project's better matches outnumber the
    /// candidates asked for: without a scope the top five are all the other project's.
    #[test]
    fn a_scope_finds_its_own_matches_behind_other_projects_better_ones() {
        let dir = tempfile::tempdir().unwrap();
        let lex = Lexical::open(dir.path()).unwrap();
        {
            let mut w = lex.writer(false).unwrap();
            for gid in 0..30u64 {
                lex.add(&w, gid, "retry retry backoff").unwrap();
            }
            lex.add(
                &w,
                100,
                "we spent the afternoon on the release notes and one retry in the upload path",
            )
            .unwrap();
            lex.add(&w, 101, "nothing about it here").unwrap();
            lex.commit(&mut w, 1).unwrap();
        }
        let r = lex.reader().unwrap();
        let (all, _) = lex.search(&r, "retry", 5, None, None).unwrap();
        assert_eq!(all.len(), 5);
        assert!(all.iter().all(|(gid, _)| *gid < 30), "{all:?}");
        let project = Scope::of([100, 101, 5000]);
        let (within, _) = lex.search(&r, "retry", 5, None, Some(&project)).unwrap();
        assert_eq!(within.iter().map(|h| h.0).collect::<Vec<_>>(), vec![100]);
        assert!(project.contains(5000) && !project.contains(5001) && !project.contains(u64::MAX));
        let (none, _) = lex
            .search(&r, "retry", 5, None, Some(&Scope::of([])))
            .unwrap();
        assert!(none.is_empty());
    }

    /// A keyword index of `texts` (gids 1, 2, … in order) in a temporary folder, which must outlive it.
    fn index_of(texts: &[&str]) -> (tempfile::TempDir, Lexical) {
        let dir = tempfile::tempdir().unwrap();
        let lex = Lexical::open(dir.path()).unwrap();
        let mut w = lex.writer(false).unwrap();
        for (i, t) in texts.iter().enumerate() {
            lex.add(&w, i as u64 + 1, t).unwrap();
        }
        lex.commit(&mut w, 1).unwrap();
        (dir, lex)
    }

    /// The gids `lex` finds for `q`, best first, or in gid order when `sorted`.
    fn gids(lex: &Lexical, q: &str, sorted: bool) -> Vec<u64> {
        let (hits, _) = lex
            .search(&lex.reader().unwrap(), q, 10, None, None)
            .unwrap();
        let mut out: Vec<u64> = hits.into_iter().map(|h| h.0).collect();
        if sorted {
            out.sort();
        }
        out
    }

    /// A question shares a word with a message only where a word of substance is shared: its pairs of grammar
    /// (した, について) are not asked for, and a word of katakana is asked for by two of its pairs at least, so
    /// サービス ("service") does not find サーバー ("server") by their サー.
    #[test]
    fn grammar_and_a_lone_pair_of_a_borrowed_word_find_nothing() {
        let (_dir, lex) = index_of(&[
            "サーバーを再起動しました",
            "決済サービスを追加しました",
            "ポートについて",
        ]);
        let found = |q: &str| gids(&lex, q, true);
        assert_eq!(found("サービスはどこ？"), [2]);
        assert_eq!(found("サーバー"), [1]);
        assert_eq!(found("リトライについて何を決めましたか"), Vec::<u64>::new());
        // Grammar alone is what is asked for when nothing else is.
        assert_eq!(found("について"), [3]);
        assert_eq!(found("しました"), [1, 2]);
    }

    /// A question in Spanish or German does not ask for its function words (`de`, `la`, `die`), which nearly
    /// every sentence of its language holds; an English one keeps `die`, an English word too.
    #[test]
    fn the_function_words_of_a_question_in_another_language_find_nothing() {
        let (_dir, lex) = index_of(&[
            "La migración de la base de datos falló.",
            "Die Tests liefen in ein Timeout.",
            "the worker would die on start",
        ]);
        let found = |q: &str| gids(&lex, q, true);
        assert_eq!(
            found("¿qué proveedor de pagos usamos para la tienda?"),
            Vec::<u64>::new()
        );
        assert_eq!(found("¿por qué falló la migración?"), [1]);
        assert_eq!(found("wie werden die Mails verschickt?"), Vec::<u64>::new());
        assert_eq!(found("why did the worker die"), [2, 3]);
    }

    /// A commit names the analysis that made its terms. One written before it did (the bare generation) or by
    /// another analysis is still searched at its generation, but is not current, which is what sends the next
    /// update to rebuild it; a payload that names neither is no generation at all.
    #[test]
    fn a_commit_of_another_analysis_is_searched_but_not_current() {
        let dir = tempfile::tempdir().unwrap();
        let lex = Lexical::open(dir.path()).unwrap();
        assert_eq!(lex.generation(), None);
        assert!(!lex.is_current(0));
        let mut w = lex.writer(false).unwrap();
        lex.add(&w, 1, "デフォルトポート3000に修正").unwrap();
        lex.commit(&mut w, 7).unwrap();
        assert_eq!(lex.generation(), Some(7));
        assert!(lex.is_current(7) && !lex.is_current(8));
        for (payload, generation) in [
            ("7".to_string(), Some(7)),
            (format!("7/{}", super::ANALYSIS + 1), Some(7)),
            ("7/".into(), None),
            ("seven".into(), None),
        ] {
            let mut prepared = w.prepare_commit().unwrap();
            prepared.set_payload(&payload);
            prepared.commit().unwrap();
            let lex = Lexical::open(dir.path()).unwrap();
            assert_eq!(lex.generation(), generation, "{payload}");
            assert!(!lex.is_current(7), "{payload}");
        }
    }

    /// A word of Japanese is found inside the sentences that use it, the message using it whole first.
    #[test]
    fn a_word_of_japanese_is_found_inside_a_sentence() {
        let (_dir, lex) = index_of(&[
            "主な更新内容：技術スタック更新、Next.js 15",
            "サーバー情報の更新：デフォルトポート3000に修正",
            "スタックトレースを確認しました",
        ]);
        let found = |q: &str| gids(&lex, q, false);
        assert_eq!(found("技術スタック").first(), Some(&1));
        assert_eq!(found("ポート"), vec![2]);
        assert_eq!(found("next.js"), vec![1]);
        assert!(found("更新内容のデータ").starts_with(&[1]));
    }

    /// The index holds stems; a note shows the word as a message writes it.
    #[test]
    fn a_stem_is_shown_as_a_message_writes_it() {
        assert_eq!(
            surface_word("The Festival opened on Friday", "festiv").as_deref(),
            Some("festival")
        );
        // The first word with that stem, as written (`snake_case` parts included).
        assert_eq!(
            surface_word("festivals: run_festivities()", "festiv").as_deref(),
            Some("festivals")
        );
        assert_eq!(surface_word("the tournament final", "festiv"), None);
        assert_eq!(surface_word("", "festiv"), None);
    }

    /// A byte flipped anywhere in the keyword index ends, at worst, in an error from opening it — never in a
    /// panic of the caller (tantivy panics on some damaged files; `Lexical::reader` contains it).
    #[test]
    fn a_damaged_keyword_index_opens_to_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        {
            let lex = Lexical::open(dir.path()).unwrap();
            let mut w = lex.writer(false).unwrap();
            for i in 0..40u64 {
                lex.add(
                    &w,
                    i,
                    &format!("fault matrix talk {i}: the parser and the widgets"),
                )
                .unwrap();
            }
            lex.commit(&mut w, 1).unwrap();
        }
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                !name.ends_with(".lock") && !name.starts_with("meta") && name != "ghola.json"
            })
            .collect();
        assert!(!files.is_empty());
        let (mut opened, mut refused) = (0, 0);
        for file in &files {
            let pristine = std::fs::read(file).unwrap();
            for at in 0..pristine.len() {
                let mut b = pristine.clone();
                b[at] ^= 0x5a;
                std::fs::write(file, &b).unwrap();
                match Lexical::open(dir.path()).and_then(|l| l.reader()) {
                    Ok(_) => opened += 1,
                    Err(_) => refused += 1,
                }
            }
            std::fs::write(file, &pristine).unwrap();
        }
        assert!(opened + refused > 0);
        assert!(Lexical::open(dir.path()).unwrap().reader().is_ok());
    }
}
