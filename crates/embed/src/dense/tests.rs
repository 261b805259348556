//! The kernels against a plain product and each other, on this CPU and in emulation.

use super::*;

/// `vdpbf16ps` in plain Rust: what the instruction computes, lane by lane.
pub(crate) struct Emulated;

fn widen(h: u32) -> f32 {
    f32::from_bits(h << 16)
}

impl Bf16Lanes for Emulated {
    type F = [f32; 16];
    type P = [u32; 16];
    unsafe fn load_f(p: *const f32) -> [f32; 16] {
        // SAFETY: the kernel passes 16 readable floats.
        unsafe { std::ptr::read_unaligned(p.cast()) }
    }
    unsafe fn store_f(p: *mut f32, v: [f32; 16]) {
        // SAFETY: the kernel passes 16 writable floats.
        unsafe { std::ptr::write_unaligned(p.cast(), v) }
    }
    unsafe fn load_pairs(p: *const u32) -> [u32; 16] {
        // SAFETY: the kernel passes 16 readable pairs.
        unsafe { std::ptr::read_unaligned(p.cast()) }
    }
    unsafe fn splat_pair(pair: u32) -> [u32; 16] {
        [pair; 16]
    }
    unsafe fn dot(mut acc: [f32; 16], a: [u32; 16], b: [u32; 16]) -> [f32; 16] {
        for i in 0..16 {
            acc[i] +=
                widen(a[i] & 0xffff) * widen(b[i] & 0xffff) + widen(a[i] >> 16) * widen(b[i] >> 16);
        }
        acc
    }
    unsafe fn tile(rows: usize, t: &PairTile) {
        // SAFETY: passed on from the kernel; the emulation needs no instructions.
        unsafe { by_rows!(rows, emulated_bf16_step, t) }
    }
    unsafe fn to_pairs(x: &[f32], out: &mut [u32]) {
        to_bf16_pairs(x, out)
    }
}

/// The bf16 step on the emulation, for `R` rows.
unsafe fn emulated_bf16_step<const R: usize>(t: &PairTile) {
    // SAFETY: passed on from the kernel; the emulation needs no instructions.
    unsafe { tile_bf16::<Emulated, R>(t) }
}

/// The f32 step on the emulation, for `R` rows.
unsafe fn emulated_f32_step<const R: usize>(t: &F32Tile) {
    // SAFETY: passed on from the kernel; the emulation needs no instructions.
    unsafe { tile_f32::<EmulatedF32, R>(t) }
}

/// Sixteen f32 lanes in plain Rust, as AVX-512F computes them.
struct EmulatedF32;

impl F32Lanes for EmulatedF32 {
    type V = [f32; 16];
    const LANES: usize = 16;
    unsafe fn load(p: *const f32) -> [f32; 16] {
        // SAFETY: the kernel passes 16 readable floats.
        unsafe { std::ptr::read_unaligned(p.cast()) }
    }
    unsafe fn store(p: *mut f32, v: [f32; 16]) {
        // SAFETY: the kernel passes 16 writable floats.
        unsafe { std::ptr::write_unaligned(p.cast(), v) }
    }
    unsafe fn splat(x: f32) -> [f32; 16] {
        [x; 16]
    }
    unsafe fn mul_add(a: [f32; 16], b: [f32; 16], mut acc: [f32; 16]) -> [f32; 16] {
        for i in 0..16 {
            acc[i] = a[i].mul_add(b[i], acc[i]);
        }
        acc
    }
    unsafe fn tile(rows: usize, t: &F32Tile) {
        // SAFETY: passed on from the kernel; the emulation needs no instructions.
        unsafe { by_rows!(rows, emulated_f32_step, t) }
    }
}

#[test]
fn the_avx512_f32_loop_multiplies_like_f64_through_an_emulation() {
    for (m, k, n) in SHAPES {
        let (x, w, b) = case(m, k, n);
        let packed = Packed::pack(&w, k, n, Layout::F32 { nr: 32 }).unwrap();
        let mut out = vec![f32::NAN; m * n];
        let o = Operands::into_floats(&packed, &x, &b, &mut out).unwrap();
        // SAFETY: the emulation needs no instructions.
        unsafe { f32_product::<EmulatedF32, 32, 12>(&packed, o) };
        let want = reference(&x, &w, &b, k, n);
        for (i, (g, e)) in out.iter().zip(&want).enumerate() {
            assert!((g - e).abs() <= 1e-4, "{m}x{k}x{n} [{i}]: {g} vs {e}");
        }
    }
}

pub(crate) fn lcg(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
}

pub(crate) fn reference(x: &[f32], w_t: &[f32], bias: &[f32], k: usize, n: usize) -> Vec<f32> {
    let m = x.len() / k;
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = bias[j] as f64;
            for p in 0..k {
                s += x[i * k + p] as f64 * w_t[p * n + j] as f64;
            }
            out[i * n + j] = s as f32;
        }
    }
    out
}

/// Shapes with row counts that leave every remainder of the row groups and inputs past one slice.
pub(crate) const SHAPES: [(usize, usize, usize); 5] = [
    (1, 32, 32),
    (13, 64, 96),
    (45, 384, 1152),
    (101, 1536, 384),
    (200, 300, 64),
];

