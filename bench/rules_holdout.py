#!/usr/bin/env python3
"""What each ranking rule of `search/prior/` is worth on questions it was not chosen on.

For every rule, `ghola search` runs with that rule turned off (`--without-rule NAME`), and the ranking is scored
against all rules on, on two frozen splits of each dev set:
  - LoCoMo dev: conv-26, -30, -41 (where the rules were tuned) and conv-42, -43 (held back);
  - the coding set (bench/coding/questions.json): odd-numbered questions and even-numbered ones.
A rule is kept only if turning it off costs MRR@10 on the held-back LoCoMo part or on both coding halves (it was
chosen on all of the coding questions, so each half is a check on the other).

    cp -r ../shared/bench/locomo-dev /tmp/locomo-dev && HOME=/tmp/locomo-dev target/release/ghola index
    python3 bench/rules_holdout.py /tmp/locomo-dev [--corpus ../shared/corpus] [--work /tmp/ghola-coding]
"""
import argparse, json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

here = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("locomo")
ap.add_argument("--ghola", default=str(here.parent / "target/release/ghola"))
ap.add_argument("--corpus", default=str(here.parent.parent / "shared/corpus"))
ap.add_argument("--work", default="/tmp/ghola-coding")
ap.add_argument("--rules", default="question,announcement,edit-echo,bare-tool-call,request,agent-not-main-thread,"
                "outside-named-time,untimed-for-when,uncounted-for-how-many,reasonless-for-failure,"
                "listing-for-how-or-why,addresses-the-named,said-by-the-other,parties-unnamed,session-evidence")
ap.add_argument("--config", action="append", default=[],
                help="instead of the rules: compare the defaults with these search flags, e.g. "
                     "--config='--relative-floor 0.4' (a default is kept when no other setting beats it on the "
                     "held-back parts)")
a = ap.parse_args()

locomo = Path(a.locomo).resolve()
lq = json.load(open(locomo / "gold.json"))
cq = json.load(open(here / "coding/questions.json"))["questions"]
env = dict(os.environ, HOME=str(locomo))
env.pop("CLAUDE_CONFIG_DIR", None)
for folder in sorted({q["corpus"] for q in cq}):
    subprocess.run([a.ghola, "--claude-dir", f"{a.corpus}/{folder}", "--index-dir", f"{a.work}/{folder}", "index"],
                   capture_output=True, check=True)


def ranked(cmd, e=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=e)
    if r.returncode != 0:
        sys.exit(f"ghola search failed: {r.stderr.strip()}")
    return [h["matched_message"]["uuid"] for h in json.loads(r.stdout)["results"]]


def rr(uuids, gold):
    for k, u in enumerate(uuids[:10]):
        if u in gold:
            return 1 / (k + 1)
    return 0.0


def score(off, flags=None):
    flags = flags if flags is not None else [f"--without-rule={r}" for r in off]
    common = ["--json", "--no-update", "--limit", "10", "--context", "0", *flags]

    def one_l(q):
        return q["conversation"], rr(ranked([a.ghola, "search", q["question"], "--project", q["cwd"], *common], env),
                                     set(q["gold_uuids"]))

    def one_c(q):
        base = [a.ghola, "--claude-dir", f"{a.corpus}/{q['corpus']}", "--index-dir", f"{a.work}/{q['corpus']}"]
        return int(q["id"][1:]) % 2, rr(ranked(base + ["search", q["question"], "--project", q["project"], *common]),
                                        set(q["gold"]))

    with ThreadPoolExecutor(2) as pool:
        lr = list(pool.map(one_l, lq))
        cr = list(pool.map(one_c, cq))
    mean = lambda xs: sum(xs) / max(1, len(xs))
    tune = {"conv-26", "conv-30", "conv-41"}
    return {
        "locomo_tune": mean([r for c, r in lr if c in tune]),
        "locomo_held": mean([r for c, r in lr if c not in tune]),
        "coding_odd": mean([r for p, r in cr if p == 1]),
        "coding_even": mean([r for p, r in cr if p == 0]),
    }


cols = ["locomo_tune", "locomo_held", "coding_odd", "coding_even"]
base = score([])
if a.config:
    print("MRR@10 (--context 0), the defaults and each setting; the change from the defaults in parentheses")
    print("| setting | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    print("| (defaults) | " + " | ".join(f"{base[c]:.3f}" for c in cols) + " |")
    for cfg in a.config:
        s = score([], cfg.split())
        print(f"| `{cfg}` | " + " | ".join(f"{s[c]:.3f} ({s[c] - base[c]:+.3f})" for c in cols) + " |", flush=True)
    sys.exit(0)
print("MRR@10 (--context 0), all rules on and each rule off; the change from all on in parentheses")
print("| rule off | " + " | ".join(cols) + " | holds |")
print("|---" * (len(cols) + 2) + "|")
print("| (none) | " + " | ".join(f"{base[c]:.3f}" for c in cols) + " | |")
for rule in a.rules.split(","):
    s = score([rule])
    d = {c: base[c] - s[c] for c in cols}
    holds = d["locomo_held"] > 0 or (d["coding_odd"] > 0 and d["coding_even"] > 0)
    print(f"| {rule} | " + " | ".join(f"{s[c]:.3f} ({-d[c]:+.3f})" for c in cols) + f" | {'yes' if holds else 'no'} |",
          flush=True)
