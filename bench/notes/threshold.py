#!/usr/bin/env python3
"""Chooses merge::DUPLICATE_COSINE: embeds both sides of every pair in pairs.json with `ghola embed` (the same
model the merge uses), prints the cosine distribution per label and the threshold with the best F1 for
'same' (ties: the higher threshold, i.e. fewer notes dropped wrongly).

    python3 bench/notes/threshold.py [path/to/ghola]
"""
import json, math, subprocess, sys, os

here = os.path.dirname(os.path.abspath(__file__))
ghola = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../target/release/ghola")
pairs = json.load(open(os.path.join(here, "pairs.json")))["pairs"]
texts = []
for p in pairs:
    texts += [p["a"], p["b"]]
out = subprocess.run([ghola, "embed"], input="".join(json.dumps({"text": t}) + "\n" for t in texts),
                     capture_output=True, text=True, check=True).stdout
vecs = [json.loads(l) for l in out.splitlines() if l.strip()]

def cos(a, b):
    d = sum(x * y for x, y in zip(a, b))
    return d / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))

scored = [(cos(vecs[2 * k], vecs[2 * k + 1]), p["label"]) for k, p in enumerate(pairs)]
for label in ("same", "different"):
    s = sorted(c for c, l in scored if l == label)
    print(f"{label:9}: n={len(s)} min {s[0]:.3f} median {s[len(s)//2]:.3f} max {s[-1]:.3f}")
best = None
for t in sorted({round(c, 3) for c, _ in scored}):
    tp = sum(1 for c, l in scored if c >= t and l == "same")
    fp = sum(1 for c, l in scored if c >= t and l == "different")
    fn = sum(1 for c, l in scored if c < t and l == "same")
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    if best is None or f1 >= best[0]:
        best = (f1, t, tp, fp, fn)
f1, t, tp, fp, fn = best
print(f"best-F1 threshold {t:.3f}: F1 {f1:.3f} (duplicates caught {tp}/{tp+fn}, distinct notes dropped {fp})")
# A dropped distinct note is lost knowledge, a kept duplicate only noise: the rule is the threshold just above the
# highest 'different' cosine, rounded up to 0.05.
top_diff = max(c for c, l in scored if l == "different")
safe = math.ceil(top_diff * 20) / 20
caught = sum(1 for c, l in scored if c >= safe and l == "same")
print(f"no distinct note dropped: threshold {safe:.2f} catches {caught}/{sum(1 for _, l in scored if l == 'same')} duplicates")
for thr in (0.75, 0.80, 0.83, 0.85, 0.90):
    tp = sum(1 for c, l in scored if c >= thr and l == "same")
    fp = sum(1 for c, l in scored if c >= thr and l == "different")
    print(f"  at {thr:.2f}: duplicates caught {tp}/{sum(1 for _, l in scored if l == 'same')}, distinct notes dropped {fp}")
