//! Self-attention as one pass over the fused query/key/value rows: scores, softmax and the weighted sum of
//! values per sequence and head, in f32.
//!
//! Written out as candle ops, attention copied the three projections out of the fused product, multiplied
//! padded batches as matrices, added a mask over the padding, and called scalar libm `expf` per score; profiling
//! put ~40% of an embedding pass there once the dense layers ran on AMX tiles. Here padding keys are never
//! scored (each sequence attends over its own length), padding query rows are zero (they never reach a real
//! token: no real token attends to them, and pooling skips them), and the exponential is a branch-free
//! polynomial the compiler vectorises.

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape};

/// The attention of one batch: `seq_len` positions per sequence (padded), `lens` real tokens in each.
pub struct SelfAttention<'a> {
    pub lens: &'a [usize],
    pub seq_len: usize,
    pub heads: usize,
    /// Dot products in bf16 where the CPU has `vdpbf16ps` ([`bf16`]): asked for when the dense layers run on
    /// it, so that an f32 kernel keeps f32 attention (and its exact parity).
    pub bf16: bool,
}

impl CustomOp1 for SelfAttention<'_> {
    fn name(&self) -> &'static str {
        "self-attention"
    }

    /// `[b * seq_len, 3h]` (query, key, value; the scale already folded into the query) → `[b * seq_len, h]`.
    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let input = super::bert::contiguous_f32(storage, layout, "attention")?;
        let (rows, width) = layout.shape().dims2()?;
        let (b, l) = (self.lens.len(), self.seq_len);
        if rows != b * l
            || !width.is_multiple_of(3 * self.heads)
            || self.lens.iter().any(|&n| n > l)
        {
            candle_core::bail!("attention: {rows}x{width} does not match {b} sequences of {l}");
        }
        let h = width / 3;
        if !supports_head_size(h / self.heads) {
            candle_core::bail!("attention: head size {} is not 32 or 64", h / self.heads);
        }
        let mut out = vec![0f32; rows * h];
        attend(input, self.lens, l, h, self.heads, self.bf16, &mut out);
        Ok((CpuStorage::F32(out), Shape::from((rows, h))))
    }
}

/// One batch's fused query/key/value rows: `lens.len()` sequences of `l` positions, `h` columns per projection in
/// `heads` heads.
struct Batch<'a> {
    qkv: &'a [f32],
    lens: &'a [usize],
    l: usize,
    h: usize,
    heads: usize,
}

impl Batch<'_> {
    /// Zeroes the output rows past each sequence's length (no real token attends to them, and pooling skips
    /// them).
    fn zero_padding(&self, out: &mut [f32]) {
        let (l, h) = (self.l, self.h);
        for (s, &n) in self.lens.iter().enumerate() {
            out[(s * l + n) * h..(s + 1) * l * h].fill(0.0);
        }
    }

    /// Each sequence with tokens: its index, its length `n` and its `n` fused rows (`3h` columns each).
    fn sequences(&self) -> impl Iterator<Item = (usize, usize, &[f32])> {
        let (l, w) = (self.l, 3 * self.h);
        self.lens
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(move |(s, &n)| (s, n, &self.qkv[s * l * w..(s * l + n) * w]))
    }
}

// Off x86-64 no CPU runs it (NEON has no bf16 dot product in Rust's stable intrinsics); its emulated test runs
// everywhere.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
mod bf16;
mod transpose;

fn attend(
    qkv: &[f32],
    lens: &[usize],
    l: usize,
    h: usize,
    heads: usize,
    bf16: bool,
    out: &mut [f32],
) {
    let batch = Batch {
        qkv,
        lens,
        l,
        h,
        heads,
    };
    match h / heads {
        32 => dispatch::<32>(&batch, bf16, out),
        64 => dispatch::<64>(&batch, bf16, out),
        d => unreachable!("head size {d} (checked at load)"),
    }
}

/// Head sizes this kernel is compiled for (BERT-style models use 32 or 64).
pub fn supports_head_size(d: usize) -> bool {
    matches!(d, 32 | 64)
}

