#!/usr/bin/env python3
"""Folds over histories, not questions (issue #47): every configuration of the ranking scored per corpus folder of
the coding set (six folds) and per LoCoMo dev conversation (five), beside the floor (plain RRF of BM25 and MiniLM
over single entries), then chosen with one history held out at a time.

A configuration is a name, `ghola search` flags and, if it changes what is indexed, environment variables for
`ghola index` (its own index is built under --work). For each fold the configuration with the best mean MRR@10 on
the *other* folds of the same set is taken, and its MRR@10 on the held-out fold is what the table reports, beside
the floor's and the defaults'. A change is kept only if, on the held-out folds, it beats the floor on average and
loses to it on none by more than noise; the noise of a fold is the standard error of the paired per-question
difference (a 95% band would be twice it).

    python3 bench/coding/eval.py --json /tmp/coding-ghola.json -- --context 0
    /tmp/benchvenv/bin/python bench/coding/floor.py --ghola-ranks /tmp/coding-ghola.json --out /tmp/folds/floor-coding.json
    /tmp/benchvenv/bin/python bench/locomo_recall.py --json /tmp/folds/locomo.json
    python3 bench/folds.py [--work /tmp/folds] [--set coding|locomo|both] \\
        [--config 'NAME|SEARCH FLAGS|INDEX ENV|SEARCH ENV'] ... (default: the built-in list below)

The index environment builds an index of its own (an index-time setting); the search environment is given to
`ghola search` alone (an experimental build's search-time setting), so several of those share one index.

Ranks are cached in --work per configuration, ghola binary and GHOLA_ environment (see bench/cache_key.py).
"""
import argparse, json, math, os, shlex, shutil, statistics, subprocess, sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cache_key import build_key
from entries import Entries

here = Path(__file__).resolve().parent
root = here.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--corpus", default=str(root.parent / "shared/corpus"))
ap.add_argument("--locomo", default="/tmp/locomo-recall/corpus", help="a copy of ../shared/bench/locomo-dev")
ap.add_argument("--work", default="/tmp/folds")
ap.add_argument("--set", choices=["coding", "locomo", "both"], default="both")
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--config", action="append", default=[])
ap.add_argument("--only-new", action="store_true", help="coding: only the questions written last (c76-c150)")
a = ap.parse_args()

RULES = ["question", "announcement", "edit-echo", "bare-tool-call", "request", "agent-not-main-thread",
         "outside-named-time", "untimed-for-when", "uncounted-for-how-many", "reasonless-for-failure",
         "listing-for-how-or-why", "addresses-the-named", "said-by-the-other", "parties-unnamed", "time-unnamed",
         "session-evidence"]
DEFAULT_CONFIGS = (
    ["defaults||"]
    + [f"without {r}|--without-rule {r}|" for r in RULES]
    + ["all rules off|" + " ".join(f"--without-rule {r}" for r in RULES) + "|"]
    + [f"lexical weight {w}|--lexical-weight {w}|" for w in ("0.2", "0.3", "0.4", "0.5", "0.6")]
    + ["rrf fusion|--fusion rrf|"]
    + ["no neighbour vector||GHOLA_NEIGHBOUR_CHARS=0",
       "neighbour weight 0.5||GHOLA_NEIGHBOUR_WEIGHT=0.5",
       "neighbour weight 1.0||GHOLA_NEIGHBOUR_WEIGHT=1.0"]
)
configs = []
parse_env = lambda text: dict(kv.split("=", 1) for kv in shlex.split(text))
for c in a.config or DEFAULT_CONFIGS:
    name, flags, env, search_env = (c.split("|") + ["", "", ""])[:4]
    configs.append((name, shlex.split(flags), parse_env(env), parse_env(search_env)))
work = Path(a.work)
work.mkdir(parents=True, exist_ok=True)


def slug(s):
    return "".join(ch if ch.isalnum() else "-" for ch in s)


def index_dir(kind, env, folder=""):
    tag = slug("_".join(f"{k}{v}" for k, v in sorted(env.items()))) or "default"
    return work / "index" / kind / tag / folder


def run_all(jobs):
    with ThreadPoolExecutor(a.jobs) as pool:
        return list(pool.map(lambda f: f(), jobs))


def search(base, question, scope, flags, search_env):
    cmd = base + ["search", question, *scope, "--context", "0", "--limit", "10", "--json", "--no-update", *flags]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **search_env})
    if r.returncode != 0:
        sys.exit(f"search failed: {' '.join(cmd)}\n{r.stderr}")
    return [(h["matched_message"]["session_id"], h["matched_message"]["uuid"])
            for h in json.loads(r.stdout).get("results", [])]


entries = Entries()


def rr(ranked, gold):
    """Reciprocal rank of the first hit (a set of the entries it stands for) that holds a gold entry."""
    return next((1 / (i + 1) for i, us in enumerate(ranked[:10]) if us & gold), 0.0)


# Each set: questions as (id, fold, gold set, how to search it) and the floor's reciprocal rank of each.
sets = {}
if a.set in ("coding", "both"):
    qs = json.load(open(here / "coding/questions.json"))["questions"]
    if a.only_new:
        qs = [q for q in qs if int(q["id"][1:]) >= 76]
    floor = json.load(open(work / "floor-coding.json"))
    sets["coding"] = {
        "questions": [(q["id"], q["corpus"], set(q["gold"]), q) for q in qs],
        "floor": {q["id"]: (1 / floor[q["id"]] if floor[q["id"]] else 0.0) for q in qs},
    }
