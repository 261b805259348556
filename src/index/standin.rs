//! Deterministic stand-ins for the embedding model, for what must not wait for it: benchmarks of everything but
//! the model (a million messages would take hours to embed), and fast in-process tests of the index and the
//! ranking. Neither is ever used by a command a user runs; each has its own model id, so an index built with
//! one is re-embedded by the real model.

use super::{ChunkEmbedder, IndexError};
use crate::embed::{DIM, Vector};
use std::path::Path;

/// FNV-1a of `bytes` from `seed`.
fn fnv(seed: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(seed, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

fn normalised(mut v: Vector) -> Vector {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// A pseudo-random unit vector per text (a hash of its bytes seeds a xorshift): two texts are near only when
/// they are the same. What the index benchmarks embed with: the cost of everything but the model.
pub struct HashEmbedder;

impl HashEmbedder {
    /// The vector of `text`.
    pub fn vector(text: &str) -> Vector {
        let mut state = fnv(0xcbf2_9ce4_8422_2325, text.as_bytes()) | 1;
        let mut v = [0f32; DIM];
        for x in v.iter_mut() {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
            *x = (r >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        }
        normalised(v)
    }
}

impl ChunkEmbedder for HashEmbedder {
    fn model_id(&self) -> String {
        "bench/hash-vectors".into()
    }
    fn weights_sha256(&self, _: &Path) -> Result<String, IndexError> {
        Ok("none".into())
    }
    fn embed_chunked(&self, texts: &[&str], _: usize) -> Result<Vec<Vec<Vector>>, IndexError> {
        Ok(texts.iter().map(|t| vec![Self::vector(t)]).collect())
    }
}

/// Feature hashing of a text's lower-cased words: each word adds ±1 to one of the dimensions, so texts that
/// share words are near (cosine grows with the words they share) and a query's vector finds them. Meaning is
/// not modelled — a paraphrase with no shared word is far — which is what lets a test say in advance which
/// message the semantic side ranks first.
pub struct WordsEmbedder;

impl WordsEmbedder {
    /// The vector of `text` (a text without words gets a fixed unit vector).
    pub fn vector(text: &str) -> Vector {
        let mut v = [0f32; DIM];
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let h = fnv(0xcbf2_9ce4_8422_2325, w.to_lowercase().as_bytes());
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[(h % DIM as u64) as usize] += sign;
        }
        if v.iter().all(|x| *x == 0.0) {
            v[0] = 1.0;
        }
        normalised(v)
    }
}

impl ChunkEmbedder for WordsEmbedder {
    fn model_id(&self) -> String {
        "test/word-hash-vectors".into()
    }
    fn weights_sha256(&self, _: &Path) -> Result<String, IndexError> {
        Ok("none".into())
    }
    fn embed_chunked(&self, texts: &[&str], _: usize) -> Result<Vec<Vec<Vector>>, IndexError> {
        Ok(texts.iter().map(|t| vec![Self::vector(t)]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &Vector, b: &Vector) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn vectors_are_unit_deterministic_and_words_make_texts_near() {
        for v in [
            HashEmbedder::vector("a"),
            WordsEmbedder::vector("retry backoff"),
            WordsEmbedder::vector("  "),
        ] {
            assert!((cos(&v, &v) - 1.0).abs() < 1e-5);
        }
        assert_eq!(HashEmbedder::vector("x"), HashEmbedder::vector("x"));
        let q = WordsEmbedder::vector("retry backoff jitter");
        let near = WordsEmbedder::vector("Use exponential backoff with jitter on every retry.");
        let far = WordsEmbedder::vector("The tile cache holds 64 MB of renders.");
        assert!(cos(&q, &near) > 0.4, "{}", cos(&q, &near));
        assert!(cos(&q, &near) > cos(&q, &far) + 0.3);
    }
}
