"""Emulates integer dense layers in all-MiniLM-L6-v2 with sentence-transformers and prints the worst cosine of its
vectors to the reference ones: how many bits the activations and weights of a kernel can drop to and keep the
0.999 parity floor, before writing the kernel.

Activations are rounded per row and slice of 256 inputs (as ghola's 16-bit kernel does), weights per output
column, to ±(2^(bits-1) - 1) steps of the slice's or column's largest magnitude.

    PYTHON bench/embed/quantized_parity.py --abits 8 --wbits 8 \
        --model-dir models/all-MiniLM-L6-v2 --texts ../shared/reference/texts.jsonl \
        --reference ../shared/reference/minilm-vectors.f32

PYTHON is an interpreter with torch and sentence-transformers (docs/embedding.md says which versions).
"""

import argparse
import json
import struct

import torch
from sentence_transformers import SentenceTransformer

SLICE = 256


def rounded(x, levels):
    """x rounded to `levels` steps of its largest magnitude along the last axis (zero rows stay zero)."""
    scale = x.abs().amax(dim=-1, keepdim=True) / levels
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(x / scale).clamp(-levels, levels) * scale


def quantize(linear, a_levels, w_levels):
    linear.weight.data = rounded(linear.weight.data, w_levels)
    forward = linear.forward

    def rounded_forward(x):
        k = x.shape[-1]
        rows = x.reshape(-1, k)
        padded = torch.nn.functional.pad(rows, (0, -k % SLICE))
        slices = rounded(padded.reshape(rows.shape[0], -1, SLICE), a_levels)
        return forward(slices.reshape(rows.shape[0], -1)[:, :k].reshape(x.shape))

    linear.forward = rounded_forward


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--abits", type=int, required=True)
    p.add_argument("--wbits", type=int, required=True)
    p.add_argument("--model-dir", required=True)
    p.add_argument("--texts", required=True)
    p.add_argument("--reference", required=True)
    a = p.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    model = SentenceTransformer(a.model_dir, device="cpu")
    model.max_seq_length = 256
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            quantize(module, 2 ** (a.abits - 1) - 1, 2 ** (a.wbits - 1) - 1)
    texts = [json.loads(line)["text"] for line in open(a.texts)]
    got = torch.tensor(model.encode(texts, batch_size=32, convert_to_numpy=True))
    raw = open(a.reference, "rb").read()
    want = torch.tensor(struct.unpack("<%df" % (len(raw) // 4), raw)).reshape(-1, got.shape[1])
    cos = sorted(((got * want).sum(1) / (got.norm(dim=1) * want.norm(dim=1))).tolist())
    print(
        f"activations {a.abits} bits, weights {a.wbits} bits: worst cosine {cos[0]:.6f}, "
        f"1st percentile {cos[len(cos) // 100]:.6f}, mean {sum(cos) / len(cos):.6f} ({len(cos)} texts)"
    )


if __name__ == "__main__":
    main()
