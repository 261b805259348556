#!/usr/bin/env python3
"""Recall in the context window, measured the way a model meets it: through `ghola serve` over stdio, one
`search_project_history` call per LoCoMo dev question (default arguments unless given), then one expansion of the
best hit (`get_session_detail` with `around`). For each, whether a gold message's own text is in what the model
got, and how many characters that cost.

    cp -r ../shared/bench/locomo-dev /tmp/locomo-dev
    HOME=/tmp/locomo-dev target/release/ghola index
    python3 bench/mcp_recall.py /tmp/locomo-dev [--arg max_chars=8000] [--arg context_before_after=2] [--json]

Questions are reported by split: conversations conv-26, conv-30 and conv-41 are the part defaults are chosen on;
conv-42 and conv-43 are held back and looked at once per change (a rule kept only if it holds there too).
"""
import argparse, json, os, re, statistics, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_client import Server, search_args  # noqa: E402

TUNE = {"conv-26", "conv-30", "conv-41"}

ap = argparse.ArgumentParser()
ap.add_argument("root")
ap.add_argument("--arg", action="append", default=[], help="search argument NAME=VALUE (JSON value or text)")
ap.add_argument("--around", type=int, default=5, help="messages before and after the expanded hit")
ap.add_argument("--json", action="store_true", help="print the figures as JSON")
opts = ap.parse_args()

root = Path(opts.root).resolve()
ghola = str(Path(__file__).resolve().parent.parent / "target/release/ghola")
gold = json.load(open(root / "gold.json"))
texts = {}
for line in open(root / "messages.jsonl"):
    m = json.loads(line)
    texts[m["uuid"]] = m["text"]
extra = search_args(opts.arg)

env = dict(os.environ, HOME=str(root))
for k in ["CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID", "GHOLA_HOME"]:
    env.pop(k, None)

server = Server([ghola, "serve"], env)
server.wait_for_model(gold[0]["cwd"])
call = server.call

norm = lambda s: re.sub(r"\s+", " ", s).strip()
header = re.compile(r"^\[1\] .*? · session (\S+) window \d+ .*? · hit (\S+)", re.M)
rows = []
for q in gold:
    err, text = call("search_project_history", {"query": q["question"], "project": q["cwd"], **extra})
    got = norm(text)
    wanted = [norm(texts[u]) for u in q["gold_uuids"] if u in texts]
    if extra.get("format") == "json" and not err:
        # The machine format: the gold message among the shown messages, by id (its text may be escaped).
        r = json.loads(text)
        shown = {h["matched_message"]["uuid"] for h in r["results"]}
        shown |= {c["uuid"] for h in r["results"] for c in h["context"]}
        found = bool(shown & set(q["gold_uuids"]))
    else:
        found = not err and any(w in got for w in wanted)
    expanded_found, expanded_chars = found, 0
    m = header.search(text)
    if m and not err:
        e_err, more = call("get_session_detail", {"session_id": m.group(1), "around": m.group(2),
                                                  "before": opts.around, "after": opts.around})
        if not e_err:
            expanded_chars = len(more)
            expanded_found = found or any(w in norm(more) for w in wanted)
    rows.append({"qid": q["qid"], "conversation": q["conversation"], "found": found, "chars": len(text),
                 "expanded_found": expanded_found, "expanded_chars": expanded_chars})
server.close()


def figures(rs):
    chars = sorted(r["chars"] for r in rs)
    return {
        "questions": len(rs),
        "evidence": round(sum(r["found"] for r in rs) / len(rs), 3),
        "median_chars": int(statistics.median(chars)),
        "p90_chars": chars[int(0.9 * (len(chars) - 1))],
        "evidence_with_one_expansion": round(sum(r["expanded_found"] for r in rs) / len(rs), 3),
        "median_expansion_chars": int(statistics.median(r["expanded_chars"] for r in rs)),
    }


out = {
    "args": extra,
    "tune": figures([r for r in rows if r["conversation"] in TUNE]),
    "held_back": figures([r for r in rows if r["conversation"] not in TUNE]),
    "all": figures(rows),
}
if opts.json:
    print(json.dumps(out))
else:
    print(f"search_project_history {json.dumps(extra)}; expansion: get_session_detail around the top hit, "
          f"{opts.around} before and after")
    for part in ["tune", "held_back", "all"]:
        f = out[part]
        print(f"{part:>9}: {f['questions']} questions, evidence {f['evidence']:.3f} at median {f['median_chars']} "
              f"chars (p90 {f['p90_chars']}); with one expansion {f['evidence_with_one_expansion']:.3f} "
              f"(+{f['median_expansion_chars']} chars median)")
json.dump(rows, open(os.environ["DUMP"], "w"))
