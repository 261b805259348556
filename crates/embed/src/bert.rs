//! The BERT encoder of all-MiniLM-L6-v2 as plain candle ops, read like the paper (candle-examples' habit):
//! embeddings, six encoder layers (self-attention, feed-forward, post-layer-norms), then mean pooling.
//!
//! Three load-time rewrites keep the forward pass lean without changing its arithmetic meaning: the query,
//! key and value projections are fused into one matrix product; the attention scale 1/sqrt(d) is folded into
//! the query weights; position and token-type embeddings are pre-added (every input has token type 0).

use super::amx::PackedWeight;
use super::attention::SelfAttention;
use super::dense::{Layout as DenseLayout, Operands, Packed};
use super::gelu::Gelu;
use super::kernel::Kernel;
use super::norm::{AddNorm, Norm};
use candle_core::{CpuStorage, CustomOp1, DType, Device, IndexOp, Layout, Result, Shape, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

/// The fields of the model's `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub layer_norm_eps: f64,
    pub hidden_act: String,
}

/// A dense layer with its weight stored transposed (`[in, out]`, contiguous) for candle's product, and packed
/// for the kernel in use when that is not candle's.
struct Linear {
    weight_t: Tensor,
    bias: Tensor,
    packed: Option<PackedLinear>,
}

impl Linear {
    fn from_parts(weight: Tensor, bias: Tensor) -> Result<Self> {
        Ok(Self {
            weight_t: weight.t()?.contiguous()?,
            bias,
            packed: None,
        })
    }

    fn load(vb: VarBuilder, dim_in: usize, dim_out: usize) -> Result<Self> {
        let weight = vb.get((dim_out, dim_in), "weight")?;
        let bias = vb.get(dim_out, "bias")?;
        Self::from_parts(weight, bias)
    }

    /// Packs the weight for `kernel` (candle's product needs none; a shape a kernel cannot hold stays with
    /// candle's product too).
    fn pack(&mut self, kernel: Kernel) -> Result<()> {
        self.packed = None;
        if kernel == Kernel::Portable || !kernel.runs_here() {
            return Ok(());
        }
        let (k, n) = self.weight_t.dims2()?;
        let w_t = self.weight_t.flatten_all()?.to_vec1::<f32>()?;
        let weights =
            match kernel {
                Kernel::AmxBf16 => PackedWeight::pack(&w_t, k, n).map(Weights::Amx),
                Kernel::Avx512Bf16 => Packed::pack(&w_t, k, n, DenseLayout::Bf16Pairs)
                    .map(|w| Weights::Dense(kernel, w)),
                Kernel::Avx512 => Packed::pack(&w_t, k, n, DenseLayout::F32 { nr: 32 })
                    .map(|w| Weights::Dense(kernel, w)),
                Kernel::Avx2I16 => Packed::pack(&w_t, k, n, DenseLayout::I16Pairs)
                    .map(|w| Weights::Dense(kernel, w)),
                Kernel::Avx2 => Packed::pack(&w_t, k, n, DenseLayout::F32 { nr: 16 })
                    .map(|w| Weights::Dense(kernel, w)),
                Kernel::Portable => None,
            };
        if let Some(weights) = weights {
            self.packed = Some(PackedLinear {
                weights,
                bias: self.bias.to_vec1::<f32>()?,
            });
        }
        Ok(())
    }

    /// `x` is `[n, in]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match &self.packed {
            Some(p) => x.apply_op1_no_bwd(p),
            None => self.reference(x),
        }
    }

    /// candle's f32 product: the reference the packed kernels are checked against.
    fn reference(&self, x: &Tensor) -> Result<Tensor> {
        x.matmul(&self.weight_t)?.broadcast_add(&self.bias)
    }
}

/// The f32 values a custom op reads: its input must be f32 and contiguous (every tensor the encoder hands its
/// ops is).
pub(super) fn contiguous_f32<'a>(
    storage: &'a CpuStorage,
    layout: &Layout,
    op: &str,
) -> Result<&'a [f32]> {
    let CpuStorage::F32(data) = storage else {
        candle_core::bail!("{op}: only f32 is supported");
    };
    let Some((start, end)) = layout.contiguous_offsets() else {
        candle_core::bail!("{op}: input must be contiguous");
    };
    Ok(&data[start..end])
}

