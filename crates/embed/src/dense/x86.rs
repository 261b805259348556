//! The x86-64 kernels; each `unsafe fn` needs its instruction set (checked by the caller).

use super::{
    Bf16Lanes, F32Lanes, F32Tile, Operands, Packed, PairTile, bf16_product, f32_product, tile_bf16,
    tile_f32, to_bf16_pairs,
};
use std::arch::x86_64::*;

/// `out = x · W + bias` on AVX2+FMA: 6 rows × 16 columns (12 accumulators) per step.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `w` packed with `Layout::F32 { nr: 16 }`.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn f32_avx2(w: &Packed, o: Operands) {
    // SAFETY: the features were checked by the caller.
    unsafe { f32_product::<Avx2F32, 16, 6>(w, o) }
}

/// `out = x · W + bias` on AVX-512F: 12 rows × 32 columns (24 accumulators) per step.
///
/// # Safety
/// The CPU must have AVX-512F; `w` packed with `Layout::F32 { nr: 32 }`.
#[target_feature(enable = "avx512f")]
pub unsafe fn f32_avx512(w: &Packed, o: Operands) {
    // SAFETY: the feature was checked by the caller.
    unsafe { f32_product::<Avx512F32, 32, 12>(w, o) }
}

/// The AVX2 f32 step for `R` rows, compiled for its instructions, one function per row count (see
/// [`F32Lanes::tile`]).
///
/// # Safety
/// As [`F32Lanes::tile`].
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
unsafe fn f32_step_avx2<const R: usize>(t: &F32Tile) {
    // SAFETY: passed on from the caller.
    unsafe { tile_f32::<Avx2F32, R>(t) }
}

/// The AVX-512F f32 step for `R` rows (see [`F32Lanes::tile`]).
///
/// # Safety
/// As [`F32Lanes::tile`].
#[inline(never)]
#[target_feature(enable = "avx512f")]
unsafe fn f32_step_avx512<const R: usize>(t: &F32Tile) {
    // SAFETY: passed on from the caller.
    unsafe { tile_f32::<Avx512F32, R>(t) }
}

/// The AVX-512 BF16 step for `R` rows (see [`F32Lanes::tile`]).
///
/// # Safety
/// As [`Bf16Lanes::tile`].
#[inline(never)]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn bf16_step_avx512<const R: usize>(t: &PairTile) {
    // SAFETY: passed on from the caller.
    unsafe { tile_bf16::<Avx512Bf16, R>(t) }
}

/// AVX2 + FMA on 8 f32 lanes.
pub struct Avx2F32;

