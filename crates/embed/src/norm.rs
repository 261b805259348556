//! Layer normalisation, fused with the residual sum before it and done in place: `x ← LayerNorm(x + residual)`.
//!
//! BERT normalises after every residual sum. Written as candle ops that was an addition into a new tensor
//! (zeroed, then filled) and candle's `layer_norm`, whose one-pass sums run one float at a time (a sum cannot
//! be reordered by the compiler): ~3% of an embedding pass by `perf`. Here each row is summed, normalised and
//! scaled while it is in cache, with partial sums in vector lanes, into the sublayer's own output.

use super::bert::{contiguous_f32, contiguous_f32_mut};
use candle_core::{CpuStorage, InplaceOp1, InplaceOp2, Layout, Result};

/// A layer normalisation's parameters: `weight` and `bias` per dimension, `eps` added to the variance.
pub struct Norm {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
    pub eps: f32,
}

/// `x ← LayerNorm(x + residual)` as a candle in-place op: `x` and `residual` are `[rows, h]`, or `residual`
/// holds fewer rows and repeats (the embeddings' positions, the same for every sequence of a batch).
pub struct AddNorm<'a>(pub &'a Norm);

impl InplaceOp2 for AddNorm<'_> {
    fn name(&self) -> &'static str {
        "add-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<()> {
        let residual = contiguous_f32(s2, l2, "layer norm (residual)")?;
        let x = contiguous_f32_mut(s1, l1, "layer norm")?;
        let h = self.0.weight.len();
        if h == 0
            || !x.len().is_multiple_of(h)
            || residual.is_empty()
            || !residual.len().is_multiple_of(h)
            || !x.len().is_multiple_of(residual.len())
        {
            candle_core::bail!(
                "layer norm: {} values and a residual of {} do not make rows of {h}",
                x.len(),
                residual.len()
            );
        }
        for x in x.chunks_mut(residual.len()) {
            self.0.apply(x, Some(residual));
        }
        Ok(())
    }
}

impl InplaceOp1 for Norm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        let x = contiguous_f32_mut(storage, layout, "layer norm")?;
        if self.weight.is_empty() || !x.len().is_multiple_of(self.weight.len()) {
            candle_core::bail!(
                "layer norm: {} values do not make rows of {}",
                x.len(),
                self.weight.len()
            );
        }
        self.apply(x, None);
        Ok(())
    }
}

impl Norm {
    /// Normalises each row of `x` (rows of `weight.len()`), after adding the same row of `residual` when there
    /// is one (as many rows as `x`); with AVX2+FMA code when the CPU has it.
    pub fn apply(&self, x: &mut [f32], residual: Option<&[f32]>) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the features the function was compiled for were just detected.
            unsafe { rows_avx2(self, x, residual) };
            return;
        }
        rows(self, x, residual)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(norm: &Norm, x: &mut [f32], residual: Option<&[f32]>) {
    rows(norm, x, residual)
}

/// Partial sums per lane: 16 floats, two AVX2 registers (one AVX-512), so that the sums vectorise.
const LANES: usize = 16;

#[inline(always)]
fn rows(norm: &Norm, x: &mut [f32], residual: Option<&[f32]>) {
    let h = norm.weight.len();
    let inv_h = 1.0 / h as f32;
    for (i, row) in x.chunks_exact_mut(h).enumerate() {
        if let Some(r) = residual {
            for (v, r) in row.iter_mut().zip(&r[i * h..(i + 1) * h]) {
                *v += r;
            }
        }
        let mean = lane_sum(row, |v| v) * inv_h;
        // Two passes (the mean, then the squared deviations) rather than E[x²] − mean²: no cancellation.
        let var = lane_sum(row, |v| (v - mean) * (v - mean)) * inv_h;
        let inv_std = 1.0 / (var + norm.eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = ((*v - mean) * inv_std).mul_add(*w, *b);
        }
    }
}

