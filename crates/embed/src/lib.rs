//! Sentence embeddings with all-MiniLM-L6-v2 (BERT, 6 layers, 384 dimensions, mean pooling, L2-normalised,
//! 256 word pieces), computed in-process with candle and the tokenizers crate: no Python, no server.
//!
//! Texts longer than 256 word pieces are split into overlapping chunks rather than cut. Chunks of all texts in
//! a call are sorted by length and grouped into batches under a token budget (little padding), and the
//! batches run in parallel, one per core, each single-threaded inside: on small matrices that beats splitting
//! each product across threads, which spends its time waking and parking them.

mod amx;
mod attention;
mod bert;
mod dense;
pub mod download;
mod files;
mod gelu;
pub mod kernel;
mod norm;

pub use files::{
    MODEL_DIR_NAME, MODEL_ID, ModelFiles, ModelPlaces, WEIGHTS_SHA256, resolve, resolve_or_download,
};

use bert::{Bert, BertConfig};
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
pub use kernel::{Kernel, KernelChoice};
use rayon::prelude::*;
use std::path::PathBuf;
use tokenizers::Tokenizer;

/// Dimensions of an embedding.
pub const DIM: usize = 384;
/// Word pieces per model input, `[CLS]` and `[SEP]` included (sentence-transformers' `max_seq_length`).
pub const MAX_TOKENS: usize = 256;
/// Word pieces shared by consecutive chunks of a long text, so a sentence cut by a chunk edge is whole in one.
pub const CHUNK_OVERLAP: usize = 32;

/// The cosine of two vectors (0 when either is zero): how notes find near-duplicates and how the embedding
/// bench and parity test compare vectors with sentence-transformers'.
#[inline]
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// One embedding vector.
pub type Vector = [f32; DIM];

/// Why embedding could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "the embedding model was not found (looked in: {}). ghola downloads it from the Hugging Face Hub unless \
         HF_HUB_OFFLINE is set or a folder is named; otherwise run `models/fetch` in the ghola checkout, or point \
         --model-dir / $GHOLA_MODEL_DIR at a folder with config.json, tokenizer.json and model.safetensors",
        .tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    ModelNotFound { tried: Vec<PathBuf> },
    #[error(
        "could not download {file} of the embedding model from {endpoint}: {reason}. Searches stay keyword-only \
         until it is there: check the network (or HF_ENDPOINT for a mirror), or fetch it another way (`models/fetch` \
         in a checkout, then --model-dir / $GHOLA_MODEL_DIR)"
    )]
    Download {
        file: String,
        endpoint: String,
        reason: String,
    },
    #[error(
        "refused {file} downloaded from {endpoint}: its sha256 is {have}, the pinned one is {want} (a proxy or \
         mirror served something else; it was removed from the cache)"
    )]
    Tampered {
        file: String,
        endpoint: String,
        have: String,
        want: String,
    },
    #[error("could not load the embedding model from {path}: {reason}")]
    Load { path: PathBuf, reason: String },
    #[error("tokenizer: {0}")]
    Tokenize(String),
    #[error("model: {0}")]
    Model(#[from] candle_core::Error),
}

/// The embeddings of one text: one vector per chunk, in text order.
#[derive(Debug, Clone)]
pub struct TextEmbedding {
    pub chunks: Vec<Vector>,
    /// Word pieces of the whole text (without `[CLS]`/`[SEP]`), counted up to the chunks allowed.
    pub tokens: usize,
    /// The text had more word pieces than `max_chunks` chunks hold; the rest was not embedded.
    pub truncated: bool,
}

/// How batches are formed.
#[derive(Debug, Clone, Copy)]
pub struct BatchPolicy {
    /// Upper bound on padded tokens (sequences × longest) in one batch.
    pub max_batch_tokens: usize,
    /// Upper bound on sequences in one batch.
    pub max_batch_seqs: usize,
    /// Run batches in parallel, one per core (true), or one after another with each matrix product split
    /// across cores (false; the straightforward way, kept for comparison in `ghola bench embed`).
    pub parallel_batches: bool,
}

impl Default for BatchPolicy {
    fn default() -> Self {
        Self {
            max_batch_tokens: 768,
            max_batch_seqs: 64,
            parallel_batches: true,
        }
    }
}

/// The loaded model: tokenizer, encoder and the thread pool its batches run on.
pub struct Embedder {
    model: Bert,
    tokenizer: Tokenizer,
    cls: u32,
    sep: u32,
    pool: rayon::ThreadPool,
    policy: BatchPolicy,
    files: ModelFiles,
}

impl Embedder {
    /// Whether `word` (lowercased) is one whole token of the model's vocabulary (MiniLM's is BERT's 30,522
    /// word pieces, with most English words whole): a query word the history lacks is read as a typo only when
    /// it is not one ("torunament" is not; "mother" is, and is not read as "other").
    pub fn knows_word(&self, word: &str) -> bool {
        self.tokenizer.token_to_id(word).is_some()
    }

