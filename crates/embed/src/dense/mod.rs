//! Dense-layer products (`out = x · W + bias`) with the weight packed once at load, one kernel per instruction
//! set: AVX2+FMA and AVX-512F in f32, AVX-512 BF16 (`vdpbf16ps`: bf16 pairs, f32 accumulation).
//!
//! candle's f32 product (the `gemm` crate) packs both operands on every call and, on a stable compiler, has
//! only its AVX2 kernel. The encoder's weights never change, so here each is packed once, at load, into panels
//! of output columns laid out in the order the kernel reads them; a call streams the activations as they are
//! (row-major, broadcast one value at a time) and keeps a block of outputs in registers for a whole slice of
//! the inputs. Loop order (outer to inner): a block of `MC` rows (its activations in L2), each panel, a slice of
//! `KC` inputs (its part of the panel fits the L1 cache), each group of `MR` rows. The block's outputs in one
//! panel (`MC` × the panel's width) stay in L1 from one slice to the next; with the slices outermost they were
//! read back from L3 for every slice (dense products 4–19% slower, a throwaway timing of the three layer
//! shapes at 768 rows).
//!
//! Each kernel is compiled for its instruction set and picked at run time ([`super::kernel::Kernel`]). The f32
//! loop is written once over [`F32Lanes`] (AVX2 and AVX-512F share it) and the bf16 one over [`Bf16Lanes`], so
//! that their packing and indexing are exercised by emulations of the instructions on any CPU (`tests` below),
//! while the intrinsics run only where the CPU has them (and are checked against f32 at load:
//! [`super::kernel`]).

// Off x86-64 no kernel here runs (candle's product serves the layers); the packing and the emulated bf16 loop are
// still compiled and tested there.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

use std::mem::MaybeUninit;

/// Inputs per slice: a 16-column f32 panel slice is 16 KiB, a 32-column one 32 KiB. For 16-bit integers it is
/// also the span of one activation scale, and what keeps the 32-bit sums from overflowing:
/// `A_LEVELS · W_LEVELS · KC` = 2,047 · 4,095 · 256 < 2^31.
const KC: usize = 256;
/// 16-bit integer kernel: activations are rounded to ±2,047 steps of their slice's largest magnitude (per row
/// and slice of `KC` inputs), weights to ±4,095 of their column's.
const A_LEVELS: f32 = 2047.0;
const W_LEVELS: f32 = 4095.0;
/// Rows per block: 96 rows × 384 to 1,536 inputs, 144 to 576 KiB of f32 activations (L2); 96 rows × 64 bytes
/// of outputs per panel (L1).
const MC: usize = 96;

/// A weight `[k, n]` (inputs × outputs) packed for one kernel.
pub struct Packed {
    k: usize,
    n: usize,
    /// f32 panels (`Layout::F32`): panel `j` holds columns `NR·j..NR·j+NR`, input `p` at `(j·k + p)·NR`.
    f32s: Vec<f32>,
    /// bf16 pair panels (`Layout::Bf16Pairs`): panel `j` (32 columns), input pair `q` (inputs `2q`, `2q+1`),
    /// column `c` at `(j·k/2 + q)·32 + c`, the lower bf16 the even input. For `Layout::I16Pairs`, the same
    /// with 16-column panels and 16-bit integers.
    pairs: Vec<u32>,
    /// `Layout::I16Pairs`: each column's scale (its integers times this are its weights).
    scales: Vec<f32>,
}

/// How a weight is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// f32 panels `nr` columns wide.
    F32 { nr: usize },
    /// bf16 pairs in panels 32 columns wide.
    Bf16Pairs,
    /// 16-bit integer pairs in panels 16 columns wide, a scale per column (weights to 13 bits: ±4095).
    I16Pairs,
}

