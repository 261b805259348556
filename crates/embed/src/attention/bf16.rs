//! Self-attention with bf16 dot products, for the CPUs whose dense layers run on `vdpbf16ps` (AVX-512 BF16:
//! AMD Zen 4 and 5, Intel Cooper Lake): queries, keys, values and the softmax's weights rounded to bf16, two
//! products summed into each f32 lane per instruction; scores, the softmax and every sum stay f32.
//!
//! Once the dense layers run two products per lane, the f32 attention is the next largest part of a pass (a
//! fifth of it on AVX2, more on a CPU whose dense layers are faster still), for a twelfth of the multiply-adds:
//! this halves its multiply instructions. Its rounding costs nothing measurable: with queries, keys, values
//! and weights rounded to bf16 (an emulation on the reference texts), the worst cosine to sentence-transformers
//! is 0.999996 with f32 dense layers and 0.999953 with 16-bit ones (0.999958 with f32 attention).
//!
//! The loop is the f32 kernel's ([`super::attend_portable`]) over [`Bf16Lanes`], so that an emulation of the
//! instruction tests it on any CPU: keys of a head laid out as pairs of dimensions (`[D/2][n]`), values as
//! pairs of positions (`[n/2][D]`), four queries at a time against two blocks of 16 keys, then their weighted
//! sums four queries at a time over all `D` dimensions.

use super::{Batch, QB, softmax_unnormalised, transpose};
use crate::dense::{Bf16Lanes, bf16};

/// Keys per register (16 f32 lanes).
const KB: usize = 16;

/// Two values as one bf16 pair, the first in the low half (the order `vdpbf16ps` multiplies them in).
#[inline(always)]
fn pair(lo: f32, hi: f32) -> u32 {
    bf16(lo) as u32 | (bf16(hi) as u32) << 16
}

/// Rows past a sequence's length are zeroed; every other row is its attention output (as
/// [`super::attend_portable`]).
///
/// # Safety
/// The CPU has `L`'s instructions; `D` is 32 or 64.
#[inline(always)]
pub(super) unsafe fn attend<L: Bf16Lanes, const D: usize>(batch: &Batch, out: &mut [f32]) {
    let Batch {
        lens, l, h, heads, ..
    } = *batch;
    let w = 3 * h;
    let half = D / 2;
    let longest = lens.iter().copied().max().unwrap_or(0);
    let stride = longest.div_ceil(KB) * KB;
    // One head's keys as pairs of dimensions, `[D/2][n_pad]`, and values as pairs of positions, `[n_pad/2][D]`;
    // padding positions are zero.
    let mut keys = vec![0u32; half * stride];
    let mut values = vec![0u32; stride / 2 * D];
    // A sequence's queries and keys (every head) as pairs of dimensions, `[n][h/2]` each, rounded with the
    // kernel's conversion once per sequence.
    let mut queries = vec![0u32; longest * h / 2];
    let mut all_keys = vec![0u32; longest * h / 2];
    // Each query's scores, then their exponentials as bf16 pairs of positions.
    let mut scores = vec![0f32; QB * stride];
    let mut weights = vec![0u32; QB * stride / 2];
    batch.zero_padding(out);
    for (s, n, seq) in batch.sequences() {
        let row = |j: usize| &seq[j * w..(j + 1) * w];
        let blocks = n.div_ceil(KB);
        let n_pad = blocks * KB;
        for j in 0..n {
            let pairs = j * h / 2..(j + 1) * h / 2;
            // SAFETY: passed on from the caller; h/2 pairs for h values.
            unsafe {
                L::to_pairs(&row(j)[..h], &mut queries[pairs.clone()]);
                L::to_pairs(&row(j)[h..2 * h], &mut all_keys[pairs]);
            }
        }
        for head in 0..heads {
            let (q_at, v_at) = (head * D, 2 * h + head * D);
            transpose::keys(&all_keys[q_at / 2..], h / 2, half, n, n_pad, &mut keys);
            for i in 0..n_pad / 2 {
                let dst = &mut values[i * D..(i + 1) * D];
                match (2 * i < n, 2 * i + 1 < n) {
                    (true, true) => {
                        let (a, b) = (&row(2 * i)[v_at..][..D], &row(2 * i + 1)[v_at..][..D]);
                        for ((d, a), b) in dst.iter_mut().zip(a).zip(b) {
                            *d = pair(*a, *b);
                        }
                    }
                    (true, false) => {
                        for (d, a) in dst.iter_mut().zip(&row(2 * i)[v_at..][..D]) {
                            *d = pair(*a, 0.0);
                        }
                    }
                    _ => dst.fill(0),
                }
            }
            for i0 in (0..n).step_by(QB) {
                let live = QB.min(n - i0);
                // Each query's pairs in place.
                let query = |a: usize| &queries[(i0 + a).min(n - 1) * h / 2 + q_at / 2..][..half];
                let qs: [&[u32]; QB] = [query(0), query(1), query(2), query(3)];
                let mut jb = 0;
                while jb + 1 < blocks {
                    // SAFETY: passed on from the caller; blocks jb and jb + 1 are within n_pad.
                    unsafe { score::<L, 2>(&keys, n_pad, jb, half, &qs, &mut scores) };
                    jb += 2;
                }
                if jb < blocks {
                    // SAFETY: as above, one block.
                    unsafe { score::<L, 1>(&keys, n_pad, jb, half, &qs, &mut scores) };
                }
                let mut sums = [0f32; QB];
                for (a, sum) in sums.iter_mut().enumerate().take(live) {
                    let sc = &mut scores[a * n_pad..(a + 1) * n_pad];
                    *sum = softmax_unnormalised::<KB>(&mut sc[..n]);
                    sc[n..].fill(0.0);
                    // SAFETY: passed on from the caller; n_pad / 2 pairs for n_pad values.
                    unsafe { L::to_pairs(sc, &mut weights[a * n_pad / 2..(a + 1) * n_pad / 2]) };
                }
                // SAFETY: passed on from the caller.
                unsafe {
                    weigh::<L, D>(&values, &weights, n, n_pad, live, &sums, &mut |a, ctx| {
                        out[(s * l + i0 + a) * h + head * D..][..D].copy_from_slice(ctx)
                    })
                };
            }
        }
    }
}