impl F32Lanes for Avx2F32 {
    type V = __m256;
    const LANES: usize = 8;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load(p: *const f32) -> __m256 {
        // SAFETY: the caller passes 8 readable floats.
        unsafe { _mm256_loadu_ps(p) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn store(p: *mut f32, v: __m256) {
        // SAFETY: the caller passes 8 writable floats.
        unsafe { _mm256_storeu_ps(p, v) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn splat(x: f32) -> __m256 {
        _mm256_set1_ps(x)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn mul_add(a: __m256, b: __m256, acc: __m256) -> __m256 {
        _mm256_fmadd_ps(a, b, acc)
    }

    unsafe fn tile(rows: usize, t: &F32Tile) {
        // SAFETY: passed on from the caller.
        unsafe { by_rows!(rows, f32_step_avx2, t) }
    }
}

/// AVX-512F on 16 f32 lanes.
pub struct Avx512F32;

impl F32Lanes for Avx512F32 {
    type V = __m512;
    const LANES: usize = 16;

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: the caller passes 16 readable floats.
        unsafe { _mm512_loadu_ps(p) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: the caller passes 16 writable floats.
        unsafe { _mm512_storeu_ps(p, v) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn splat(x: f32) -> __m512 {
        _mm512_set1_ps(x)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn mul_add(a: __m512, b: __m512, acc: __m512) -> __m512 {
        _mm512_fmadd_ps(a, b, acc)
    }

    unsafe fn tile(rows: usize, t: &F32Tile) {
        // SAFETY: passed on from the caller.
        unsafe { by_rows!(rows, f32_step_avx512, t) }
    }
}

/// `out = x · W + bias` on AVX2 with 16-bit integers (`vpmaddwd`: two products summed into 32 bits per lane),
/// 6 rows × 16 columns per step: twice the multiply-adds per instruction of f32 on CPUs with two `vpmaddwd`
/// ports (AMD Zen), at ~12 bits of each activation (a scale per row and slice of 256 inputs) and 13 of each
/// weight (a scale per column); the sums of each slice go to f32 before they could overflow.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `w` packed with `Layout::I16Pairs`.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn i16_avx2(w: &Packed, mut o: Operands) {
    let (k, n, m) = (w.k, w.n, o.m);
    let kp = k / 2;
    let slices = k.div_ceil(super::KC);
    super::I16_SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let (a, row_scales) = &mut *s;
        super::quantize_rows(o.x, k, a, row_scales, |x, inv, dst| {
            round_to_pairs_avx2(x, inv, dst)
        });
        let (ap, out) = (a.as_ptr(), o.out_ptr());
        let pairs = w.bf16_pairs();
        super::for_each_step(kp, super::KC / 2, m, n / 16, 6, |s| {
            // SAFETY: in bounds as in `blocked`: `a` is m × k/2 pairs, `row_scales` m × slices; the caller
            // checked the features.
            unsafe {
                let t = Tile {
                    pairs: PairTile::at(&s, ap, kp, pairs, 16, out, n, o.bias),
                    col_scales: w.column_scales()[s.j * 16..].as_ptr(),
                    row_scales: row_scales[s.i * slices + s.slice..].as_ptr(),
                    rs_stride: slices,
                };
                // Six arms, not `by_rows!`: a step of 7 to 12 rows would not fit its sums in AVX2's 16
                // registers (and is never asked for here).
                match s.rows {
                    6 => tile_i16::<6>(&t),
                    5 => tile_i16::<5>(&t),
                    4 => tile_i16::<4>(&t),
                    3 => tile_i16::<3>(&t),
                    2 => tile_i16::<2>(&t),
                    _ => tile_i16::<1>(&t),
                }
            }
        });
    });
}

/// [`super::round_to_pairs`] 16 inputs at a time: scaled, held to ±`A_LEVELS` (a NaN becomes -`A_LEVELS`, a
/// finite number as the plain form makes it), converted with ties to even and packed to 16 bits in order.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(super) fn round_to_pairs_avx2(x: &[f32], inv: f32, dst: &mut [u32]) {
    let scale = _mm256_set1_ps(inv);
    let (low, high) = (
        _mm256_set1_ps(-super::A_LEVELS),
        _mm256_set1_ps(super::A_LEVELS),
    );
    let mut src = x.chunks_exact(16);
    let mut out = dst.chunks_exact_mut(8);
    for (s, d) in (&mut src).zip(&mut out) {
        // SAFETY: `s` holds 16 floats and `d` 8 pairs (32 bytes).
        unsafe {
            let level = |v: __m256| {
                _mm256_cvtps_epi32(_mm256_min_ps(
                    _mm256_max_ps(_mm256_mul_ps(v, scale), low),
                    high,
                ))
            };
            let lo = level(_mm256_loadu_ps(s.as_ptr()));
            let hi = level(_mm256_loadu_ps(s.as_ptr().add(8)));
            // `packs` interleaves the halves per 128-bit lane: lo0-3 hi0-3 | lo4-7 hi4-7; put them in order.
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(lo, hi));
            _mm256_storeu_si256(d.as_mut_ptr().cast(), packed);
        }
    }
    super::round_to_pairs(src.remainder(), inv, out.into_remainder());
}

/// One step of the 16-bit kernel: `R` rows × 16 columns over one slice, with the scales that turn its integer
/// sums into floats.
struct Tile {
    pairs: PairTile,
    col_scales: *const f32,
    row_scales: *const f32,
    rs_stride: usize,
}

#[target_feature(enable = "avx2,fma")]
unsafe fn tile_i16<const R: usize>(t: &Tile) {
    // SAFETY: `i16_avx2` passes R rows of qc pairs at `a`, a panel slice of qc × 16 pairs at `b`, R rows of
    // 16 outputs at `c`, 16 column scales and R row scales (stride rs_stride).
    unsafe {
        let p = &t.pairs;
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for q in 0..p.qc {
            let b0 = _mm256_loadu_si256(p.b.add(q * 16).cast());
            let b1 = _mm256_loadu_si256(p.b.add(q * 16 + 8).cast());
            for (r, row) in acc.iter_mut().enumerate() {
                let av = _mm256_set1_epi32(*p.a.add(r * p.lda + q) as i32);
                row[0] = _mm256_add_epi32(row[0], _mm256_madd_epi16(av, b0));
                row[1] = _mm256_add_epi32(row[1], _mm256_madd_epi16(av, b1));
            }
        }
        let cs0 = _mm256_loadu_ps(t.col_scales);
        let cs1 = _mm256_loadu_ps(t.col_scales.add(8));
        for (r, row) in acc.iter().enumerate() {
            let src = if p.first { p.bias } else { p.c.add(r * p.ldc) };
            let rs = _mm256_set1_ps(*t.row_scales.add(r * t.rs_stride));
            let (s0, s1) = (_mm256_mul_ps(cs0, rs), _mm256_mul_ps(cs1, rs));
            let o0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row[0]), s0, _mm256_loadu_ps(src));
            let o1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row[1]), s1, _mm256_loadu_ps(src.add(8)));
            _mm256_storeu_ps(p.c.add(r * p.ldc), o0);
            _mm256_storeu_ps(p.c.add(r * p.ldc + 8), o1);
        }
    }
}