impl Packed {
    /// Packs `w_t` (`[k, n]` row-major). `None` when `n` is not a multiple of the panel width or `k` is odd for
    /// bf16 pairs (candle's product then serves the layer).
    pub fn pack(w_t: &[f32], k: usize, n: usize, layout: Layout) -> Option<Self> {
        if k == 0 || n == 0 || w_t.len() != k * n {
            return None;
        }
        match layout {
            Layout::F32 { nr } => {
                if !n.is_multiple_of(nr) {
                    return None;
                }
                let mut f32s = vec![0f32; k * n];
                for j in 0..n / nr {
                    for p in 0..k {
                        let dst = &mut f32s[(j * k + p) * nr..][..nr];
                        dst.copy_from_slice(&w_t[p * n + j * nr..][..nr]);
                    }
                }
                Some(Self {
                    k,
                    n,
                    f32s,
                    pairs: Vec::new(),
                    scales: Vec::new(),
                })
            }
            Layout::Bf16Pairs => {
                if !n.is_multiple_of(32) || !k.is_multiple_of(2) {
                    return None;
                }
                let mut pairs = vec![0u32; k / 2 * n];
                for j in 0..n / 32 {
                    for q in 0..k / 2 {
                        for c in 0..32 {
                            let lo = bf16(w_t[2 * q * n + j * 32 + c]) as u32;
                            let hi = bf16(w_t[(2 * q + 1) * n + j * 32 + c]) as u32;
                            pairs[(j * k / 2 + q) * 32 + c] = lo | hi << 16;
                        }
                    }
                }
                Some(Self {
                    k,
                    n,
                    f32s: Vec::new(),
                    pairs,
                    scales: Vec::new(),
                })
            }
            Layout::I16Pairs => {
                if !n.is_multiple_of(16) || !k.is_multiple_of(2) {
                    return None;
                }
                // Row by row (the weight is row-major): each column's largest magnitude, then the integers.
                let mut top = vec![0f32; n];
                for row in w_t.chunks_exact(n) {
                    for (t, v) in top.iter_mut().zip(row) {
                        *t = t.max(v.abs());
                    }
                }
                let scales: Vec<f32> = top.iter().map(|t| t / W_LEVELS).collect();
                let inv: Vec<f32> = scales
                    .iter()
                    .map(|&s| if s > 0.0 { 1.0 / s } else { 0.0 })
                    .collect();
                let q = |v: f32, inv: f32| {
                    (v * inv).round().clamp(-W_LEVELS, W_LEVELS) as i16 as u16 as u32
                };
                let mut pairs = vec![0u32; k / 2 * n];
                for qq in 0..k / 2 {
                    let (even, odd) = (&w_t[2 * qq * n..][..n], &w_t[(2 * qq + 1) * n..][..n]);
                    for c in 0..n {
                        pairs[((c / 16) * k / 2 + qq) * 16 + c % 16] =
                            q(even[c], inv[c]) | q(odd[c], inv[c]) << 16;
                    }
                }
                Some(Self {
                    k,
                    n,
                    f32s: Vec::new(),
                    pairs,
                    scales,
                })
            }
        }
    }

    /// Inputs of the layer.
    pub fn inputs(&self) -> usize {
        self.k
    }

    /// Outputs of the layer.
    pub fn outputs(&self) -> usize {
        self.n
    }

    /// The f32 panels (empty for bf16 pairs).
    pub fn f32_panels(&self) -> &[f32] {
        &self.f32s
    }

    /// The bf16 or 16-bit integer pair panels (empty for f32).
    pub fn bf16_pairs(&self) -> &[u32] {
        &self.pairs
    }

    /// The columns' scales of 16-bit integer pairs (empty otherwise).
    pub fn column_scales(&self) -> &[f32] {
        &self.scales
    }
}

/// Rounds to bf16, to nearest with ties to even (what hardware conversions do).
#[inline(always)]
pub fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// The slices of one product, checked: `x` is `[m, k]`, `bias` `[n]`, `out` `[m, n]`.
///
/// `out` may be uninitialised: every kernel writes each output before it reads it (the first slice of inputs
/// starts from the bias), so a layer's output is never zeroed first (that memset was 2% of a pass).
pub struct Operands<'a> {
    pub x: &'a [f32],
    pub bias: &'a [f32],
    out: &'a mut [MaybeUninit<f32>],
    pub m: usize,
}

impl<'a> Operands<'a> {
    /// Checks the sizes against a packed weight (`None` when they do not fit it).
    pub fn new(
        w: &Packed,
        x: &'a [f32],
        bias: &'a [f32],
        out: &'a mut [MaybeUninit<f32>],
    ) -> Option<Self> {
        if w.k == 0 || !x.len().is_multiple_of(w.k) || bias.len() != w.n {
            return None;
        }
        let m = x.len() / w.k;
        (out.len() == m * w.n).then_some(Self { x, bias, out, m })
    }

