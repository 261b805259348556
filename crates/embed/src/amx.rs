//! Dense-layer products on Intel AMX tiles: bf16 inputs, f32 accumulation.
//!
//! Profiling the f32 encoder put ~60% of an embedding pass in `gemm`'s AVX2 kernel (the crate's AVX-512
//! kernels need a nightly compiler). Server CPUs since Sapphire Rapids multiply bf16 tiles at 16 × 16 × 32
//! per instruction — ~1,800 G multiply-adds/s on one core of this machine against ~50 for AVX2 — so on them the
//! four dense layers of each encoder block run here and cost little beside the element-wise work around them.
//!
//! Weights are packed once at load into the layout `TDPBF16PS` reads its second operand in (tiles of 32 inputs
//! × 16 outputs, pairs of inputs interleaved); activations are rounded to bf16 (nearest, ties to even) per call.
//! bf16 keeps 8 bits of mantissa, so vectors differ slightly from the f32 path (`tests/embed_parity.rs` pins
//! both). Linux grants tile state per process on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`): [`available`]
//! asks once and says no on any other CPU or OS, where the f32 path runs.

/// Whether this process can multiply on AMX bf16 tiles (CPU, OS and Linux's permission; checked once).
pub fn available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(imp::detect)
}

/// A weight matrix stored for AMX: bf16 tiles of 32 inputs × 16 outputs, pairs of inputs interleaved.
pub struct PackedWeight {
    /// Inputs (rows of the transposed weight), a multiple of 32.
    k: usize,
    /// Outputs, a multiple of 32.
    n: usize,
    /// Tile `(j, t)` (outputs `16j..16j+16`, inputs `32t..32t+32`) starts at `(j * k/32 + t) * 512`.
    tiles: Vec<u16>,
}

/// Rounds to bf16, to nearest with ties to even (what hardware conversions do).
#[inline(always)]
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

impl PackedWeight {
    /// Packs a transposed weight `w_t` (`[k, n]` row-major: inputs × outputs). `None` when a side is not a
    /// multiple of 32 (the f32 path then serves that layer).
    pub fn pack(w_t: &[f32], k: usize, n: usize) -> Option<Self> {
        if k == 0 || n == 0 || !k.is_multiple_of(32) || !n.is_multiple_of(32) || w_t.len() != k * n
        {
            return None;
        }
        let kt = k / 32;
        let mut tiles = vec![0u16; k * n];
        for j in 0..n / 16 {
            for t in 0..kt {
                let tile = &mut tiles[(j * kt + t) * 512..][..512];
                for r in 0..16 {
                    for c in 0..16 {
                        for p in 0..2 {
                            tile[r * 32 + 2 * c + p] =
                                bf16(w_t[(t * 32 + 2 * r + p) * n + j * 16 + c]);
                        }
                    }
                }
            }
        }
        Some(Self { k, n, tiles })
    }

    /// Inputs of the layer.
    pub fn inputs(&self) -> usize {
        self.k
    }

    /// Outputs of the layer.
    pub fn outputs(&self) -> usize {
        self.n
    }

    /// `out[m, n] = x[m, k] · W + bias` for `m` rows of `x`. Callers check [`available`] first.
    pub fn matmul_bias(&self, x: &[f32], bias: &[f32], out: &mut [f32]) {
        let (k, n) = (self.k, self.n);
        assert!(x.len().is_multiple_of(k) && bias.len() == n);
        let m = x.len() / k;
        assert_eq!(out.len(), m * n);
        assert!(available(), "AMX products called where AMX is unavailable");
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            let rows = m.div_ceil(32) * 32;
            s.resize(rows * k, 0);
            // SAFETY: AMX, AVX-512F/BW availability was checked; slices are sized for the tiles read.
            unsafe {
                imp::to_bf16(x, &mut s[..m * k]);
                s[m * k..].fill(0);
                imp::product(&s, rows, k, &self.tiles, n, bias, m, out);
            }
        });
    }
}