/// `vdpbf16ps` on 16 lanes.
pub struct Avx512Bf16;

impl Bf16Lanes for Avx512Bf16 {
    type F = __m512;
    type P = __m512i;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn load_f(p: *const f32) -> __m512 {
        // SAFETY: the caller passes 16 readable floats.
        unsafe { _mm512_loadu_ps(p) }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn store_f(p: *mut f32, v: __m512) {
        // SAFETY: the caller passes 16 writable floats.
        unsafe { _mm512_storeu_ps(p, v) }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn load_pairs(p: *const u32) -> __m512i {
        // SAFETY: the caller passes 16 readable pairs.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn splat_pair(pair: u32) -> __m512i {
        _mm512_set1_epi32(pair as i32)
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn dot(acc: __m512, a: __m512i, b: __m512i) -> __m512 {
        // SAFETY: both are 512 bits of plain data.
        let (a, b) = unsafe {
            (
                std::mem::transmute::<__m512i, __m512bh>(a),
                std::mem::transmute::<__m512i, __m512bh>(b),
            )
        };
        _mm512_dpbf16_ps(acc, a, b)
    }

    unsafe fn tile(rows: usize, t: &PairTile) {
        // SAFETY: passed on from the caller.
        unsafe { by_rows!(rows, bf16_step_avx512, t) }
    }

    /// 32 inputs per `vcvtne2ps2bf16` (ties to even, as [`super::bf16`]).
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn to_pairs(x: &[f32], out: &mut [u32]) {
        let mut src = x.chunks_exact(32);
        let mut dst = out.chunks_exact_mut(16);
        for (s, d) in (&mut src).zip(&mut dst) {
            // SAFETY: `s` holds 32 floats, `d` 16 pairs (64 bytes).
            unsafe {
                // The second operand fills the low half: inputs 0–15, then 16–31, in order.
                let v = _mm512_cvtne2ps_pbh(
                    _mm512_loadu_ps(s.as_ptr().add(16)),
                    _mm512_loadu_ps(s.as_ptr()),
                );
                _mm512_storeu_si512(
                    d.as_mut_ptr().cast(),
                    std::mem::transmute::<__m512bh, __m512i>(v),
                );
            }
        }
        to_bf16_pairs(src.remainder(), dst.into_remainder());
    }
}

/// `out = x · W + bias` on AVX-512 BF16: activations rounded to bf16, 12 rows × 32 columns per step.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512 BF16; `w` packed with `Layout::Bf16Pairs`.
#[target_feature(enable = "avx512f,avx512bf16")]
pub unsafe fn bf16_avx512(w: &Packed, o: Operands) {
    // SAFETY: the features were checked by the caller.
    unsafe { bf16_product::<Avx512Bf16>(w, o) }
}
