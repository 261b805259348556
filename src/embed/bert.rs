//! The BERT encoder of all-MiniLM-L6-v2 as plain candle ops, read like the paper (candle-examples' habit):
//! embeddings, six encoder layers (self-attention, feed-forward, post-layer-norms), then mean pooling.
//!
//! Three load-time rewrites keep the forward pass lean without changing its arithmetic meaning: the query,
//! key and value projections are fused into one matrix product; the attention scale 1/sqrt(d) is folded into
//! the query weights; position and token-type embeddings are pre-added (every input has token type 0).

use super::amx::PackedWeight;
use super::attention::SelfAttention;
use super::gelu::Gelu;
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

/// A dense layer with its weight stored transposed (`[in, out]`, contiguous) for a plain row-major product,
/// and packed for AMX tiles when this CPU has them.
struct Linear {
    weight_t: Tensor,
    bias: Tensor,
    amx: Option<AmxLinear>,
}

impl Linear {
    fn from_parts(weight: Tensor, bias: Tensor) -> Result<Self> {
        let weight_t = weight.t()?.contiguous()?;
        let amx = if super::amx::available() {
            let (k, n) = weight_t.dims2()?;
            PackedWeight::pack(&weight_t.flatten_all()?.to_vec1::<f32>()?, k, n)
                .map(|weight| bias.to_vec1::<f32>().map(|bias| AmxLinear { weight, bias }))
        } else {
            None
        }
        .transpose()?;
        Ok(Self {
            weight_t,
            bias,
            amx,
        })
    }

    fn load(vb: VarBuilder, dim_in: usize, dim_out: usize) -> Result<Self> {
        let weight = vb.get((dim_out, dim_in), "weight")?;
        let bias = vb.get(dim_out, "bias")?;
        Self::from_parts(weight, bias)
    }

    /// `x` is `[n, in]`; `bf16` runs the product on AMX tiles where the layer was packed for them.
    fn forward(&self, x: &Tensor, bf16: bool) -> Result<Tensor> {
        match &self.amx {
            Some(amx) if bf16 => x.apply_op1_no_bwd(amx),
            _ => x.matmul(&self.weight_t)?.broadcast_add(&self.bias),
        }
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

/// A dense layer's weight packed for AMX tiles and its bias, as a candle op (`[m, in]` → `[m, out]`).
struct AmxLinear {
    weight: PackedWeight,
    bias: Vec<f32>,
}

impl CustomOp1 for AmxLinear {
    fn name(&self) -> &'static str {
        "amx-bf16-linear"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let input = contiguous_f32(storage, layout, "amx linear")?;
        let (m, k) = layout.shape().dims2()?;
        if k != self.weight.inputs() {
            candle_core::bail!(
                "amx linear: {k} inputs, the layer has {}",
                self.weight.inputs()
            );
        }
        let n = self.weight.outputs();
        let mut out = vec![0f32; m * n];
        self.weight.matmul_bias(input, &self.bias, &mut out);
        Ok((CpuStorage::F32(out), Shape::from((m, n))))
    }
}

struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f32,
}

impl LayerNorm {
    fn load(vb: VarBuilder, dim: usize, eps: f64) -> Result<Self> {
        Ok(Self {
            weight: vb.get(dim, "weight")?,
            bias: vb.get(dim, "bias")?,
            eps: eps as f32,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        candle_nn::ops::layer_norm(x, &self.weight, &self.bias, self.eps)
    }
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    ffn_in: Linear,
    ffn_out: Linear,
    ffn_norm: LayerNorm,
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
            attn_norm: LayerNorm::load(vb.pp("attention.output.LayerNorm"), h, c.layer_norm_eps)?,
            ffn_in: Linear::load(vb.pp("intermediate.dense"), h, c.intermediate_size)?,
            ffn_out: Linear::load(vb.pp("output.dense"), c.intermediate_size, h)?,
            ffn_norm: LayerNorm::load(vb.pp("output.LayerNorm"), h, c.layer_norm_eps)?,
        })
    }

    /// `x` is `[b*l, h]`: `b` sequences padded to `l` positions, `lens` real tokens in each.
    fn forward(
        &self,
        x: &Tensor,
        lens: &[usize],
        l: usize,
        heads: usize,
        bf16: bool,
    ) -> Result<Tensor> {
        let ctx = self
            .qkv
            .forward(x, bf16)?
            .apply_op1_no_bwd(&SelfAttention {
                lens,
                seq_len: l,
                heads,
            })?;
        let x = self
            .attn_norm
            .forward(&(self.attn_out.forward(&ctx, bf16)? + x)?)?;
        let inner = self.ffn_in.forward(&x, bf16)?;
        inner.inplace_op1(&Gelu)?;
        self.ffn_norm
            .forward(&(self.ffn_out.forward(&inner, bf16)? + x)?)
    }
}

/// The encoder with its weights loaded.
pub struct Bert {
    word_embeddings: Tensor,
    /// Position embeddings plus the token-type-0 embedding, `[max_positions, h]`.
    position_and_type: Tensor,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    device: Device,
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
            embed_norm: LayerNorm::load(emb.pp("LayerNorm"), h, c.layer_norm_eps)?,
            layers,
            heads: c.num_attention_heads,
            hidden: h,
            device: vb.device().clone(),
        })
    }

    /// Embeds one batch of token sequences (each already with `[CLS]`/`[SEP]`), returning one mean-pooled,
    /// L2-normalised vector per sequence. Sequences are right-padded to the longest; padding is masked out of
    /// attention and of the mean. `bf16` runs the dense layers on AMX tiles where they were packed for them.
    pub fn embed_batch(&self, seqs: &[&[u32]], bf16: bool) -> Result<Vec<Vec<f32>>> {
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
        let x = self
            .word_embeddings
            .index_select(&ids, 0)?
            .reshape((b, l, self.hidden))?;
        let x = x
            .broadcast_add(&self.position_and_type.narrow(0, 0, l)?)?
            .reshape((b * l, self.hidden))?;
        let mut x = self.embed_norm.forward(&x)?;
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