    /// As [`Operands::new`], into initialised floats (tests compare them with a reference).
    #[cfg(test)]
    pub fn into_floats(
        w: &Packed,
        x: &'a [f32],
        bias: &'a [f32],
        out: &'a mut [f32],
    ) -> Option<Self> {
        // SAFETY: same layout; the kernels only ever store initialised floats through it.
        let out = unsafe { &mut *(out as *mut [f32] as *mut [MaybeUninit<f32>]) };
        Self::new(w, x, bias, out)
    }

    /// Where the kernels write: `m × n` floats, each written (first from the bias) before it is read.
    fn out_ptr(&mut self) -> *mut f32 {
        self.out.as_mut_ptr().cast()
    }
}

/// One step of the blocked loop: rows `i..i + rows` by panel `j` over inputs `p0..p0 + pc` (elements or pairs),
/// the `slice`-th run of inputs.
#[derive(Clone, Copy)]
struct Step {
    slice: usize,
    p0: usize,
    pc: usize,
    i: usize,
    rows: usize,
    j: usize,
}

/// The order every kernel walks its product in: the rows in blocks of [`MC`]; in each, the `panels`; in each,
/// the inputs (`depth`, elements or pairs) in slices of `pc`; in each, tiles of at most `mr` rows — so that a
/// panel slice stays in L1 while a block of rows runs over it, and so do the block's outputs in that panel
/// between slices. Each tile's slices come in order (the first starts from the bias). Inlined into each kernel.
#[inline(always)]
fn for_each_step(
    depth: usize,
    pc: usize,
    m: usize,
    panels: usize,
    mr: usize,
    mut step: impl FnMut(Step),
) {
    for i0 in (0..m).step_by(MC) {
        let i1 = (i0 + MC).min(m);
        for j in 0..panels {
            for (slice, p0) in (0..depth).step_by(pc).enumerate() {
                let pc = pc.min(depth - p0);
                for i in (i0..i1).step_by(mr) {
                    let rows = mr.min(i1 - i);
                    step(Step {
                        slice,
                        p0,
                        pc,
                        i,
                        rows,
                        j,
                    });
                }
            }
        }
    }
}

/// The blocked loop over f32 panels, shared by the AVX2 and AVX-512 kernels: `tile(r, rows, a, lda, panel, kc,
/// out, ldc, first)` multiplies `rows` (≤ `MR`) rows starting at `a` by a panel slice of `kc` inputs into `out`,
/// starting from the bias when `first`.
#[inline(always)]
fn blocked<const NR: usize, const MR: usize>(
    w: &Packed,
    o: &mut Operands,
    tile: impl Fn(usize, *const f32, *const f32, usize, *mut f32, *const f32, bool),
) {
    let (k, n) = (w.k, w.n);
    let panels = w.f32_panels();
    let (x, out) = (o.x.as_ptr(), o.out_ptr());
    for_each_step(k, KC, o.m, n / NR, MR, |s| {
        let panel = panels[(s.j * k + s.p0) * NR..].as_ptr();
        // SAFETY: `Operands::new` checked `x` is m×k and `out` m×n; rows < m, p0 + pc ≤ k, and columns
        // NR·j..NR·j+NR < n.
        let (a, c) = unsafe { (x.add(s.i * k + s.p0), out.add(s.i * n + s.j * NR)) };
        let bias = o.bias[s.j * NR..].as_ptr();
        tile(s.rows, a, panel, s.pc, c, bias, s.p0 == 0);
    });
}

/// `$step::<R>($t)` with `R = $rows` (1 to 12): a kernel's step is built once per row count, the count a
/// const generic. (Off x86-64 only the emulations, in tests, use it.)
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_macros))]
macro_rules! by_rows {
    ($rows:expr, $step:ident, $t:expr) => {
        match $rows {
            12 => $step::<12>($t),
            11 => $step::<11>($t),
            10 => $step::<10>($t),
            9 => $step::<9>($t),
            8 => $step::<8>($t),
            7 => $step::<7>($t),
            6 => $step::<6>($t),
            5 => $step::<5>($t),
            4 => $step::<4>($t),
            3 => $step::<3>($t),
            2 => $step::<2>($t),
            _ => $step::<1>($t),
        }
    };
}

#[cfg(target_arch = "x86_64")]
pub mod x86;