if a.set in ("locomo", "both"):
    gold = json.load(open(Path(a.locomo) / "gold.json"))
    floor = {r["qid"]: r["floor"] for r in json.load(open(work / "locomo.json"))}
    sets["locomo"] = {
        "questions": [(q["qid"], q["conversation"], set(q["gold_uuids"]), q) for q in gold],
        "floor": {q["qid"]: rr([{u} for u in floor[q["qid"]]], set(q["gold_uuids"])) for q in gold},
    }


def ensure_index(kind, env):
    base_env = {**os.environ, **env}
    if kind == "coding":
        for folder in sorted({q["corpus"] for _, _, _, q in sets["coding"]["questions"]}):
            d = index_dir(kind, env, folder)
            r = subprocess.run([a.ghola, "--claude-dir", f"{a.corpus}/{folder}", "--index-dir", str(d),
                                "--model-dir", a.model_dir, "index"], capture_output=True, text=True, env=base_env)
            if r.returncode != 0:
                sys.exit(f"indexing {folder} failed: {r.stderr}")
    else:
        d = index_dir(kind, env)
        r = subprocess.run([a.ghola, "--claude-dir", f"{a.locomo}/.claude", "--index-dir", str(d),
                            "--model-dir", a.model_dir, "index"], capture_output=True, text=True, env=base_env)
        if r.returncode != 0:
            sys.exit(f"indexing LoCoMo failed: {r.stderr}")


def ranks_of(kind, name, flags, env, search_env):
    path = work / "ranks" / kind / f"{slug(name)}-v2-{build_key(a.ghola, flags, {**env, **search_env})}.json"
    if path.exists():
        return json.load(open(path))
    ensure_index(kind, env)
    asked = []
    for qid, _, gold, q in sets[kind]["questions"]:
        if kind == "coding":
            base = [a.ghola, "--claude-dir", f"{a.corpus}/{q['corpus']}", "--index-dir",
                    str(index_dir(kind, env, q["corpus"])), "--model-dir", a.model_dir]
            scope = ["--project=" + q["project"]]
        else:
            base = [a.ghola, "--claude-dir", f"{a.locomo}/.claude", "--index-dir", str(index_dir(kind, env)),
                    "--model-dir", a.model_dir]
            scope = ["--project=" + q["cwd"]]
        asked.append((qid, gold, q, base, scope))
    ranked = run_all([lambda base=base, q=q, scope=scope: search(base, q["question"], scope, flags, search_env)
                      for _, _, q, base, scope in asked])
    out = {}
    for (qid, gold, q, base, _), hits in zip(asked, ranked):
        # A coding hit counts by every entry of its message, as bench/coding/eval.py counts it.
        found = [entries.of(base, q["corpus"], sess, u) for sess, u in hits] if kind == "coding" \
            else [{u} for _, u in hits]
        out[qid] = rr(found, gold)
    path.parent.mkdir(parents=True, exist_ok=True)
    json.dump(out, open(path, "w"))
    return out


def se(diffs):
    return statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else 0.0


for kind, s in sets.items():
    folds = defaultdict(list)
    for qid, fold, _, _ in s["questions"]:
        folds[fold].append(qid)
    names = sorted(folds)
    scores = {name: ranks_of(kind, name, flags, env, search_env) for name, flags, env, search_env in configs}
    mrr = lambda sc, ids: sum(sc[i] for i in ids) / len(ids)
    print(f"\n== {kind}: {len(s['questions'])} questions, {len(names)} folds; MRR@10 per fold "
          f"(difference to the floor; * = lower than the floor by more than the fold's noise)")
    width = max(len(n) for n, *_ in configs) + 2
    print(f"{'':<{width}}" + "".join(f"{n[:14]:>16}" for n in names) + f"{'mean of folds':>15}{'all':>8}")
    print(f"{'floor':<{width}}" + "".join(f"{mrr(s['floor'], folds[n]):>16.3f}" for n in names)
          + f"{statistics.mean(mrr(s['floor'], folds[n]) for n in names):>15.3f}"
          + f"{mrr(s['floor'], list(s['floor'])):>8.3f}")
    for name, *_ in configs:
        sc = scores[name]
        cells = []
        for n in names:
            d = [sc[i] - s["floor"][i] for i in folds[n]]
            mark = "*" if statistics.mean(d) < -se(d) else " "
            cells.append(f"{mrr(sc, folds[n]):.3f} ({statistics.mean(d):+.3f}){mark}")
        print(f"{name:<{width}}" + "".join(f"{c:>16}" for c in cells)
              + f"{statistics.mean(mrr(sc, folds[n]) for n in names):>15.3f}{mrr(sc, list(sc)):>8.3f}")
    # Leave one history out: the configuration chosen on the other folds, scored on the one held out.
    print(f"\n{kind}, one fold held out at a time: the configuration with the best mean MRR@10 on the other folds")
    print(f"{'held-out fold':<32}{'chosen':<{width}}{'held-out MRR':>13}{'defaults':>10}{'floor':>8}{'noise':>7}")
    held = []
    for n in names:
        others = [m for m in names if m != n]
        chosen = max(configs, key=lambda c: statistics.mean(mrr(scores[c[0]], folds[m]) for m in others))[0]
        got, dflt, fl = mrr(scores[chosen], folds[n]), mrr(scores[configs[0][0]], folds[n]), mrr(s["floor"], folds[n])
        noise = se([scores[chosen][i] - s["floor"][i] for i in folds[n]])
        held.append((got, fl))
        print(f"{n[:31]:<32}{chosen:<{width}}{got:>13.3f}{dflt:>10.3f}{fl:>8.3f}{noise:>7.3f}")
    print(f"{'mean of held-out folds':<32}{'':<{width}}{statistics.mean(g for g, _ in held):>13.3f}{'':>10}"
          f"{statistics.mean(f for _, f in held):>8.3f}")