fn dispatch<const D: usize>(batch: &Batch, bf16: bool, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if bf16
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
        {
            // SAFETY: the features the function was compiled for were just detected.
            unsafe { attend_bf16_avx512::<D>(batch, out) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature the function was compiled for was just detected.
            unsafe { attend_avx512::<D>(batch, out) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the features the function was compiled for were just detected.
            unsafe { attend_avx2::<D>(batch, out) };
            return;
        }
    }
    // Off x86-64 there is no bf16 kernel: f32 whatever was asked.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bf16;
    attend_portable::<D, 8>(batch, out)
}

/// The kernel with 16 keys to a register (`ghola embed` on the reference texts: 5.9 s against 6.3 with the AVX2
/// build).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn attend_avx512<const D: usize>(batch: &Batch, out: &mut [f32]) {
    attend_portable::<D, 16>(batch, out)
}

/// The bf16 kernel on `vdpbf16ps` ([`bf16`]), compiled whole for it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn attend_bf16_avx512<const D: usize>(batch: &Batch, out: &mut [f32]) {
    // SAFETY: the caller checked the features.
    unsafe { bf16::attend::<crate::dense::x86::Avx512Bf16, D>(batch, out) }
}

/// The kernel with 8 keys to a register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2<const D: usize>(batch: &Batch, out: &mut [f32]) {
    attend_portable::<D, 8>(batch, out)
}

/// Queries scored together (their scores share each load of the keys).
const QB: usize = 4;

/// Rows past a sequence's length are zeroed; every other row is its attention output. `KB` keys are scored
/// together: one vector register of f32 (8 with AVX2, 16 with AVX-512).
#[inline(always)]
fn attend_portable<const D: usize, const KB: usize>(batch: &Batch, out: &mut [f32]) {
    let Batch {
        lens, l, h, heads, ..
    } = *batch;
    let w = 3 * h;
    let longest = lens.iter().copied().max().unwrap_or(0);
    let stride = longest.div_ceil(KB) * KB;
    // Keys of one head transposed (`[D, n]`, columns padded to KB with zeros): each query block's scores are
    // `D` broadcast multiply-adds per KB keys, accumulated in registers.
    let mut keys_t = vec![0f32; D * stride];
    let mut scores = vec![[0f32; KB]; QB * stride / KB];
    // Values of one head, contiguous (`[n, D]`).
    let mut values = vec![0f32; D * longest];
    batch.zero_padding(out);
    for (s, n, seq) in batch.sequences() {
        let row = |j: usize| &seq[j * w..(j + 1) * w];
        let blocks = n.div_ceil(KB);
        let n_pad = blocks * KB;
        for head in 0..heads {
            let (q_at, k_at, v_at) = (head * D, h + head * D, 2 * h + head * D);
            transpose::keys(&seq[k_at..], w, D, n, n_pad, &mut keys_t);
            for j in 0..n {
                values[j * D..(j + 1) * D].copy_from_slice(&row(j)[v_at..v_at + D]);
            }
            for i0 in (0..n).step_by(QB) {
                // The queries in place (a copy of them was a call and 1% of a pass).
                let query = |a: usize| -> &[f32; D] {
                    let i = (i0 + a).min(n - 1);
                    row(i)[q_at..q_at + D].try_into().expect("D columns")
                };
                let qs: [&[f32; D]; QB] = [query(0), query(1), query(2), query(3)];
                // Two key blocks at a time: eight independent sums in registers, enough to keep both FMA
                // units busy through their latency (four, one block at a time, kept them half idle).
                let mut jb = 0;
                while jb + 1 < blocks {
                    let mut acc = [[[0f32; KB]; 2]; QB];
                    for t in 0..D {
                        let k = &keys_t[t * n_pad + jb * KB..][..2 * KB];
                        let (k0, k1): (&[f32; KB], &[f32; KB]) = (
                            k[..KB].try_into().expect("KB keys"),
                            k[KB..].try_into().expect("KB keys"),
                        );
                        for a in 0..QB {
                            let q = qs[a][t];
                            for c in 0..KB {
                                acc[a][0][c] = q.mul_add(k0[c], acc[a][0][c]);
                                acc[a][1][c] = q.mul_add(k1[c], acc[a][1][c]);
                            }
                        }
                    }
                    for (a, acc) in acc.iter().enumerate() {
                        scores[a * blocks + jb] = acc[0];
                        scores[a * blocks + jb + 1] = acc[1];
                    }
                    jb += 2;
                }
                if jb < blocks {
                    let mut acc = [[0f32; KB]; QB];
                    for t in 0..D {
                        let k: &[f32; KB] = keys_t[t * n_pad + jb * KB..][..KB]
                            .try_into()
                            .expect("KB keys");
                        for a in 0..QB {
                            for c in 0..KB {
                                acc[a][c] = qs[a][t].mul_add(k[c], acc[a][c]);
                            }
                        }
                    }
                    for (a, acc) in acc.iter().enumerate() {
                        scores[a * blocks + jb] = *acc;
                    }
                }
                let mut sums = [0f32; QB];
                for (a, sum) in sums.iter_mut().enumerate().take(n - i0) {
                    let sc = scores[a * blocks..(a + 1) * blocks].as_flattened_mut();
                    *sum = softmax_unnormalised::<KB>(&mut sc[..n]);
                }
                // Two queries at a time share each row of values.
                for a0 in (0..QB.min(n - i0)).step_by(2) {
                    let pa = &scores[a0 * blocks..(a0 + 1) * blocks].as_flattened()[..n];
                    let pb = &scores[(a0 + 1) * blocks..(a0 + 2) * blocks].as_flattened()[..n];
                    let mut ca = [0f32; D];
                    let mut cb = [0f32; D];
                    for (j, v) in values.chunks_exact(D).take(n).enumerate() {
                        let v: &[f32; D] = v.try_into().expect("D columns");
                        let (p, q) = (pa[j], pb[j]);
                        for t in 0..D {
                            ca[t] = p.mul_add(v[t], ca[t]);
                            cb[t] = q.mul_add(v[t], cb[t]);
                        }
                    }
                    for (a, ctx) in [(a0, &ca), (a0 + 1, &cb)] {
                        if i0 + a >= n {
                            break;
                        }
                        let inv = 1.0 / sums[a];
                        let dst = &mut out[(s * l + i0 + a) * h + head * D..][..D];
                        for (o, c) in dst.iter_mut().zip(ctx) {
                            *o = c * inv;
                        }
                    }
                }
            }
        }
    }
}