thread_local! {
    /// The bf16 copy of the activations, reused across calls on one thread.
    static SCRATCH: std::cell::RefCell<Vec<u16>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use std::arch::asm;
    use std::arch::x86_64::{__cpuid_count, _xgetbv};

    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;

    pub fn detect() -> bool {
        if !(std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("xsave"))
        {
            return false;
        }
        let (max_leaf, leaf1) = (__cpuid_count(0, 0).eax, __cpuid_count(1, 0));
        if max_leaf < 7 || leaf1.ecx & (1 << 27) == 0 {
            return false; // no OSXSAVE: xgetbv would fault
        }
        let leaf7 = __cpuid_count(7, 0);
        let (amx_bf16, amx_tile) = (leaf7.edx & (1 << 22) != 0, leaf7.edx & (1 << 24) != 0);
        if !(amx_bf16 && amx_tile) {
            return false;
        }
        // SAFETY: OSXSAVE is set, so xgetbv is allowed; bits 17/18 say the OS manages tile state.
        let xcr0 = unsafe { _xgetbv(0) };
        if xcr0 & (3 << 17) != 3 << 17 {
            return false;
        }
        // SAFETY: a plain system call with integer arguments.
        unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            ) == 0
        }
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn to_bf16(x: &[f32], out: &mut [u16]) {
        for (o, v) in out.iter_mut().zip(x) {
            *o = super::bf16(*v);
        }
    }

    /// Palette 1: tiles 0–7 of 16 rows × 64 bytes.
    #[repr(C, align(64))]
    struct TileConfig {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        colsb: [u16; 16],
        rows: [u8; 16],
    }

    /// `out = a · tiles + bias` for the first `m` rows; `a` is `rows × k` bf16 (rows a multiple of 32, padding
    /// rows zero). Four accumulators (tmm0–3) cover 32 rows × 32 outputs; tmm4–5 hold rows, tmm6–7 weights.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn product(
        a: &[u16],
        rows: usize,
        k: usize,
        tiles: &[u16],
        n: usize,
        bias: &[f32],
        m: usize,
        out: &mut [f32],
    ) {
        debug_assert!(a.len() >= rows * k && tiles.len() == k * n);
        let mut cfg = TileConfig {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            colsb: [0; 16],
            rows: [0; 16],
        };
        for t in 0..8 {
            cfg.colsb[t] = 64;
            cfg.rows[t] = 16;
        }
        let kt = k / 32;
        let row_stride = k * 2; // bytes between rows of a
        let mut c = [0f32; 32 * 32];
        unsafe {
            asm!("ldtilecfg [{}]", in(reg) &cfg, options(nostack, readonly));
            // Rows outer: a block of 32 rows (≤ 96 KiB) stays in cache while every weight tile streams past it
            // from L2; the other order streamed all rows (up to 2.4 MiB, past L2) once per 32 outputs.
            for r in (0..rows).step_by(32) {
                let a0_row = a.as_ptr().add(r * k);
                let a1_row = a.as_ptr().add((r + 16) * k);
                for j in (0..n / 16).step_by(2) {
                    let b0 = tiles.as_ptr().add(j * kt * 512);
                    let b1 = tiles.as_ptr().add((j + 1) * kt * 512);
                    let (a0, a1) = (a0_row, a1_row);
                    asm!(
                        "tilezero tmm0",
                        "tilezero tmm1",
                        "tilezero tmm2",
                        "tilezero tmm3",
                        "2:",
                        "tileloadd tmm4, [{a0} + {sa}*1]",
                        "tileloadd tmm5, [{a1} + {sa}*1]",
                        "tileloadd tmm6, [{b0} + {sb}*1]",
                        "tileloadd tmm7, [{b1} + {sb}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        "tdpbf16ps tmm2, tmm5, tmm6",
                        "tdpbf16ps tmm3, tmm5, tmm7",
                        "add {a0}, 64",
                        "add {a1}, 64",
                        "add {b0}, 1024",
                        "add {b1}, 1024",
                        "dec {n}",
                        "jnz 2b",
                        "tilestored [{c} + {sc}*1], tmm0",
                        "tilestored [{c1} + {sc}*1], tmm1",
                        "tilestored [{c2} + {sc}*1], tmm2",
                        "tilestored [{c3} + {sc}*1], tmm3",
                        a0 = inout(reg) a0 => _,
                        a1 = inout(reg) a1 => _,
                        b0 = inout(reg) b0 => _,
                        b1 = inout(reg) b1 => _,
                        n = inout(reg) kt => _,
                        sa = in(reg) row_stride,
                        sb = in(reg) 64usize,
                        c = in(reg) c.as_mut_ptr(),
                        c1 = in(reg) c.as_mut_ptr().add(16),
                        c2 = in(reg) c.as_mut_ptr().add(16 * 32),
                        c3 = in(reg) c.as_mut_ptr().add(16 * 32 + 16),
                        sc = in(reg) 128usize,
                        options(nostack),
                    );
                    for i in 0..32.min(m.saturating_sub(r)) {
                        let dst = &mut out[(r + i) * n + j * 16..][..32];
                        let src = &c[i * 32..][..32];
                        let b = &bias[j * 16..][..32];
                        for ((d, s), b) in dst.iter_mut().zip(src).zip(b) {
                            *d = s + b;
                        }
                    }
                }
            }
            asm!("tilerelease", options(nostack, nomem));
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    pub fn detect() -> bool {
        false
    }
    pub unsafe fn to_bf16(_: &[f32], _: &mut [u16]) {
        unreachable!("AMX is never available here")
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn product(
        _: &[u16],
        _: usize,
        _: usize,
        _: &[u16],
        _: usize,
        _: &[f32],
        _: usize,
        _: &mut [f32],
    ) {
        unreachable!("AMX is never available here")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
        assert_eq!(bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(bf16(-2.0), 0xc000);
    }

    #[test]
    fn tiles_multiply_like_f32_within_bf16_rounding() {
        if !available() {
            eprintln!("no AMX here: the f32 path serves every layer");
            return;
        }
        let mut seed = 7;
        for (m, k, n) in [(1, 32, 32), (17, 64, 96), (45, 384, 1152), (64, 1536, 384)] {
            let x: Vec<f32> = (0..m * k).map(|_| lcg(&mut seed)).collect();
            let w_t: Vec<f32> = (0..k * n).map(|_| lcg(&mut seed)).collect();
            let bias: Vec<f32> = (0..n).map(|_| lcg(&mut seed)).collect();
            let packed = PackedWeight::pack(&w_t, k, n).unwrap();
            let mut out = vec![f32::NAN; m * n];
            packed.matmul_bias(&x, &bias, &mut out);
            for i in 0..m {
                for j in 0..n {
                    let exact: f64 = (0..k)
                        .map(|t| x[i * k + t] as f64 * w_t[t * n + j] as f64)
                        .sum::<f64>()
                        + bias[j] as f64;
                    let rounded: f64 = (0..k)
                        .map(|t| {
                            let a = f32::from_bits((bf16(x[i * k + t]) as u32) << 16) as f64;
                            let b = f32::from_bits((bf16(w_t[t * n + j]) as u32) << 16) as f64;
                            a * b
                        })
                        .sum::<f64>()
                        + bias[j] as f64;
                    let got = out[i * n + j] as f64;
                    // Equal to the product of the rounded inputs up to f32 accumulation, and near the exact one.
                    assert!(
                        (got - rounded).abs() < 1e-4 * (k as f64).sqrt(),
                        "{m}x{k}x{n} [{i},{j}]"
                    );
                    assert!(
                        (got - exact).abs() < 0.02 * (k as f64).sqrt(),
                        "{m}x{k}x{n} [{i},{j}]"
                    );
                }
            }
        }
        assert!(PackedWeight::pack(&[0.0; 48 * 32], 48, 32).is_none());
    }
}
