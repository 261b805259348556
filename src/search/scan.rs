//! The semantic half of ranking: every eligible chunk scored against the query, each message keeping its best
//! chunk. The scan reads the int8 copy of the vectors (a quarter of the bytes of the f32 matrix, see
//! [`crate::index::int8`]); the messages that become candidates are then re-scored exactly from the f32 row
//! of their best chunk, so that only those rows of the f32 matrix are ever touched.
//!
//! Over a large history the int8 scan waits on memory (390 MB a query at a million messages), so there it reads
//! the 4-bit copy first (half of that, [`crate::index::int4`]) and scores in int8 only the messages that can
//! matter: within twice the 4-bit error of the best few hundred, and not under the floor less that error
//! ([`Precision::Prefiltered`]); every candidate the ranking reads is scored in int8 or better.

use crate::embed::DIM;
use crate::index::int4::dot_u4_i8;
#[cfg(target_arch = "x86_64")]
use crate::index::int4::dot_u4_i8_avx2;
#[cfg(target_arch = "x86_64")]
use crate::index::int8::dot_i8_avx2;
use crate::index::int8::{CompactQuery, dot_i8};
use crate::index::{LiveChunk, Snapshot};

/// [`SemanticScan::chunk`] of a message without a scored chunk.
const NO_CHUNK: u32 = u32::MAX;

/// Chunks from which a search reads the 4-bit copy first: under them the int8 rows are read quickly enough
/// (at 100,000 messages the whole ranking takes about 20 ms), and every ranking is exactly what it always was.
pub const PREFILTER_MIN_CHUNKS: usize = 250_000;

/// How far a 4-bit score may be from the int8 one: the worst error measured over the real vectors of
/// `../shared` against its questions was 0.041 (standard deviation 0.007, `bench/quant_error.py`); a margin of
/// seven deviations.
pub const INT4_ERROR: f32 = 0.05;

/// How far an int8 score may be from the exact one, with room to spare (the worst error measured is 0.003, standard
/// deviation 0.0005, `bench/quant_error.py`): the margin under a threshold within which a message stays a semantic
/// candidate, and within which the exact score decides whether a message of the named time is one.
pub const INT8_ERROR: f32 = 0.02;

/// Which copy of the vectors a scan reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    /// The f32 rows (`SearchParams::exact_scan`; segments without the int8 copy are always read so).
    Exact,
    /// The int8 rows of every eligible chunk.
    Int8,
    /// The 4-bit rows of every eligible chunk, then the int8 rows of every chunk of each message whose 4-bit score
    /// is within `2 × INT4_ERROR` of the `keep`-th best and not under `floor − INT4_ERROR`: a message the int8
    /// scan would put among the best `keep` above `floor` is always among them. Other messages keep a 4-bit score
    /// until [`SemanticScan::refine`] is asked for them (the keyword matches).
    Prefiltered { floor: f32, keep: usize },
}