/// Replaces scores by e^(score − max) and returns their sum (partial maxima and sums in KB lanes, so both
/// vectorise).
#[inline(always)]
fn softmax_unnormalised<const KB: usize>(sc: &mut [f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; KB];
    let mut chunks = sc.chunks_exact(KB);
    for c in &mut chunks {
        for (m, &v) in lanes.iter_mut().zip(c) {
            *m = if v > *m { v } else { *m };
        }
    }
    let mut max = lanes.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for &v in chunks.remainder() {
        max = max.max(v);
    }
    for v in sc.iter_mut() {
        *v = exp(*v - max);
    }
    let mut sums = [0f32; KB];
    let mut chunks = sc.chunks_exact(KB);
    for c in &mut chunks {
        for (s, &v) in sums.iter_mut().zip(c) {
            *s += v;
        }
    }
    sums.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

/// e^x for x ≤ 0 (scores minus their maximum), to ~2 ulp: 2^n · e^r with r in [-ln2/2, ln2/2] and a degree-6
/// polynomial for e^r (Cephes' coefficients); below -87 the result is 0 (e^-87 is under f32's normal range).
///
/// n is rounded by adding 1.5·2^23 (the sum's low mantissa bits are then n, ties to even) and 2^n built from
/// those bits with integer adds and a shift: `n as i32` saturates and maps NaN to 0 by Rust's rules, which the
/// compiler kept scalar (a compare and two conditional moves per lane: a third of the attention's time).
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    /// 1.5·2^23: adding it leaves round(v) in the low mantissa bits for |v| < 2^22.
    const ROUNDER: f32 = 12_582_912.0;
    // A select rather than `f32::max`, whose NaN rule kept the loop scalar (scores are never NaN).
    let xc = if x > -87.0 { x } else { -87.0 };
    let shifted = xc.mul_add(std::f32::consts::LOG2_E, ROUNDER);
    let n = shifted - ROUNDER;
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, xc));
    let mut p = r.mul_add(1.987_569_1e-4, 1.398_199_9e-3);
    p = r.mul_add(p, 8.333_452e-3);
    p = r.mul_add(p, 4.166_579_6e-2);
    p = r.mul_add(p, 1.666_666_5e-1);
    p = r.mul_add(p, 0.5);
    let er = (r * r).mul_add(p, r + 1.0);
    // `shifted`'s bits are ROUNDER's plus n (n in [-126, 0]): minus ROUNDER's, plus the bias, into the exponent.
    let biased = shifted
        .to_bits()
        .wrapping_sub(ROUNDER.to_bits())
        .wrapping_add(127);
    let scaled = er * f32::from_bits(biased << 23);
    if x < -87.0 { 0.0 } else { scaled }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::tests::lcg;

    #[test]
    fn exp_matches_libm_below_zero() {
        let mut worst = 0f32;
        for i in 0..=880_000 {
            let x = -(i as f32) / 10_000.0;
            let want = x.exp();
            if x >= -87.0 {
                worst = worst.max(((exp(x) - want) / want).abs());
            }
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
        assert_eq!(exp(-100.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
    }

    /// The bf16 loop, through an emulation of `vdpbf16ps`, against the f32 loop: the same to within bf16's
    /// rounding, on sequences that fill two key blocks, one and a half, part of one, one token, none.
    #[test]
    fn the_bf16_loop_attends_like_f32_through_an_emulation() {
        fn case<const D: usize>() {
            let heads = 3;
            let h = heads * D;
            let lens = [5usize, 1, 24, 0, 33, 32];
            let l = 33;
            let mut seed = 5u64;
            let mut next = || lcg(&mut seed) * 2.0;
            // Queries and keys of BERT's scale (the query already divided by √D), values of ±1.
            let qkv: Vec<f32> = (0..lens.len() * l * 3 * h)
                .map(|i| {
                    if i % (3 * h) < 2 * h {
                        next() * 0.6
                    } else {
                        next()
                    }
                })
                .collect();
            let batch = Batch {
                qkv: &qkv,
                lens: &lens,
                l,
                h,
                heads,
            };
            let mut want = vec![f32::NAN; lens.len() * l * h];
            attend_portable::<D, 8>(&batch, &mut want);
            let mut got = vec![f32::NAN; want.len()];
            // SAFETY: the emulation needs no instructions.
            unsafe { bf16::attend::<crate::dense::tests::Emulated, D>(&batch, &mut got) };
            let worst = got.iter().zip(&want).fold(0f32, |m, (g, w)| {
                if g.is_nan() {
                    f32::INFINITY
                } else {
                    m.max((g - w).abs())
                }
            });
            assert!(worst < 0.01, "D = {D}: largest difference {worst}");
            for (s, &n) in lens.iter().enumerate() {
                assert!(
                    got[(s * l + n) * h..(s + 1) * l * h]
                        .iter()
                        .all(|&v| v == 0.0),
                    "D = {D}: padding rows of sequence {s} not zero"
                );
            }
        }
        case::<32>();
        case::<64>();
    }

    /// The textbook computation over a padded batch with a mask, in f64.
    #[test]
    fn matches_masked_softmax_attention() {
        let (heads, d) = (3, 32);
        let h = heads * d;
        let lens = [5usize, 1, 7, 0];
        let l = 7;
        let mut seed = 11u64;
        let mut next = || lcg(&mut seed) * 4.0;
        let qkv: Vec<f32> = (0..lens.len() * l * 3 * h).map(|_| next()).collect();
        let mut out = vec![f32::NAN; lens.len() * l * h];
        attend(&qkv, &lens, l, h, heads, false, &mut out);
        // The 8-key build (AVX2 and portable) agrees with whichever build `attend` picked here.
        let batch = Batch {
            qkv: &qkv,
            lens: &lens,
            l,
            h,
            heads,
        };
        let mut narrow = vec![f32::NAN; out.len()];
        attend_portable::<32, 8>(&batch, &mut narrow);
        for (a, b) in out.iter().zip(&narrow) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
        for (s, &n) in lens.iter().enumerate() {
            for i in 0..l {
                for head in 0..heads {
                    let row = |j: usize| &qkv[(s * l + j) * 3 * h..][..3 * h];
                    let dst = &out[(s * l + i) * h + head * d..][..d];
                    if i >= n {
                        assert!(
                            dst.iter().all(|&v| v == 0.0),
                            "padding row {s}/{i} not zero"
                        );
                        continue;
                    }
                    let q = &row(i)[head * d..][..d];
                    let scores: Vec<f64> = (0..n)
                        .map(|j| {
                            let k = &row(j)[h + head * d..][..d];
                            q.iter().zip(k).map(|(a, b)| *a as f64 * *b as f64).sum()
                        })
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    for (t, got) in dst.iter().enumerate() {
                        let want: f64 = (0..n)
                            .map(|j| e[j] / sum * row(j)[2 * h + head * d + t] as f64)
                            .sum();
                        assert!((*got as f64 - want).abs() < 1e-5, "{s}/{i}/{head}/{t}");
                    }
                }
            }
        }
    }
}