/// The operations of an f32 kernel on `LANES` lanes: real instructions (AVX2, AVX-512F), or an emulation for
/// tests. Two registers (`2·LANES` columns, the panel width) per row make a step.
pub trait F32Lanes {
    /// `LANES` floats.
    type V: Copy;
    /// Floats per register.
    const LANES: usize;
    /// # Safety
    /// `LANES` readable floats at `p`; the CPU has the kernel's instructions.
    unsafe fn load(p: *const f32) -> Self::V;
    /// # Safety
    /// `LANES` writable floats at `p`; the CPU has the kernel's instructions.
    unsafe fn store(p: *mut f32, v: Self::V);
    /// # Safety
    /// The CPU has the kernel's instructions.
    unsafe fn splat(x: f32) -> Self::V;
    /// `acc + a·b` in each lane, rounded once.
    ///
    /// # Safety
    /// The CPU has the kernel's instructions.
    unsafe fn mul_add(a: Self::V, b: Self::V, acc: Self::V) -> Self::V;
    /// One step of the product for `rows` (1 to 12) rows: [`tile_f32`] with `R = rows` ([`by_rows`]), each row
    /// count a function of its own compiled for the kernel's instructions. Compiled for them, because the step
    /// is reached through closures of functions without the target feature, where the operations above cannot
    /// inline and became one call per instruction (what the AVX-512 kernels were, unnoticed, until
    /// `tests/kernel_code.rs` looked at their machine code); one function per row count, because the twelve
    /// steps written as one function kept an accumulator of the 6-row AVX2 step on the stack (a load and a
    /// store per multiply-add: 24 texts/s instead of 41). `tests/kernel_code.rs` checks both in the binary.
    ///
    /// # Safety
    /// The CPU has the kernel's instructions; `t` as [`f32_product`] builds it.
    unsafe fn tile(rows: usize, t: &F32Tile);
}

/// The f32 product over any [`F32Lanes`]: panels `NR` (= 2 × lanes) wide, `MR` (≤ 12) rows per step.
///
/// # Safety
/// The CPU has `L`'s instructions; `w` packed with `Layout::F32 { nr: NR }`.
#[inline(always)]
pub unsafe fn f32_product<L: F32Lanes, const NR: usize, const MR: usize>(
    w: &Packed,
    mut o: Operands,
) {
    debug_assert!(NR == 2 * L::LANES && MR <= 12);
    let k = w.inputs();
    let n = w.outputs();
    blocked::<NR, MR>(w, &mut o, |rows, a, b, kc, c, bias, first| {
        let t = F32Tile {
            a,
            lda: k,
            b,
            kc,
            c,
            ldc: n,
            bias,
            first,
        };
        // SAFETY: the caller checked the instructions; pointers are in bounds (`blocked`).
        unsafe { L::tile(rows, &t) }
    });
}

/// One step of an f32 kernel: rows at `a` (stride `lda`) times a panel slice of `kc` inputs at `b`, into rows
/// of outputs at `c` (stride `ldc`), starting from the bias when `first`.
pub struct F32Tile {
    a: *const f32,
    lda: usize,
    b: *const f32,
    kc: usize,
    c: *mut f32,
    ldc: usize,
    bias: *const f32,
    first: bool,
}

#[inline(always)]
unsafe fn tile_f32<L: F32Lanes, const R: usize>(t: &F32Tile) {
    let w = L::LANES;
    // SAFETY: `blocked` passes R rows of kc inputs, a panel slice of kc × 2·LANES and R rows of 2·LANES outputs;
    // the caller checked the instructions.
    unsafe {
        let mut acc = [[L::splat(0.0); 2]; R];
        for (r, row) in acc.iter_mut().enumerate() {
            let src = if t.first { t.bias } else { t.c.add(r * t.ldc) };
            row[0] = L::load(src);
            row[1] = L::load(src.add(w));
        }
        for p in 0..t.kc {
            let b0 = L::load(t.b.add(p * 2 * w));
            let b1 = L::load(t.b.add(p * 2 * w + w));
            for (r, row) in acc.iter_mut().enumerate() {
                let av = L::splat(*t.a.add(r * t.lda + p));
                row[0] = L::mul_add(av, b0, row[0]);
                row[1] = L::mul_add(av, b1, row[1]);
            }
        }
        for (r, row) in acc.iter().enumerate() {
            L::store(t.c.add(r * t.ldc), row[0]);
            L::store(t.c.add(r * t.ldc + w), row[1]);
        }
    }
}