/// Per live message, its best chunk's cosine with the query.
pub struct SemanticScan {
    /// Approximate (int8, or 4-bit under [`Precision::Prefiltered`] until refined) until
    /// [`SemanticScan::rescore`]d; `-inf` for messages not eligible or without vectors.
    pub best: Vec<f32>,
    /// Index into [`Snapshot::chunks`] of the chunk that gave `best`.
    chunk: Vec<u32>,
    /// The quantized query, kept when some scores are still 4-bit ones (for [`SemanticScan::refine`]).
    coarse: Option<CompactQuery>,
    /// Whether the CPU has AVX2 (found once per scan; refining then uses the AVX2 int8 kernel).
    avx2: bool,
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

/// Which rows the scan loop reads: `None` the f32 ones; the int8 ones; the 4-bit ones (with the query's sum).
#[derive(Clone, Copy)]
enum Rows<'a> {
    F32,
    Int8(&'a CompactQuery),
    Int4(&'a CompactQuery, i32),
}

/// Whether the CPU has what [`scan_avx2`] and the AVX2 kernels were compiled for.
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// One chunk's score from the rows `rows` names, falling back to the next finer copy its segment has; with the
/// AVX2 integer kernels when `AVX2` (true only where [`has_avx2`] was found true).
#[inline(always)]
fn chunk_score<const AVX2: bool>(snap: &Snapshot, q: &[f32], rows: Rows, c: &LiveChunk) -> f32 {
    if let Rows::Int4(cq, sum) = rows
        && let Some((scale, row)) = snap.nibble_row(c)
    {
        #[cfg(target_arch = "x86_64")]
        if AVX2 {
            // SAFETY: AVX2 is true only once `has_avx2` found the CPU to have it.
            return cq.scale * scale * unsafe { dot_u4_i8_avx2(cq, sum, row) } as f32;
        }
        return cq.scale * scale * dot_u4_i8(cq, sum, row) as f32;
    }
    if let Rows::Int8(cq) | Rows::Int4(cq, _) = rows
        && let Some((scale, row)) = snap.compact_row(c)
    {
        #[cfg(target_arch = "x86_64")]
        if AVX2 {
            // SAFETY: as above.
            return cq.scale * scale * unsafe { dot_i8_avx2(&cq.values, row) } as f32;
        }
        return cq.scale * scale * dot_i8(&cq.values, row) as f32;
    }
    dot_lanes(q, snap.vector(c))
}

#[inline(always)]
fn scan_generic<const AVX2: bool>(
    snap: &Snapshot,
    q: &[f32],
    rows: Rows,
    ok: &[bool],
    out: &mut SemanticScan,
) {
    for (ci, c) in snap.chunks.iter().enumerate() {
        let m = c.message as usize;
        if !ok[m] {
            continue;
        }
        let s = chunk_score::<AVX2>(snap, q, rows, c);
        if s > out.best[m] {
            out.best[m] = s;
            out.chunk[m] = ci as u32;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn scan_avx2(snap: &Snapshot, q: &[f32], rows: Rows, ok: &[bool], out: &mut SemanticScan) {
    scan_generic::<true>(snap, q, rows, ok, out)
}

/// Bins of the histogram that finds the `keep`-th best 4-bit score without sorting a million.
const BINS: usize = 4096;

/// The lowest 4-bit score a message may have and still be scored in int8 (see [`Precision::Prefiltered`]).
fn refine_cut(best: &[f32], floor: f32, keep: usize) -> f32 {
    let bin =
        |s: f32| (((s + 1.0) * 0.5 * BINS as f32) as isize).clamp(0, BINS as isize - 1) as usize;
    let mut counts = vec![0u32; BINS];
    for s in best.iter().filter(|s| s.is_finite()) {
        counts[bin(*s)] += 1;
    }
    // The lower edge of the bin holding the keep-th best: at or under that score.
    let mut seen = 0usize;
    let mut kth = -1.0f32;
    for (b, n) in counts.iter().enumerate().rev() {
        seen += *n as usize;
        if seen >= keep {
            kth = b as f32 / BINS as f32 * 2.0 - 1.0;
            break;
        }
    }
    (kth - 2.0 * INT4_ERROR).max(floor - INT4_ERROR)
}

impl SemanticScan {
    /// Scores every eligible message's chunks against `q` (a unit vector of `DIM` floats) from the rows
    /// `precision` names, with AVX2/FMA when the CPU has them (segments without a copy are read in the next
    /// finer one).
    pub fn run(snap: &Snapshot, q: &[f32], ok: &[bool], precision: Precision) -> Self {
        let mut out = Self {
            best: vec![f32::NEG_INFINITY; snap.messages.len()],
            chunk: vec![NO_CHUNK; snap.messages.len()],
            coarse: None,
            avx2: has_avx2(),
        };
        if q.len() != DIM {
            return out;
        }
        let cq = (precision != Precision::Exact).then(|| CompactQuery::new(q));
        let rows = match (&cq, precision) {
            (Some(cq), Precision::Prefiltered { .. }) => {
                Rows::Int4(cq, cq.values.iter().map(|v| *v as i32).sum())
            }
            (Some(cq), _) => Rows::Int8(cq),
            (None, _) => Rows::F32,
        };
        Self::scan(snap, q, rows, ok, &mut out);
        if let (Some(cq), Precision::Prefiltered { floor, keep }) = (cq, precision) {
            let cut = refine_cut(&out.best, floor, keep);
            out.coarse = Some(cq);
            for m in 0..out.best.len() {
                if out.best[m] >= cut {
                    out.refine_one(snap, q, m);
                }
            }
        }
        out
    }

    fn scan(snap: &Snapshot, q: &[f32], rows: Rows, ok: &[bool], out: &mut Self) {
        #[cfg(target_arch = "x86_64")]
        if out.avx2 {
            // SAFETY: `avx2` is `has_avx2()`: the CPU supports what the function was compiled for.
            unsafe { scan_avx2(snap, q, rows, ok, out) };
            return;
        }
        scan_generic::<false>(snap, q, rows, ok, out);
    }

    /// The chunks of message `m` (consecutive: the snapshot's chunks are in message order), found from the one
    /// that gave its score; empty for a message without one.
    fn chunks_of(&self, snap: &Snapshot, m: usize) -> std::ops::Range<usize> {
        let Some(&ci) = self.chunk.get(m).filter(|c| **c != NO_CHUNK) else {
            return 0..0;
        };
        let same = |i: usize| snap.chunks.get(i).is_some_and(|c| c.message as usize == m);
        let (mut lo, mut hi) = (ci as usize, ci as usize + 1);
        while lo > 0 && same(lo - 1) {
            lo -= 1;
        }
        while same(hi) {
            hi += 1;
        }
        lo..hi
    }

    /// The best of message `m`'s chunks by `score`, and which chunk it is (`None` for a message without one).
    fn best_of_chunks(
        &self,
        snap: &Snapshot,
        m: usize,
        score: impl Fn(&LiveChunk) -> f32,
    ) -> Option<(f32, u32)> {
        self.chunks_of(snap, m)
            .map(|ci| (score(&snap.chunks[ci]), ci as u32))
            // As the scan: a score must beat -inf (a NaN never does); the first of equal ones stays.
            .filter(|(s, _)| *s > f32::NEG_INFINITY)
            .fold(None, |best, (s, ci)| match best {
                Some((b, _)) if b >= s => best,
                _ => Some((s, ci)),
            })
    }

    /// Message `m`'s best chunk from its int8 rows (a scan with only 4-bit scores).
    fn refine_one(&mut self, snap: &Snapshot, q: &[f32], m: usize) {
        let Some(cq) = &self.coarse else { return };
        let found = self.best_of_chunks(snap, m, |c| {
            if self.avx2 {
                chunk_score::<true>(snap, q, Rows::Int8(cq), c)
            } else {
                chunk_score::<false>(snap, q, Rows::Int8(cq), c)
            }
        });
        if let Some((s, ci)) = found {
            (self.best[m], self.chunk[m]) = (s, ci);
        }
    }

    /// Scores `messages` from their int8 rows where the scan left them a 4-bit score (nothing to do after an
    /// int8 or exact scan): what fusion reads beyond the semantic candidates (the keyword matches, the message
    /// after each candidate).
    pub fn refine(&mut self, snap: &Snapshot, q: &[f32], messages: impl Iterator<Item = u32>) {
        if self.coarse.is_none() {
            return;
        }
        for m in messages {
            self.refine_one(snap, q, m as usize);
        }
    }

    /// Replaces message `m`'s approximate score by the exact cosine of its best chunk's f32 row (after a
    /// prefiltered scan, the best of its chunks' f32 rows: its chunk may have been chosen by a 4-bit score).
    pub fn rescore(&mut self, snap: &Snapshot, q: &[f32], m: u32) {
        let m = m as usize;
        if self.coarse.is_some() {
            if let Some((s, ci)) = self.best_of_chunks(snap, m, |c| dot_lanes(q, snap.vector(c))) {
                (self.best[m], self.chunk[m]) = (s, ci);
            }
        } else if let Some(&ci) = self.chunk.get(m)
            && ci != NO_CHUNK
        {
            self.best[m] = dot_lanes(q, snap.vector(&snap.chunks[ci as usize]));
        }
    }
}