    /// Loads the model from resolved files (the weights are memory-mapped), on the fastest kernel this CPU runs.
    pub fn load(files: &ModelFiles) -> Result<Self, EmbedError> {
        Self::load_with(files, KernelChoice::Fastest)
    }

    /// Loads the model with the dense layers on the kernel `choice` gives (checked as [`Embedder::set_kernel`]
    /// says).
    pub fn load_with(files: &ModelFiles, choice: KernelChoice) -> Result<Self, EmbedError> {
        let load_err = |path: &PathBuf, reason: String| EmbedError::Load {
            path: path.clone(),
            reason,
        };
        let config: BertConfig = std::fs::read(&files.config)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
            .map_err(|e| load_err(&files.config, e))?;
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer)
            .map_err(|e| load_err(&files.tokenizer, e.to_string()))?;
        // The published tokenizer.json pads and truncates to 128; chunking is done here instead.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| load_err(&files.tokenizer, e.to_string()))?;
        let id = |t: &str| {
            tokenizer
                .token_to_id(t)
                .ok_or_else(|| load_err(&files.tokenizer, format!("no {t} token")))
        };
        let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
        let device = Device::Cpu;
        // SAFETY: the weights file is mapped read-only; ghola never writes it, and models/fetch replaces it
        // by rename, which leaves an existing mapping intact.
        let vb =
            unsafe { VarBuilder::from_mmaped_safetensors(&[&files.weights], DType::F32, &device) }
                .map_err(|e| load_err(&files.weights, e.to_string()))?;
        let mut model =
            Bert::load(vb, &config).map_err(|e| load_err(&files.weights, e.to_string()))?;
        model
            .use_kernel(choice.resolve())
            .map_err(|e| load_err(&files.weights, e.to_string()))?;
        if config.hidden_size != DIM {
            return Err(load_err(
                &files.config,
                format!("hidden_size {} is not {DIM}", config.hidden_size),
            ));
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("ghola-embed-{i}"))
            .build()
            .map_err(|e| load_err(&files.weights, e.to_string()))?;
        Ok(Self {
            model,
            tokenizer,
            cls,
            sep,
            pool,
            policy: BatchPolicy::default(),
            files: files.clone(),
        })
    }

    /// Resolves the model files (see [`resolve`]) and loads them.
    pub fn from_places(places: &ModelPlaces) -> Result<Self, EmbedError> {
        Self::load(&resolve(places)?)
    }

    /// Resolves the model files, downloading them when they are nowhere (see [`resolve_or_download`]), and
    /// loads them: what the commands that index and the server use.
    pub fn obtain(
        places: &ModelPlaces,
        kernel: KernelChoice,
        progress: &mut dyn download::DownloadProgress,
    ) -> Result<Self, EmbedError> {
        Self::load_with(&resolve_or_download(places, progress)?, kernel)
    }

    /// The files this embedder was loaded from.
    pub fn files(&self) -> &ModelFiles {
        &self.files
    }

    /// Changes how batches are formed (for benchmarks and tuning).
    pub fn set_batch_policy(&mut self, policy: BatchPolicy) {
        self.policy = policy;
    }

    /// Moves the dense layers to the kernel `choice` gives: its weights are packed, and it is checked against
    /// candle's product on the first layer (one that disagrees gives way to the next in line, with a warning).
    /// Returns the kernel in effect.
    pub fn set_kernel(&mut self, choice: KernelChoice) -> Result<Kernel, EmbedError> {
        Ok(self.model.use_kernel(choice.resolve())?)
    }

    /// The kernel the dense layers run on.
    pub fn kernel(&self) -> Kernel {
        self.model.kernel()
    }

    /// One vector per text: the embedding of its first 256 word pieces, exactly what sentence-transformers
    /// returns for it. Empty and blank texts embed as `[CLS][SEP]`, as there.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vector>, EmbedError> {
        Ok(self
            .embed_chunked(texts, 1)?
            .into_iter()
            .map(|t| t.chunks[0])
            .collect())
    }

    /// Every text split into chunks of at most 256 word pieces overlapping by [`CHUNK_OVERLAP`], at most
    /// `max_chunks` per text (at least one), each embedded.
    pub fn embed_chunked(
        &self,
        texts: &[&str],
        max_chunks: usize,
    ) -> Result<Vec<TextEmbedding>, EmbedError> {
        let max_chunks = max_chunks.max(1);
        let tokenized = self.tokenize(texts, max_chunks)?;
        let mut seqs: Vec<Vec<u32>> = Vec::new();
        let mut owners = Vec::new();
        let mut out = Vec::with_capacity(texts.len());
        for (text_idx, (ids, truncated)) in tokenized.into_iter().enumerate() {
            let chunks = self.chunk(&ids, max_chunks);
            for c in chunks {
                owners.push(text_idx);
                seqs.push(c);
            }
            out.push(TextEmbedding {
                chunks: Vec::new(),
                tokens: ids.len(),
                truncated,
            });
        }
        let vectors = self.embed_sequences(&seqs)?;
        for (owner, v) in owners.into_iter().zip(vectors) {
            out[owner].chunks.push(v);
        }
        Ok(out)
    }

    /// Word pieces of each text without special tokens, cut to what `max_chunks` chunks can hold.
    fn tokenize(
        &self,
        texts: &[&str],
        max_chunks: usize,
    ) -> Result<Vec<(Vec<u32>, bool)>, EmbedError> {
        let body = MAX_TOKENS - 2;
        let keep = body + (max_chunks - 1) * (body - CHUNK_OVERLAP);
        // A word piece rarely spans more than a few dozen bytes; do not tokenize megabytes to keep a few
        // hundred pieces (cut on a char boundary, generously).
        let byte_cap = keep * 64;
        self.pool.install(|| {
            texts
                .par_iter()
                .map(|t| {
                    let cut = t.floor_char_boundary(byte_cap);
                    let enc = self
                        .tokenizer
                        .encode_fast(&t[..cut], false)
                        .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
                    let mut ids = enc.get_ids().to_vec();
                    let truncated = ids.len() > keep || cut < t.len();
                    ids.truncate(keep);
                    Ok((ids, truncated))
                })
                .collect()
        })
    }

    /// `[CLS] piece… [SEP]` sequences covering `ids`, consecutive ones sharing [`CHUNK_OVERLAP`] pieces.
    fn chunk(&self, ids: &[u32], max_chunks: usize) -> Vec<Vec<u32>> {
        let body = MAX_TOKENS - 2;
        let step = body - CHUNK_OVERLAP;
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + body).min(ids.len());
            let mut seq = Vec::with_capacity(end - start + 2);
            seq.push(self.cls);
            seq.extend_from_slice(&ids[start..end]);
            seq.push(self.sep);
            out.push(seq);
            if end == ids.len() || out.len() == max_chunks {
                return out;
            }
            start += step;
        }
    }

    /// Embeds token sequences (with special tokens), batched by length and run in parallel.
    pub fn embed_sequences(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vector>, EmbedError> {
        let batches = plan_batches(seqs, self.policy);
        let run = |batch: &Vec<usize>| -> Result<Vec<(usize, Vector)>, EmbedError> {
            let refs: Vec<&[u32]> = batch.iter().map(|&i| seqs[i].as_slice()).collect();
            let vecs = self.model.embed_batch(&refs)?;
            Ok(batch
                .iter()
                .copied()
                .zip(vecs.into_iter().map(to_array))
                .collect())
        };
        let results: Vec<Result<Vec<(usize, Vector)>, EmbedError>> = if self.policy.parallel_batches
        {
            // One job per batch (`with_max_len(1)`): rayon otherwise cuts the list into a few long runs, and a
            // core that finished its runs had nothing to take from the other's last one — the last 4.5 s of a 20 s
            // `ghola embed` ran on one core.
            self.pool
                .install(|| batches.par_iter().with_max_len(1).map(run).collect())
        } else {
            batches.iter().map(run).collect()
        };
        let mut out = vec![[0f32; DIM]; seqs.len()];
        for r in results {
            for (i, v) in r? {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Word pieces of a text (without special tokens), for callers that budget by tokens.
    pub fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        let enc = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        Ok(enc.len())
    }
}

fn to_array(v: Vec<f32>) -> Vector {
    let mut a = [0f32; DIM];
    a.copy_from_slice(&v[..DIM]);
    a
}

/// Groups sequence indices into batches of similar length: sorted by length, then cut whenever the padded size
/// (count × longest) would pass the token budget. Longest batches first, so the parallel tail is short.
fn plan_batches(seqs: &[Vec<u32>], policy: BatchPolicy) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..seqs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut longest = 0;
    for i in order {
        let len = seqs[i].len().max(1);
        let longest_if = longest.max(len);
        if !current.is_empty()
            && ((current.len() + 1) * longest_if > policy.max_batch_tokens
                || current.len() == policy.max_batch_seqs)
        {
            batches.push(std::mem::take(&mut current));
            longest = 0;
        }
        longest = longest.max(len);
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_the_budget_and_cover_everything() {
        let seqs: Vec<Vec<u32>> = (0..300).map(|i| vec![1; 2 + (i * 37) % 255]).collect();
        let policy = BatchPolicy {
            max_batch_tokens: 1024,
            max_batch_seqs: 16,
            parallel_batches: true,
        };
        let batches = plan_batches(&seqs, policy);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort();
        assert_eq!(seen, (0..300).collect::<Vec<_>>());
        for b in &batches {
            let longest = b.iter().map(|&i| seqs[i].len()).max().unwrap();
            assert!(b.len() <= 16);
            assert!(b.len() == 1 || b.len() * longest <= 1024);
        }
    }
}