/// The operations of a bf16 dot-product kernel on `LANES` f32 lanes: real instructions, or an emulation for
/// tests. Two registers of `P` (32 columns) per row make a step.
pub trait Bf16Lanes {
    /// 16 f32 accumulators.
    type F: Copy;
    /// 16 pairs of bf16.
    type P: Copy;
    /// # Safety
    /// 16 readable floats at `p`; the CPU has the kernel's instructions.
    unsafe fn load_f(p: *const f32) -> Self::F;
    /// # Safety
    /// 16 writable floats at `p`; the CPU has the kernel's instructions.
    unsafe fn store_f(p: *mut f32, v: Self::F);
    /// # Safety
    /// 16 readable pairs at `p`; the CPU has the kernel's instructions.
    unsafe fn load_pairs(p: *const u32) -> Self::P;
    /// # Safety
    /// The CPU has the kernel's instructions.
    unsafe fn splat_pair(pair: u32) -> Self::P;
    /// `acc[i] += a.lo[i]·b.lo[i] + a.hi[i]·b.hi[i]` for each lane.
    ///
    /// # Safety
    /// The CPU has the kernel's instructions.
    unsafe fn dot(acc: Self::F, a: Self::P, b: Self::P) -> Self::F;
    /// One step of the product for `rows` (1 to 12) rows: [`tile_bf16`] with `R = rows`, each row count a
    /// function of its own compiled for the kernel's instructions (why: [`F32Lanes::tile`]).
    ///
    /// # Safety
    /// The CPU has the kernel's instructions; `t` as [`bf16_product`] builds it.
    unsafe fn tile(rows: usize, t: &PairTile);
    /// The activations `x` (an even count) as bf16 pairs, rounded to nearest with ties to even, the even input
    /// in the low half ([`to_bf16_pairs`] is the plain form).
    ///
    /// # Safety
    /// The CPU has the kernel's instructions; `out` holds `x.len() / 2` pairs.
    unsafe fn to_pairs(x: &[f32], out: &mut [u32]);
}

/// [`Bf16Lanes::to_pairs`] in plain Rust, for what a vector conversion leaves.
#[inline(always)]
pub fn to_bf16_pairs(x: &[f32], out: &mut [u32]) {
    for (d, p) in out.iter_mut().zip(x.chunks_exact(2)) {
        *d = bf16(p[0]) as u32 | (bf16(p[1]) as u32) << 16;
    }
}