fn case(m: usize, k: usize, n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut seed = (m * 31 + k * 7 + n) as u64;
    let x = (0..m * k).map(|_| lcg(&mut seed)).collect();
    let w = (0..k * n).map(|_| lcg(&mut seed)).collect();
    let b = (0..n).map(|_| lcg(&mut seed)).collect();
    (x, w, b)
}

#[test]
fn bf16_pairs_multiply_like_f32_within_bf16_rounding() {
    for (m, k, n) in SHAPES {
        let (x, w, b) = case(m, k, n);
        let packed = Packed::pack(&w, k, n, Layout::Bf16Pairs).unwrap();
        let mut out = vec![f32::NAN; m * n];
        let o = Operands::into_floats(&packed, &x, &b, &mut out).unwrap();
        // SAFETY: the emulation needs no instructions.
        unsafe { bf16_product::<Emulated>(&packed, o) };
        let want = reference(&x, &w, &b, k, n);
        // bf16 keeps 8 bits: each product is off by up to ~2^-8 relative; sums of k terms of ±0.25.
        let tol = 0.02 * (k as f32).sqrt() * 0.25;
        for (i, (g, e)) in out.iter().zip(&want).enumerate() {
            assert!((g - e).abs() <= tol, "{m}x{k}x{n} [{i}]: {g} vs {e}");
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn i16_pairs_multiply_like_f32_within_their_rounding() {
    if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
        eprintln!("no AVX2 here, skipped");
        return;
    }
    for (m, k, n) in SHAPES {
        let (mut x, w, b) = case(m, k, n);
        // An outlier input, as BERT's hidden states have: only its slice loses resolution.
        x[k / 2] = 40.0;
        let Some(packed) = Packed::pack(&w, k, n, Layout::I16Pairs) else {
            continue;
        };
        let mut out = vec![f32::NAN; m * n];
        let o = Operands::into_floats(&packed, &x, &b, &mut out).unwrap();
        // SAFETY: the features were just detected.
        unsafe { x86::i16_avx2(&packed, o) };
        let want = reference(&x, &w, &b, k, n);
        for (i, (g, e)) in out.iter().zip(&want).enumerate() {
            // Steps of 1/2047 of a slice's largest input (40 in the first row) and 1/4095 of a column's
            // largest weight, over up to 1536 terms (the first row: ~6 standard deviations of its error).
            let tol = if i < n {
                0.15
            } else {
                2e-3 * (k as f32).sqrt() / 8.0
            };
            assert!((g - e).abs() <= tol, "{m}x{k}x{n} [{i}]: {g} vs {e}");
        }
    }
}

#[test]
fn packing_refuses_shapes_it_cannot_hold() {
    let w = vec![0f32; 33 * 48];
    assert!(Packed::pack(&w, 33, 48, Layout::Bf16Pairs).is_none()); // odd inputs, 48 columns
    assert!(Packed::pack(&w, 48, 33, Layout::F32 { nr: 16 }).is_none());
    assert!(Packed::pack(&w, 33, 48, Layout::F32 { nr: 16 }).is_some());
    assert!(Packed::pack(&w, 33, 47, Layout::F32 { nr: 16 }).is_none()); // size mismatch
}

#[cfg(target_arch = "x86_64")]
#[test]
fn f32_kernels_match_f64_products() {
    let have = |f: &str| match f {
        "avx2" => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        _ => is_x86_feature_detected!("avx512f"),
    };
    for (name, nr) in [("avx2", 16), ("avx512", 32)] {
        if !have(name) {
            eprintln!("{name}: not on this CPU, skipped");
            continue;
        }
        for (m, k, n) in SHAPES {
            let (x, w, b) = case(m, k, n);
            let Some(packed) = Packed::pack(&w, k, n, Layout::F32 { nr }) else {
                continue;
            };
            let mut out = vec![f32::NAN; m * n];
            let o = Operands::into_floats(&packed, &x, &b, &mut out).unwrap();
            // SAFETY: the feature was just detected.
            unsafe {
                match name {
                    "avx2" => x86::f32_avx2(&packed, o),
                    _ => x86::f32_avx512(&packed, o),
                }
            }
            let want = reference(&x, &w, &b, k, n);
            for (i, (g, e)) in out.iter().zip(&want).enumerate() {
                assert!(
                    (g - e).abs() <= 1e-4,
                    "{name} {m}x{k}x{n} [{i}]: {g} vs {e}"
                );
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_vectorised_16_bit_rounding_is_the_plain_one() {
    if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
        eprintln!("no AVX2 here, skipped");
        return;
    }
    let mut seed = 3u64;
    for len in (0..=70).step_by(2) {
        let mut x: Vec<f32> = (0..len).map(|_| lcg(&mut seed) * 4000.0).collect();
        // Exact halves and values past the levels (held to ±A_LEVELS).
        if len >= 4 {
            x[0] = 0.625; // 2.5 steps: ties go to even either way
            x[1] = -0.875;
            x[2] = 1e9;
            x[3] = -1e9;
        }
        let inv = 4.0;
        let (mut plain, mut vector) = (vec![7u32; len / 2], vec![7u32; len / 2]);
        round_to_pairs(&x, inv, &mut plain);
        // SAFETY: AVX2 was just detected.
        unsafe { x86::round_to_pairs_avx2(&x, inv, &mut vector) };
        assert_eq!(plain, vector, "{len} inputs");
    }
}
