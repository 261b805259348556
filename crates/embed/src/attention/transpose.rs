//! One head's keys turned on their side (`[n][cols]` → `[cols][n_pad]`), so that a register of the score loop
//! holds one dimension of consecutive keys. Element by element this was a tenth of the attention's time (a
//! scalar load and a scalar store per key and dimension); with AVX it goes eight keys by eight dimensions at a
//! time, through registers.

/// `dst[t · n_pad + j] = src[j · stride + t]` for `j < n` and `t < cols`, and the default (zero) for
/// `n ≤ j < n_pad`: 32-bit elements (f32 keys, or bf16 pairs of dimensions).
pub(super) fn keys<T: Copy + Default>(
    src: &[T],
    stride: usize,
    cols: usize,
    n: usize,
    n_pad: usize,
    dst: &mut [T],
) {
    assert!(
        size_of::<T>() == 4
            && n <= n_pad
            && (n == 0 || src.len() >= (n - 1) * stride + cols)
            && dst.len() >= cols * n_pad,
        "transpose: {n} rows of {cols} (stride {stride}) into {n_pad} do not fit"
    );
    // Keys done by blocks of eight.
    #[cfg(target_arch = "x86_64")]
    let done = if cols.is_multiple_of(8) && std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX was just detected; the sizes were checked above.
        unsafe { blocks_avx(src, stride, cols, n, n_pad, dst) };
        n / 8 * 8
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    for j in done..n_pad {
        for t in 0..cols {
            dst[t * n_pad + j] = if j < n {
                src[j * stride + t]
            } else {
                T::default()
            };
        }
    }
}

/// The first `n / 8 · 8` keys, by blocks of 8 × 8.
///
/// # Safety
/// The CPU has AVX; `T` is 32 bits; `cols` is a multiple of 8 and the slices hold what [`keys`] checks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn blocks_avx<T: Copy>(
    src: &[T],
    stride: usize,
    cols: usize,
    n: usize,
    n_pad: usize,
    dst: &mut [T],
) {
    use std::arch::x86_64::*;
    let (src, dst) = (src.as_ptr().cast::<f32>(), dst.as_mut_ptr().cast::<f32>());
    for j0 in (0..n / 8 * 8).step_by(8) {
        for t0 in (0..cols).step_by(8) {
            // SAFETY: rows j0..j0 + 8 ≤ n and columns t0..t0 + 8 ≤ cols are within `src`; the stores write
            // dimensions t0..t0 + 8 of keys j0..j0 + 8, within `dst` (cols · n_pad).
            unsafe {
                // Written out, not `array::from_fn`: a closure's loads could be left out of line.
                let at = |a: usize| src.add((j0 + a) * stride + t0);
                let r = [
                    _mm256_loadu_ps(at(0)),
                    _mm256_loadu_ps(at(1)),
                    _mm256_loadu_ps(at(2)),
                    _mm256_loadu_ps(at(3)),
                    _mm256_loadu_ps(at(4)),
                    _mm256_loadu_ps(at(5)),
                    _mm256_loadu_ps(at(6)),
                    _mm256_loadu_ps(at(7)),
                ];
                // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves swapped: row `a`
                // column `c` ends in register `c` lane `a`.
                let lo01 = _mm256_unpacklo_ps(r[0], r[1]);
                let hi01 = _mm256_unpackhi_ps(r[0], r[1]);
                let lo23 = _mm256_unpacklo_ps(r[2], r[3]);
                let hi23 = _mm256_unpackhi_ps(r[2], r[3]);
                let lo45 = _mm256_unpacklo_ps(r[4], r[5]);
                let hi45 = _mm256_unpackhi_ps(r[4], r[5]);
                let lo67 = _mm256_unpacklo_ps(r[6], r[7]);
                let hi67 = _mm256_unpackhi_ps(r[6], r[7]);
                let q = [
                    _mm256_shuffle_ps::<0x44>(lo01, lo23),
                    _mm256_shuffle_ps::<0xEE>(lo01, lo23),
                    _mm256_shuffle_ps::<0x44>(hi01, hi23),
                    _mm256_shuffle_ps::<0xEE>(hi01, hi23),
                ];
                let p = [
                    _mm256_shuffle_ps::<0x44>(lo45, lo67),
                    _mm256_shuffle_ps::<0xEE>(lo45, lo67),
                    _mm256_shuffle_ps::<0x44>(hi45, hi67),
                    _mm256_shuffle_ps::<0xEE>(hi45, hi67),
                ];
                for c in 0..4 {
                    let low = _mm256_permute2f128_ps::<0x20>(q[c], p[c]);
                    let high = _mm256_permute2f128_ps::<0x31>(q[c], p[c]);
                    _mm256_storeu_ps(dst.add((t0 + c) * n_pad + j0), low);
                    _mm256_storeu_ps(dst.add((t0 + c + 4) * n_pad + j0), high);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length around the blocks of 8 (and none), both element types, against the element-by-element
    /// definition; padding keys are zero.
    #[test]
    fn turns_keys_on_their_side() {
        for n in [0usize, 1, 7, 8, 9, 16, 23, 40] {
            for cols in [8usize, 16, 32, 12] {
                let n_pad = n.div_ceil(16) * 16;
                let stride = cols + 5;
                let src: Vec<u32> = (0..n.max(1) * stride).map(|i| i as u32 + 1).collect();
                let mut dst = vec![u32::MAX; cols * n_pad];
                keys(&src, stride, cols, n, n_pad, &mut dst);
                for t in 0..cols {
                    for j in 0..n_pad {
                        let want = if j < n { src[j * stride + t] } else { 0 };
                        assert_eq!(
                            dst[t * n_pad + j],
                            want,
                            "n {n} cols {cols}: key {j} dim {t}"
                        );
                    }
                }
                let floats: Vec<f32> = src.iter().map(|&v| v as f32 * 0.5).collect();
                let mut dst = vec![f32::NAN; cols * n_pad];
                keys(&floats, stride, cols, n, n_pad, &mut dst);
                for t in 0..cols {
                    for j in 0..n {
                        assert_eq!(dst[t * n_pad + j], floats[j * stride + t]);
                    }
                }
            }
        }
    }
}