/// [`contiguous_f32`] for an op that writes in place.
pub(super) fn contiguous_f32_mut<'a>(
    storage: &'a mut CpuStorage,
    layout: &Layout,
    op: &str,
) -> Result<&'a mut [f32]> {
    let CpuStorage::F32(data) = storage else {
        candle_core::bail!("{op}: only f32 is supported");
    };
    let Some((start, end)) = layout.contiguous_offsets() else {
        candle_core::bail!("{op}: input must be contiguous");
    };
    Ok(&mut data[start..end])
}

/// A dense layer's weight packed for one kernel, and its bias, as a candle op (`[m, in]` → `[m, out]`).
struct PackedLinear {
    weights: Weights,
    bias: Vec<f32>,
}

/// A weight in the layout of the kernel that reads it (packed only for a kernel that runs here).
enum Weights {
    Amx(PackedWeight),
    Dense(Kernel, Packed),
}

impl CustomOp1 for PackedLinear {
    fn name(&self) -> &'static str {
        "packed-linear"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let input = contiguous_f32(storage, layout, "packed linear")?;
        let (m, k) = layout.shape().dims2()?;
        let (inputs, n) = match &self.weights {
            Weights::Amx(w) => (w.inputs(), w.outputs()),
            Weights::Dense(_, w) => (w.inputs(), w.outputs()),
        };
        if k != inputs {
            candle_core::bail!("packed linear: {k} inputs, the layer has {inputs}");
        }
        let out = match &self.weights {
            Weights::Amx(w) => {
                let mut out = vec![0f32; m * n];
                w.matmul_bias(input, &self.bias, &mut out);
                out
            }
            Weights::Dense(kernel, w) => {
                let mut out = Vec::with_capacity(m * n);
                let Some(o) =
                    Operands::new(w, input, &self.bias, &mut out.spare_capacity_mut()[..m * n])
                else {
                    candle_core::bail!("packed linear: operands do not fit a {k}x{n} layer");
                };
                dense_product(*kernel, w, o);
                // SAFETY: every kernel writes all m·n outputs (`Operands`).
                unsafe { out.set_len(m * n) };
                out
            }
        };
        Ok((CpuStorage::F32(out), Shape::from((m, n))))
    }
}