/// The sum of `f` over `xs`, in [`LANES`] partial sums.
#[inline(always)]
fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0f32; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (s, &v) in lanes.iter_mut().zip(c) {
            *s += f(v);
        }
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().map(|&v| f(v)).sum::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::tests::lcg;
    use candle_core::{Device, Tensor};

    /// Against LayerNorm of the sum computed in f64, rows of 384 and of 20 (a remainder past the lanes), and
    /// values with a large common offset (where E[x²] − mean² in f32 would cancel).
    #[test]
    fn adds_and_normalises_by_the_definition() -> Result<()> {
        let mut seed = 7u64;
        for (rows, h, offset) in [(5, 384, 0.0), (3, 20, 0.0), (4, 384, 300.0)] {
            let values = |n: usize, seed: &mut u64| -> Vec<f32> {
                (0..n).map(|_| lcg(seed) * 4.0 + offset).collect()
            };
            let norm = Norm {
                weight: values(h, &mut seed).iter().map(|w| w - offset).collect(),
                bias: values(h, &mut seed).iter().map(|b| b - offset).collect(),
                eps: 1e-12,
            };
            let x = Tensor::from_vec(values(rows * h, &mut seed), (rows, h), &Device::Cpu)?;
            let residual = Tensor::from_vec(values(rows * h, &mut seed), (rows, h), &Device::Cpu)?;
            // LayerNorm's definition in f64: (v − mean) / sqrt(variance + eps) · weight + bias per row.
            let sum: Vec<f64> = (&x + &residual)?
                .flatten_all()?
                .to_vec1::<f32>()?
                .iter()
                .map(|&v| v as f64)
                .collect();
            let mut want = Vec::new();
            for row in sum.chunks_exact(h) {
                let mean = row.iter().sum::<f64>() / h as f64;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / h as f64;
                let inv = 1.0 / (var + norm.eps as f64).sqrt();
                want.extend(
                    row.iter().enumerate().map(|(t, v)| {
                        (v - mean) * inv * norm.weight[t] as f64 + norm.bias[t] as f64
                    }),
                );
            }
            x.inplace_op2(&residual, &AddNorm(&norm))?;
            let got = x.flatten_all()?.to_vec1::<f32>()?;
            let worst = got
                .iter()
                .zip(&want)
                .fold(0f64, |m, (g, w)| m.max((*g as f64 - w).abs()));
            assert!(
                worst < 2e-4,
                "{rows}×{h} (offset {offset}): largest difference {worst}"
            );
        }
        Ok(())
    }

    /// The residual of fewer rows repeats (the embeddings' positions), and the op without one only normalises.
    #[test]
    fn repeats_a_shorter_residual_and_normalises_alone() -> Result<()> {
        let mut seed = 11u64;
        let h = 32;
        let norm = Norm {
            weight: (0..h).map(|_| lcg(&mut seed) + 1.0).collect(),
            bias: (0..h).map(|_| lcg(&mut seed)).collect(),
            eps: 1e-6,
        };
        let x: Vec<f32> = (0..6 * h).map(|_| lcg(&mut seed) * 3.0).collect();
        let positions: Vec<f32> = (0..2 * h).map(|_| lcg(&mut seed)).collect();
        let mut want = x.clone();
        for (i, v) in want.iter_mut().enumerate() {
            *v += positions[i % (2 * h)];
        }
        norm.apply(&mut want, None);
        let got = Tensor::from_vec(x, (6, h), &Device::Cpu)?;
        got.inplace_op2(
            &Tensor::from_vec(positions, (2, h), &Device::Cpu)?,
            &AddNorm(&norm),
        )?;
        assert_eq!(got.flatten_all()?.to_vec1::<f32>()?, want);
        // Alone, with unit weight and zero bias: every row comes out with mean 0 and variance 1.
        let unit = Norm {
            weight: vec![1.0; h],
            bias: vec![0.0; h],
            eps: 0.0,
        };
        let mut alone: Vec<f32> = (0..3 * h).map(|_| lcg(&mut seed) * 5.0 + 2.0).collect();
        unit.apply(&mut alone, None);
        for row in alone.chunks_exact(h) {
            let mean = row.iter().sum::<f32>() / h as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
            assert!(
                mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
                "mean {mean}, variance {var}"
            );
        }
        // A residual that does not fit is refused, not read out of bounds.
        let bad = Tensor::from_vec(vec![0f32; 3 * h], (3, h), &Device::Cpu)?;
        assert!(
            Tensor::from_vec(vec![0f32; 4 * h], (4, h), &Device::Cpu)?
                .inplace_op2(&bad, &AddNorm(&norm))
                .is_err()
        );
        Ok(())
    }
}