/// The scores of [`QB`] queries (as bf16 pairs of dimensions) against `B` blocks of [`KB`] keys from block
/// `jb`, into each query's row of `scores` (stride `n_pad`).
///
/// # Safety
/// The CPU has `L`'s instructions; blocks `jb..jb + B` lie within `n_pad`.
#[inline(always)]
unsafe fn score<L: Bf16Lanes, const B: usize>(
    keys: &[u32],
    n_pad: usize,
    jb: usize,
    half: usize,
    qs: &[&[u32]; QB],
    scores: &mut [f32],
) {
    let zero = [0f32; KB];
    // SAFETY: every load and store below reads or writes KB elements of a slice that holds them.
    unsafe {
        let mut acc = [[L::load_f(zero.as_ptr()); B]; QB];
        for u in 0..half {
            let at = u * n_pad + jb * KB;
            let mut k = [L::load_pairs(keys[at..at + KB].as_ptr()); B];
            for (b, k) in k.iter_mut().enumerate().skip(1) {
                *k = L::load_pairs(keys[at + b * KB..at + (b + 1) * KB].as_ptr());
            }
            for (acc, q) in acc.iter_mut().zip(qs) {
                let q = L::splat_pair(q[u]);
                for (acc, k) in acc.iter_mut().zip(&k) {
                    *acc = L::dot(*acc, q, *k);
                }
            }
        }
        for (a, acc) in acc.iter().enumerate() {
            for (b, acc) in acc.iter().enumerate() {
                let at = a * n_pad + (jb + b) * KB;
                L::store_f(scores[at..at + KB].as_mut_ptr(), *acc);
            }
        }
    }
}

/// The weighted sums of the values for the first `live` of [`QB`] queries, each divided by its softmax sum and
/// handed to `emit` with its index.
///
/// # Safety
/// The CPU has `L`'s instructions; `D` is 32 or 64.
#[inline(always)]
unsafe fn weigh<L: Bf16Lanes, const D: usize>(
    values: &[u32],
    weights: &[u32],
    n: usize,
    n_pad: usize,
    live: usize,
    sums: &[f32; QB],
    emit: &mut impl FnMut(usize, &[f32]),
) {
    let regs = D / 16;
    let zero = [0f32; 16];
    // SAFETY: every load and store below reads or writes 16 elements of a slice that holds them.
    unsafe {
        let mut acc = [[L::load_f(zero.as_ptr()); 4]; QB];
        for i in 0..n.div_ceil(2) {
            let mut p = [L::splat_pair(weights[i]); QB];
            for (a, p) in p.iter_mut().enumerate().skip(1) {
                *p = L::splat_pair(weights[a * n_pad / 2 + i]);
            }
            for r in 0..regs {
                let v = L::load_pairs(values[i * D + r * 16..][..16].as_ptr());
                for (acc, p) in acc.iter_mut().zip(&p) {
                    acc[r] = L::dot(acc[r], *p, v);
                }
            }
        }
        let mut ctx = [0f32; 64];
        for (a, acc) in acc.iter().enumerate().take(live) {
            for (r, acc) in acc.iter().enumerate().take(regs) {
                L::store_f(ctx[r * 16..][..16].as_mut_ptr(), *acc);
            }
            let inv = 1.0 / sums[a];
            for c in &mut ctx[..D] {
                *c *= inv;
            }
            emit(a, &ctx[..D]);
        }
    }
}
