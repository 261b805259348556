"""sentence-transformers' side of `ghola bench embed --sentence-transformers PYTHON`.

Usage: PYTHON st_side.py MODEL_DIR TEXTS_JSONL ROUNDS VECTORS_OUT
Embeds every text of TEXTS_JSONL as the reference vectors were made (max_seq_length 256, mean pooling,
L2-normalised, batch 32, all cores), best of ROUNDS; writes the vectors (little-endian f32, one row per text)
to VECTORS_OUT and one JSON line of timings to stdout.
"""
import json
import sys
import time

t0 = time.time()
import numpy as np  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

model_dir, texts_path, rounds, out_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
texts = [json.loads(line)["text"] for line in open(texts_path, encoding="utf-8") if line.strip()]
model = SentenceTransformer(model_dir, device="cpu")
model.max_seq_length = 256
t1 = time.time()
best = float("inf")
vectors = None
for _ in range(max(rounds, 1)):
    t = time.time()
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
    best = min(best, time.time() - t)
np.asarray(vectors, dtype="<f4").tofile(out_path)
print(json.dumps({
    "import_and_load_s": t1 - t0,
    "embed_s": best,
    "threads": torch.get_num_threads(),
    "torch": torch.__version__,
    "sentence_transformers": __import__("sentence_transformers").__version__,
}))
