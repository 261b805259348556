#!/usr/bin/env python3
"""all-MiniLM-L6-v2 in numpy, for studies that need what the shipped embedder does not return: the vector of each
word piece (the encoder's last layer before mean pooling). Checked against ../shared/reference on import by
`python3 bench/minilm_tokens.py` (the pooled vectors must match sentence-transformers' to 1e-4).

Only numpy, scipy, tokenizers and safetensors (PyPI); the weights are models/all-MiniLM-L6-v2 (models/fetch).
"""
import json, sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from scipy.special import erf
from tokenizers import Tokenizer

root = Path(__file__).resolve().parent.parent
MAX_PIECES = 256


class MiniLM:
    def __init__(self, model_dir=root / "models/all-MiniLM-L6-v2"):
        w = load_file(str(Path(model_dir) / "model.safetensors"))
        self.w = {k.removeprefix("bert.").removeprefix("model."): v.astype(np.float32) for k, v in w.items()}
        self.tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(MAX_PIECES)
        cfg = json.load(open(Path(model_dir) / "config.json"))
        self.layers, self.heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]

    def _ln(self, x, name):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _lin(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def tokens(self, text):
        """(pieces, vectors): each word piece with its last-layer vector, [CLS] and [SEP] included."""
        enc = self.tok.encode(text)
        ids = np.array(enc.ids)
        n = len(ids)
        x = (self.w["embeddings.word_embeddings.weight"][ids] + self.w["embeddings.position_embeddings.weight"][:n]
             + self.w["embeddings.token_type_embeddings.weight"][0])
        x = self._ln(x, "embeddings.LayerNorm")
        d = x.shape[1] // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = self._lin(x, p + "attention.self.query").reshape(n, self.heads, d).transpose(1, 0, 2)
            k = self._lin(x, p + "attention.self.key").reshape(n, self.heads, d).transpose(1, 0, 2)
            v = self._lin(x, p + "attention.self.value").reshape(n, self.heads, d).transpose(1, 0, 2)
            a = q @ k.transpose(0, 2, 1) / np.sqrt(d)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(1, 0, 2).reshape(n, -1)
            x = self._ln(self._lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = self._lin(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
            x = self._ln(self._lin(h, p + "output.dense") + x, p + "output.LayerNorm")
        return enc.tokens, x

    def sentence(self, text):
        """The pooled, normalised vector sentence-transformers returns."""
        _, x = self.tokens(text)
        v = x.mean(0)
        return v / np.linalg.norm(v)


if __name__ == "__main__":
    m = MiniLM()
    texts = [json.loads(l)["text"] for l in open(root.parent / "shared/reference/texts.jsonl")]
    ref = np.fromfile(root.parent / "shared/reference/minilm-vectors.f32", dtype="<f4").reshape(-1, 384)
    worst = 0.0
    for i in range(0, len(texts), 50):
        worst = max(worst, float(np.abs(m.sentence(texts[i]) - ref[i]).max()))
    print(f"largest difference from sentence-transformers over {len(range(0, len(texts), 50))} texts: {worst:.2e}")
    sys.exit(0 if worst < 1e-4 else 1)
