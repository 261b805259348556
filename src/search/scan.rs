//! The semantic half of ranking: every eligible chunk scored against the query, each message keeping its best
//! chunk. The scan reads the int8 copy of the vectors (a quarter of the bytes of the f32 matrix, see
//! [`crate::index::int8`]); the messages that become candidates are then re-scored exactly from the f32 row
//! of their best chunk, so that only those rows of the f32 matrix are ever touched.

use crate::embed::DIM;
use crate::index::Snapshot;
use crate::index::int8::{CompactQuery, dot_i8};

/// [`SemanticScan::chunk`] of a message without a scored chunk.
const NO_CHUNK: u32 = u32::MAX;

/// Per live message, its best chunk's cosine with the query.
pub struct SemanticScan {
    /// Approximate (int8) until [`SemanticScan::rescore`]d; `-inf` for messages not eligible or without vectors.
    pub best: Vec<f32>,
    /// Index into [`Snapshot::chunks`] of the chunk that gave `best`.
    chunk: Vec<u32>,
}

/// Dot product written so the compiler vectorises it: eight independent accumulators.
#[inline(always)]
pub fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn scan_generic(
    snap: &Snapshot,
    q: &[f32],
    cq: Option<&CompactQuery>,
    ok: &[bool],
    out: &mut SemanticScan,
) {
    for (ci, c) in snap.chunks.iter().enumerate() {
        let m = c.message as usize;
        if !ok[m] {
            continue;
        }
        let s = match cq.and_then(|cq| Some((cq, snap.compact_row(c)?))) {
            Some((cq, (scale, row))) => cq.scale * scale * dot_i8(&cq.values, row) as f32,
            None => dot_lanes(q, snap.vector(c)),
        };
        if s > out.best[m] {
            out.best[m] = s;
            out.chunk[m] = ci as u32;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn scan_avx2(
    snap: &Snapshot,
    q: &[f32],
    cq: Option<&CompactQuery>,
    ok: &[bool],
    out: &mut SemanticScan,
) {
    scan_generic(snap, q, cq, ok, out)
}

impl SemanticScan {
    /// Scores every eligible message's chunks against `q` (a unit vector of `DIM` floats), with AVX2/FMA when
    /// the CPU has them; from the f32 rows when `exact` (or for segments without the int8 copy).
    pub fn run(snap: &Snapshot, q: &[f32], ok: &[bool], exact: bool) -> Self {
        let mut out = Self {
            best: vec![f32::NEG_INFINITY; snap.messages.len()],
            chunk: vec![NO_CHUNK; snap.messages.len()],
        };
        if q.len() != DIM {
            return out;
        }
        let cq = (!exact).then(|| CompactQuery::new(q));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports the features the function was compiled for (checked just above).
            unsafe { scan_avx2(snap, q, cq.as_ref(), ok, &mut out) };
            return out;
        }
        scan_generic(snap, q, cq.as_ref(), ok, &mut out);
        out
    }

    /// Replaces message `m`'s approximate score by the exact cosine of its best chunk's f32 row.
    pub fn rescore(&mut self, snap: &Snapshot, q: &[f32], m: u32) {
        let m = m as usize;
        if let Some(&ci) = self.chunk.get(m)
            && ci != NO_CHUNK
        {
            self.best[m] = dot_lanes(q, snap.vector(&snap.chunks[ci as usize]));
        }
    }
}
