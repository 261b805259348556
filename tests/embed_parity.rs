//! Parity with sentence-transformers: every reference text's first-chunk vector matches the reference vector,
//! to a cosine ≥ 0.9999 on the f32 path and ≥ 0.999 with bf16 products on AMX tiles (where the CPU has them).
//! Needs the model weights (`models/fetch`) and `../shared/reference`; fails in CI without them.

use ghola::embed::{DIM, Embedder, MAX_TOKENS, Precision, cosine};
use std::path::{Path, PathBuf};

fn reference() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference");
    if dir.join("texts.jsonl").is_file() {
        return Some(dir);
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "CI=true but {} is missing",
        dir.display()
    );
    None
}

fn embedder() -> Embedder {
    Embedder::from_default_location(None).expect("model files: run models/fetch")
}

/// The worst cosine between the reference vectors and this precision's, with the text it was found on.
fn worst_cosine(precision: Precision) -> Option<(f32, String)> {
    let dir = reference()?;
    let texts: Vec<String> = std::fs::read_to_string(dir.join("texts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let raw = std::fs::read(dir.join("minilm-vectors.f32")).unwrap();
    let want: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(want.len(), texts.len() * DIM);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut e = embedder();
    let in_effect = e.set_precision(precision);
    let got = e.embed(&refs).unwrap();
    let mut worst = (1.0f32, 0usize);
    for (i, v) in got.iter().enumerate() {
        let c = cosine(v, &want[i * DIM..(i + 1) * DIM]);
        if c < worst.0 {
            worst = (c, i);
        }
    }
    eprintln!(
        "{precision:?} (in effect: {in_effect:?}): worst cosine {:.6} (text {})",
        worst.0, worst.1
    );
    let text = &texts[worst.1];
    Some((
        worst.0,
        format!(
            "text {}: {:?}",
            worst.1,
            text.chars().take(80).collect::<String>()
        ),
    ))
}

#[test]
fn first_chunks_match_sentence_transformers() {
    let Some((worst, text)) = worst_cosine(Precision::F32) else {
        return;
    };
    assert!(worst >= 0.9999, "{text} has cosine {worst}");
}

#[test]
fn bf16_products_stay_within_parity() {
    if Precision::Bf16.effective() != Precision::Bf16 {
        eprintln!("no AMX on this CPU: bf16 falls back to f32 (pinned by the test above)");
    }
    let Some((worst, text)) = worst_cosine(Precision::Bf16) else {
        return;
    };
    assert!(worst >= 0.999, "{text} has cosine {worst}");
}

#[test]
fn long_texts_are_chunked_not_cut_and_blank_texts_work() {
    if reference().is_none() {
        return;
    }
    let e = embedder();
    let long = "The retry policy uses exponential backoff with jitter. ".repeat(200);
    let out = e
        .embed_chunked(&[&long, "", "   \n\t", "short"], 3)
        .unwrap();
    assert_eq!(out[0].chunks.len(), 3);
    assert!(out[0].truncated);
    assert!(out[0].tokens > 2 * (MAX_TOKENS - 2));
    let unlimited = e.embed_chunked(&[&long], 100).unwrap();
    assert!(!unlimited[0].truncated);
    assert!(unlimited[0].chunks.len() > 3);
    for t in &out[1..] {
        assert_eq!(t.chunks.len(), 1);
        let norm: f32 = t.chunks[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    // The first chunk of a long text is what `embed` returns for it.
    let first = e.embed(&[&long]).unwrap();
    assert!(cosine(&first[0], &out[0].chunks[0]) > 0.99999);
}