/// Runs a packed product on its kernel (weights are packed only for a kernel that runs here).
fn dense_product(kernel: Kernel, w: &Packed, o: Operands) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `Linear::pack` packs only for a kernel whose instructions this CPU has (`Kernel::runs_here`).
    unsafe {
        match kernel {
            Kernel::Avx2 => super::dense::x86::f32_avx2(w, o),
            Kernel::Avx2I16 => super::dense::x86::i16_avx2(w, o),
            Kernel::Avx512 => super::dense::x86::f32_avx512(w, o),
            Kernel::Avx512Bf16 => super::dense::x86::bf16_avx512(w, o),
            Kernel::AmxBf16 | Kernel::Portable => unreachable!("{kernel} has no dense packing"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (w, o);
        unreachable!("{kernel} is not packed off x86-64");
    }
}

/// Loads a layer normalisation's weight and bias (`dim` each).
fn load_norm(vb: VarBuilder, dim: usize, eps: f64) -> Result<Norm> {
    Ok(Norm {
        weight: vb.get(dim, "weight")?.to_vec1::<f32>()?,
        bias: vb.get(dim, "bias")?.to_vec1::<f32>()?,
        eps: eps as f32,
    })
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    ffn_in: Linear,
    ffn_out: Linear,
    ffn_norm: Norm,
}

impl Layer {
    fn load(vb: VarBuilder, c: &BertConfig) -> Result<Self> {
        let h = c.hidden_size;
        let scale = 1.0 / ((h / c.num_attention_heads) as f64).sqrt();
        let att = vb.pp("attention.self");
        let q_w = (att.get((h, h), "query.weight")? * scale)?;
        let q_b = (att.get(h, "query.bias")? * scale)?;
        let w = Tensor::cat(
            &[
                q_w,
                att.get((h, h), "key.weight")?,
                att.get((h, h), "value.weight")?,
            ],
            0,
        )?;
        let b = Tensor::cat(
            &[q_b, att.get(h, "key.bias")?, att.get(h, "value.bias")?],
            0,
        )?;
        Ok(Self {
            qkv: Linear::from_parts(w, b)?,
            attn_out: Linear::load(vb.pp("attention.output.dense"), h, h)?,
            attn_norm: load_norm(vb.pp("attention.output.LayerNorm"), h, c.layer_norm_eps)?,
            ffn_in: Linear::load(vb.pp("intermediate.dense"), h, c.intermediate_size)?,
            ffn_out: Linear::load(vb.pp("output.dense"), c.intermediate_size, h)?,
            ffn_norm: load_norm(vb.pp("output.LayerNorm"), h, c.layer_norm_eps)?,
        })
    }

    /// `x` is `[b*l, h]`: `b` sequences padded to `l` positions, `lens` real tokens in each; `bf16` asks for the
    /// attention's bf16 dot products.
    fn forward(
        &self,
        x: &Tensor,
        lens: &[usize],
        l: usize,
        heads: usize,
        bf16: bool,
    ) -> Result<Tensor> {
        let ctx = self.qkv.forward(x)?.apply_op1_no_bwd(&SelfAttention {
            lens,
            seq_len: l,
            heads,
            bf16,
        })?;
        // Each sublayer's output is a new tensor: the residual sum and its normalisation go into it.
        let attended = self.attn_out.forward(&ctx)?;
        attended.inplace_op2(x, &AddNorm(&self.attn_norm))?;
        let inner = self.ffn_in.forward(&attended)?;
        inner.inplace_op1(&Gelu)?;
        let out = self.ffn_out.forward(&inner)?;
        out.inplace_op2(&attended, &AddNorm(&self.ffn_norm))?;
        Ok(out)
    }
}

/// The encoder with its weights loaded.
pub struct Bert {
    word_embeddings: Tensor,
    /// Position embeddings plus the token-type-0 embedding, `[max_positions, h]`.
    position_and_type: Tensor,
    embed_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    device: Device,
    kernel: Kernel,
}

/// Why a kernel failed its check against candle's product at load.
#[derive(Debug, thiserror::Error)]
enum KernelCheck {
    #[error("the product failed: {0}")]
    Failed(candle_core::Error),
    #[error("largest difference {worst} against outputs up to {scale}")]
    Differs { worst: f32, scale: f32 },
}

impl Bert {
    /// Loads the weights (the safetensors file is memory-mapped and each tensor read once).
    pub fn load(vb: VarBuilder, c: &BertConfig) -> Result<Self> {
        if c.hidden_act != "gelu" {
            candle_core::bail!(
                "unsupported hidden_act {:?} (this encoder implements exact GELU)",
                c.hidden_act
            );
        }
        let h = c.hidden_size;
        if c.num_attention_heads == 0
            || !h.is_multiple_of(c.num_attention_heads)
            || !super::attention::supports_head_size(h / c.num_attention_heads)
        {
            candle_core::bail!(
                "unsupported attention layout: {h} dimensions in {} heads (heads of 32 or 64 are supported)",
                c.num_attention_heads
            );
        }
        let emb = vb.pp("embeddings");
        let position = emb.get((c.max_position_embeddings, h), "position_embeddings.weight")?;
        let token_type = emb.get((2, h), "token_type_embeddings.weight")?.i(0)?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), c))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            word_embeddings: emb.get((c.vocab_size, h), "word_embeddings.weight")?,
            position_and_type: position.broadcast_add(&token_type)?,
            embed_norm: load_norm(emb.pp("LayerNorm"), h, c.layer_norm_eps)?,
            layers,
            heads: c.num_attention_heads,
            hidden: h,
            device: vb.device().clone(),
            kernel: Kernel::Portable,
        })
    }

    /// Packs the dense layers for `kernel` and checks it against candle's product on the first layer; a kernel
    /// that disagrees (beyond bf16 rounding for the bf16 ones) gives way to the next in line, with a warning.
    /// Returns the kernel in effect.
    pub fn use_kernel(&mut self, mut kernel: Kernel) -> Result<Kernel> {
        use rayon::prelude::*;
        loop {
            let started = std::time::Instant::now();
            // Every layer's four products, packed on all cores (a third of a second on one, at every start).
            self.layers
                .iter_mut()
                .flat_map(|l| [&mut l.qkv, &mut l.attn_out, &mut l.ffn_in, &mut l.ffn_out])
                .collect::<Vec<_>>()
                .into_par_iter()
                .try_for_each(|linear| linear.pack(kernel))?;
            tracing::debug!("weights packed for {kernel} in {:?}", started.elapsed());
            self.kernel = kernel;
            if kernel == Kernel::Portable {
                return Ok(kernel);
            }
            match self.check_kernel() {
                Ok(()) => return Ok(kernel),
                Err(why) => {
                    let next = kernel.next();
                    tracing::warn!(
                        "embedding kernel {kernel} failed its check ({why}); using {next}"
                    );
                    kernel = next;
                }
            }
        }
    }

    /// The kernel the dense layers run on.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The first layer's widest product on a fixed pseudo-random input, kernel against candle's product: the
    /// largest difference must stay within the kernel's rounding (relative to the largest output).
    fn check_kernel(&self) -> std::result::Result<(), KernelCheck> {
        let Some(layer) = self.layers.first() else {
            return Ok(());
        };
        let run = || -> Result<(f32, f32)> {
            let rows = 29; // every remainder of the row groups, and more than one group
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            let x: Vec<f32> = (0..rows * self.hidden)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((seed >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
                })
                .collect();
            let x = Tensor::from_vec(x, (rows, self.hidden), &self.device)?;
            let got = layer.qkv.forward(&x)?.flatten_all()?.to_vec1::<f32>()?;
            let want = layer.qkv.reference(&x)?.flatten_all()?.to_vec1::<f32>()?;
            let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
            let worst = got.iter().zip(&want).fold(0f32, |m, (g, w)| {
                if g.is_finite() {
                    m.max((g - w).abs())
                } else {
                    f32::INFINITY
                }
            });
            Ok((worst, scale))
        };
        let (worst, scale) = run().map_err(KernelCheck::Failed)?;
        let tolerance = if self.kernel.is_f32() { 1e-4 } else { 2e-2 };
        if worst <= tolerance * scale.max(1.0) {
            Ok(())
        } else {
            Err(KernelCheck::Differs { worst, scale })
        }
    }

    /// Embeds one batch of token sequences (each already with `[CLS]`/`[SEP]`), returning one mean-pooled,
    /// L2-normalised vector per sequence. Sequences are right-padded to the longest; padding is masked out of
    /// attention and of the mean. The dense layers run on the kernel chosen by [`Bert::use_kernel`].
    pub fn embed_batch(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let b = seqs.len();
        let l = seqs.iter().map(|s| s.len()).max().unwrap_or(0);
        if b == 0 || l == 0 {
            return Ok(vec![Vec::new(); b]);
        }
        let mut ids = vec![0u32; b * l];
        for (i, s) in seqs.iter().enumerate() {
            ids[i * l..i * l + s.len()].copy_from_slice(s);
        }
        let lens: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        let ids = Tensor::from_vec(ids, b * l, &self.device)?;
        // `[b*l, h]`, a new tensor: each sequence's positions (the first `l` rows, repeated) are added into it.
        let mut x = self.word_embeddings.index_select(&ids, 0)?;
        x.inplace_op2(
            &self.position_and_type.narrow(0, 0, l)?,
            &AddNorm(&self.embed_norm),
        )?;
        // The attention follows the dense layers into bf16 on `vdpbf16ps` (not on AMX tiles, whose CPUs were
        // measured with f32 attention).
        let bf16 = self.kernel == Kernel::Avx512Bf16;
        for layer in &self.layers {
            x = layer.forward(&x, &lens, l, self.heads, bf16)?;
        }
        let flat = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        Ok(seqs
            .iter()
            .enumerate()
            .map(|(i, s)| mean_pool_normalised(&flat[i * l * self.hidden..], s.len(), self.hidden))
            .collect())
    }
}

/// sentence-transformers' pooling: the mean of the first `n` token vectors, then L2 normalisation.
fn mean_pool_normalised(tokens: &[f32], n: usize, h: usize) -> Vec<f32> {
    let mut mean = vec![0f32; h];
    for t in tokens[..n * h].chunks_exact(h) {
        for (m, v) in mean.iter_mut().zip(t) {
            *m += v;
        }
    }
    let inv = 1.0 / n.max(1) as f32;
    mean.iter_mut().for_each(|m| *m *= inv);
    let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    mean.iter_mut().for_each(|m| *m /= norm);
    mean
}