thread_local! {
    /// The activations as bf16 pairs, reused across calls on one thread.
    static PAIRS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The activations as 16-bit integer pairs and their scales (row × slice), reused likewise.
    static I16_SCRATCH: std::cell::RefCell<(Vec<u32>, Vec<f32>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Rounds each row of `x` (`k` inputs) to 16-bit integer pairs, a scale per slice of [`KC`] inputs: the slice's
/// largest magnitude is ±[`A_LEVELS`] steps. `round` turns one slice into pairs given the inverse of its scale
/// (the kernel's vectorised conversion; [`round_to_pairs`] is the plain one). Inlined into its kernel, so that
/// it is compiled for the kernel's instruction set.
#[inline(always)]
fn quantize_rows(
    x: &[f32],
    k: usize,
    pairs: &mut Vec<u32>,
    scales: &mut Vec<f32>,
    round: impl Fn(&[f32], f32, &mut [u32]),
) {
    let m = x.len() / k;
    let slices = k.div_ceil(KC);
    pairs.clear();
    pairs.resize(m * k / 2, 0);
    scales.clear();
    scales.resize(m * slices, 0.0);
    for (i, row) in x.chunks_exact(k).enumerate() {
        for (t, slice) in row.chunks(KC).enumerate() {
            let top = slice.iter().fold(0f32, |a, v| a.max(v.abs()));
            let scale = top / A_LEVELS;
            scales[i * slices + t] = scale;
            let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
            round(
                slice,
                inv,
                &mut pairs[(i * k + t * KC) / 2..][..slice.len() / 2],
            );
        }
    }
}

/// One slice of inputs times `inv`, rounded to the nearest integer (ties to even, as the vector conversions do)
/// and held to ±[`A_LEVELS`], as pairs (the even input in the low half): the plain form of each kernel's
/// vectorised conversion, which also does the tail it leaves.
#[inline(always)]
fn round_to_pairs(slice: &[f32], inv: f32, dst: &mut [u32]) {
    let level =
        |v: f32| (v * inv).round_ties_even().clamp(-A_LEVELS, A_LEVELS) as i16 as u16 as u32;
    for (d, p) in dst.iter_mut().zip(slice.chunks_exact(2)) {
        *d = level(p[0]) | level(p[1]) << 16;
    }
}

/// The bf16 product over any [`Bf16Lanes`]: activations rounded to bf16 pairs once per call, then the blocked
/// loop with 12 rows × 32 columns per step.
///
/// # Safety
/// The CPU has `L`'s instructions; `w` packed with `Layout::Bf16Pairs`.
#[inline(always)]
pub unsafe fn bf16_product<L: Bf16Lanes>(w: &Packed, mut o: Operands) {
    const MR: usize = 12;
    let (k, n, m) = (w.k, w.n, o.m);
    let kp = k / 2;
    PAIRS.with(|s| {
        let mut a = s.borrow_mut();
        a.clear();
        a.resize(m * kp, 0);
        // SAFETY: the caller checked the instructions; `a` holds half as many pairs as `x` has inputs.
        unsafe { L::to_pairs(o.x, &mut a) };
        let (ap, out) = (a.as_ptr(), o.out_ptr());
        let pairs = w.bf16_pairs();
        for_each_step(kp, KC / 2, m, n / 32, MR, |s| {
            // SAFETY: in bounds as in `blocked` (pairs are k/2 per row); the caller checked the instructions.
            unsafe {
                L::tile(s.rows, &PairTile::at(&s, ap, kp, pairs, 32, out, n, o.bias));
            }
        });
    });
}

/// One step of a kernel over pairs (bf16 or 16-bit integers): rows of pairs at `a` (stride `lda`) times a panel
/// slice of `qc` pairs at `b`, into rows of outputs at `c` (stride `ldc`), starting from the bias when `first`.
pub struct PairTile {
    a: *const u32,
    lda: usize,
    b: *const u32,
    qc: usize,
    c: *mut f32,
    ldc: usize,
    bias: *const f32,
    first: bool,
}

impl PairTile {
    /// The tile of step `s` of an `[m, 2·kp] · [2·kp, n]` product: activations as pairs at `a`, the weight's
    /// panels `width` columns wide, outputs at `out`.
    ///
    /// # Safety
    /// `a` holds m × kp pairs, `out` m × n floats, and `s` comes from [`for_each_step`] over them.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn at(
        s: &Step,
        a: *const u32,
        kp: usize,
        panels: &[u32],
        width: usize,
        out: *mut f32,
        n: usize,
        bias: &[f32],
    ) -> Self {
        // SAFETY: in bounds as the caller promised.
        unsafe {
            Self {
                a: a.add(s.i * kp + s.p0),
                lda: kp,
                b: panels[(s.j * kp + s.p0) * width..].as_ptr(),
                qc: s.pc,
                c: out.add(s.i * n + s.j * width),
                ldc: n,
                bias: bias[s.j * width..].as_ptr(),
                first: s.p0 == 0,
            }
        }
    }
}

/// One step of a bf16 kernel (see [`PairTile`]).
#[inline(always)]
unsafe fn tile_bf16<L: Bf16Lanes, const R: usize>(t: &PairTile) {
    // SAFETY: R rows of qc pairs at `a` (stride lda), a panel slice of qc × 32 pairs at `b`, R rows of 32
    // outputs at `c` (stride ldc); the caller checked the instructions.
    unsafe {
        let zero = L::load_f(t.bias);
        let mut acc = [[zero; 2]; R];
        for (r, row) in acc.iter_mut().enumerate() {
            let src = if t.first { t.bias } else { t.c.add(r * t.ldc) };
            row[0] = L::load_f(src);
            row[1] = L::load_f(src.add(16));
        }
        for q in 0..t.qc {
            let b0 = L::load_pairs(t.b.add(q * 32));
            let b1 = L::load_pairs(t.b.add(q * 32 + 16));
            for (r, row) in acc.iter_mut().enumerate() {
                let av = L::splat_pair(*t.a.add(r * t.lda + q));
                row[0] = L::dot(row[0], av, b0);
                row[1] = L::dot(row[1], av, b1);
            }
        }
        for (r, row) in acc.iter().enumerate() {
            L::store_f(t.c.add(r * t.ldc), row[0]);
            L::store_f(t.c.add(r * t.ldc + 16), row[1]);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
