#!/usr/bin/env python3
"""What a document is (issue #47, deliverable 3): the coding set ranked by plain reciprocal-rank fusion (k = 60) of
BM25 and MiniLM cosine, the fusion held fixed, while what each message's vectors see changes — so that any
difference is the unit of retrieval's, not a rule's. Per corpus folder (the folds) and overall, MRR@10.

Units (a message's semantic score is the best of its vectors):
  whole message      the message's rendered text as one input (its first 256 word pieces), like the floor's entries
  by kind            one vector per kind of part — text, thinking, the tool call ("Name: summary"), the tool
                     output (line numbers of listings dropped) — as ghola indexes them, without the neighbour
  + neighbour        ... and each text vector plus 1.5 x the vector of the previous text's last 300 characters
                     (ghola's default)
  + call, by vector  ... and each tool output's vector plus W x the vector of the call that produced it
  + call, as text    ... and each tool output embedded after its call's "Name: summary" line
  …, win N           (with --windows N) each text and output cut into windows of N words, one vector each
Lexical documents are the message's rendered text throughout (`+ call in words` also adds the call's line to its
output's words).

    /tmp/benchvenv/bin/python bench/unit_study.py [--corpus ../shared/corpus] [--work /tmp/unit-study] [--windows 180,90,45]

Sessions are read with `ghola show --json --subagents` (the reader ghola indexes with); vectors come from `ghola
embed` and are cached in --work.
"""
import argparse, json, subprocess, sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_fusion import bm25, embedded, fused_order, words  # noqa: E402

here = Path(__file__).resolve().parent
root = here.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--corpus", default=str(root.parent / "shared/corpus"))
ap.add_argument("--work", default="/tmp/unit-study")
ap.add_argument("--set", choices=["coding", "locomo"], default="coding")
ap.add_argument("--locomo", default="/tmp/locomo-recall/corpus", help="a copy of ../shared/bench/locomo-dev")
ap.add_argument("--only", help="comma-separated parts of unit names to run (default: all)")
ap.add_argument("--windows", default="", help="comma-separated window lengths in words (e.g. 180,90,45): also "
                "score each text and output cut into such windows, the message's score the best of them")
a = ap.parse_args()
work = Path(a.work)
work.mkdir(parents=True, exist_ok=True)
if a.set == "coding":
    questions = json.load(open(here / "coding/questions.json"))["questions"]
else:  # the same fields as the coding set's: the fold is the conversation, the scope its directory
    questions = [{"id": q["qid"], "corpus": q["conversation"], "project": q["cwd"], "question": q["question"],
                  "gold": q["gold_uuids"]} for q in json.load(open(Path(a.locomo) / "gold.json"))]


def ghola(folder, *args):
    r = subprocess.run([a.ghola, "--claude-dir", f"{a.corpus}/{folder}", "--index-dir", str(work / "index" / folder),
                        *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ghola {' '.join(args)} failed: {r.stderr}")
    return json.loads(r.stdout)


def without_line_numbers(text):
    """As `index::render::without_line_numbers`: a listing whose first lines are numbered in sequence."""
    import re
    lines = text.split("\n")
    pat = re.compile(r"^ *(\d+)(?:→|\t)(.*)$")
    first = [pat.match(l) for l in lines[:3]]
    if not first or not first[0] or not all(first):
        return text
    start = int(first[0].group(1))
    if any(int(m.group(1)) != start + i for i, m in enumerate(first)):
        return text
    return "\n".join((pat.match(l).group(2) if pat.match(l) else l) for l in lines) + "\n"


# Messages per corpus folder: (project, uuid, rendered text, {kind: text}, [(result text, call line)], prev tail)
messages = defaultdict(list)
if a.set == "locomo":  # one text turn per message; the neighbour is the turn before in the same session
    prev, first = {}, {}
    for line in open(Path(a.locomo) / "messages.jsonl"):
        m = json.loads(line)
        first.setdefault(m["session_id"], m["text"][:80])  # a session's title is its first request, cut
        messages[m["conversation"]].append({"project": m["cwd"], "uuid": m["uuid"], "content": m["text"],
                                            "kinds": {"text": m["text"]}, "results": [],
                                            "prev": prev.get(m["session_id"], ""),
                                            "title": first[m["session_id"]]})
        prev[m["session_id"]] = m["text"][-300:]
for folder in sorted({q["corpus"] for q in questions}) if a.set == "coding" else []:
    for s in ghola(folder, "sessions", "--global", "--json")["sessions"]:
        shown = ghola(folder, "show", s["session_id"], "--json", "--subagents")
        calls = {}
        prev_text = {}  # per conversation (main thread or agent): the tail of the last text
        for m in shown["messages"]:
            conv = m.get("agent_id") or ""
            content, kinds, results = [], defaultdict(list), []
            for p in m["parts"]:
                k = p.get("kind")
                if k == "text":
                    kinds["text"].append(p["text"])
                    content.append(p["text"])
                elif k == "thinking":
                    kinds["thinking"].append(p["text"])
                    content.append("[thinking] " + p["text"])
                elif k == "tool_use":
                    line = f"{p.get('name')}: {p.get('summary') or ''}"
                    calls[p.get("id")] = line
                    kinds["tool_use"].append(line)
                    content.append("[tool] " + line)
                elif k == "tool_result":
                    t = p.get("text") or ""
                    kinds["tool_result"].append(without_line_numbers(t))
                    results.append((without_line_numbers(t), calls.get(p.get("tool_use_id"), "")))
                    content.append("[tool result] " + t)
            kinds = {k: "\n".join(v) for k, v in kinds.items() if "\n".join(v).strip()}
            if not kinds:
                continue
            messages[folder].append({"project": shown["project"], "uuid": m["uuid"], "content": "\n".join(content),
                                     "kinds": kinds, "results": results, "prev": prev_text.get(conv, ""),
                                     "title": (s.get("title") or "").rstrip("…")})
            if "text" in kinds:
                prev_text[conv] = kinds["text"][-300:]

WINS = [int(w) for w in a.windows.split(",") if w]
TAIL_FROM, TAIL_CHARS = 1500, 1000  # an output longer than this may also be represented by its last characters


def windows(t, w):
    """`t` in windows of `w` words, consecutive ones sharing a sixth (a proxy for chunks of word pieces: a
    window of 180 words is about the 256 word pieces a chunk of ghola's holds)."""
    ws = t.split()
    if len(ws) <= w:
        return [t]
    step = max(1, w - w // 6)
    return [" ".join(ws[i:i + w]) for i in range(0, max(1, len(ws) - w // 6), step)]


# "(now)" names the index before 2026-11-28, when every message took its neighbour; it is "below 600" since.
def U(name, whole=False, nb_w=0.0, nb_extra=False, call=None, call_w=0.0, title_w=0.0, win=None, nb_below=1e9, tail=False):
    return name, {"whole": whole, "nb_w": nb_w, "nb_extra": nb_extra, "call": call, "call_w": call_w,
                  "title_w": title_w, "win": win, "nb_below": nb_below, "tail": tail}


UNITS = [U("whole message", whole=True), U("by kind"),
         U("+ neighbour 1.5 (now)", nb_w=1.5), U("+ neighbour 1.0", nb_w=1.0), U("+ neighbour 0.5", nb_w=0.5),
         U("+ neighbour 0.3", nb_w=0.3), U("+ neighbour 1.5 as 2nd vec", nb_w=1.5, nb_extra=True),
         U("+ call 0.5", call="vector", call_w=0.5), U("+ call 1.0", call="vector", call_w=1.0),
         U("+ call as text", call="text"),
         U("+ nb 1.5, call 1.0", nb_w=1.5, call="vector", call_w=1.0),
         U("+ nb 0.5, call 1.0", nb_w=0.5, call="vector", call_w=1.0),
         U("+ nb 1.5 2nd, call 1.0", nb_w=1.5, nb_extra=True, call="vector", call_w=1.0),
         U("+ nb 1.5, call 0.5 (now)", nb_w=1.5, call="vector", call_w=0.5),
         U("+ nb 1.5, call 0.5, title 0.2", nb_w=1.5, call="vector", call_w=0.5, title_w=0.2),
         U("+ nb 1.5, call 0.5, title 0.5", nb_w=1.5, call="vector", call_w=0.5, title_w=0.5)]
UNITS += [U(f"+ nb 1.5 below {n}, call 0.5", nb_w=1.5, call="vector", call_w=0.5, nb_below=n)
          for n in (100, 200, 400, 800)]
UNITS += [U("+ nb 1.5 below 600, call 0.5", nb_w=1.5, call="vector", call_w=0.5, nb_below=600),
          U("+ nb 1.5 below 600, call 0.5, output's tail", nb_w=1.5, call="vector", call_w=0.5, nb_below=600,
            tail=True)]
UNITS += [U(f"+ nb 1.5, call 0.5, win {w}", nb_w=1.5, call="vector", call_w=0.5, win=w) for w in WINS]
UNITS += [U(f"by kind, win {w}", win=w) for w in WINS]
if a.only:
    UNITS = [u for u in UNITS if any(o in u[0] for o in a.only.split(","))]
TAILS = any(u["tail"] for _, u in UNITS)  # only a unit that uses an output's tail embeds it


# Every distinct text to embed, once.
texts = {}
def need(t):
    texts.setdefault(t, len(texts))
    return texts[t]
for folder, ms in messages.items():
    for m in ms:
        need(m["content"])
        for t in m["kinds"].values():
            need(t)
            for w in WINS:
                for x in windows(t, w):
                    need(x)
        if m["prev"]:
            need(m["prev"])
        if m["title"]:
            need(m["title"])
        for r, call in m["results"]:
            need(r)
            if TAILS and len(r) > TAIL_FROM:
                need(r[-TAIL_CHARS:])
            for w in WINS:
                for x in windows(r, w):
                    need(x)
            if call:
                need(call)
                need(call + "\n" + r)
for q in questions:
    need(q["question"])
order = sorted(texts, key=texts.get)
vecs = embedded(a.ghola, a.model_dir, order, work)
V = lambda t: vecs[texts[t]]


def unit(m, u):
    """The vectors of message `m` under unit `u` (see UNITS)."""
    if u["whole"]:
        return [V(m["content"])]
    out = []
    W = u.get("win")
    WS = (lambda t: windows(t, W)) if W else (lambda t: [t])
    for k, t in m["kinds"].items():
        if k == "tool_result" and u["call"] and m["results"]:
            for r, call in m["results"]:
                if not call:
                    out.extend(V(x) for x in WS(r))
                elif u["call"] == "vector":
                    for x in WS(r) + ([r[-TAIL_CHARS:]] if u["tail"] and len(r) > TAIL_FROM else []):
                        v = V(x) + u["call_w"] * V(call)
                        out.append(v / np.linalg.norm(v))
                else:
                    out.append(V(call + "\n" + r))
            continue
        for x in WS(t):
            v = V(x)
            if k == "text" and u["nb_w"] and m["prev"] and len(t) < u["nb_below"]:
                mixed = v + u["nb_w"] * V(m["prev"])
                mixed = mixed / np.linalg.norm(mixed)
                if u["nb_extra"]:
                    out.append(mixed)  # beside the message's own vector, not instead of it
                else:
                    v = mixed
            out.append(v)
    if u["title_w"] and m["title"]:  # the session's title (its first request, or Claude Code's summary) mixed in
        out = [(v + u["title_w"] * V(m["title"])) / np.linalg.norm(v + u["title_w"] * V(m["title"])) for v in out]
    return out


LEXICAL = ["content", "content + call in words", "content + call + title in words"] if a.set == "coding" \
    else ["content", "content + title in words"]
within = lambda p, project: p == project or p.startswith(project.rstrip("/") + "/")
results = defaultdict(dict)  # (unit, lexical) -> {qid: rr}
for folder, ms in messages.items():
    for lexical in LEXICAL:
        docs = [Counter(words(m["content"] + ("\n" + "\n".join(c for _, c in m["results"])
                                               if lexical != "content" else "")
                              + ("\n" + m["title"] if "title" in lexical else ""))) for m in ms]
        for how, u in UNITS:
            units = [np.stack(unit(m, u)) for m in ms]
            for q in questions:
                if q["corpus"] != folder:
                    continue
                idx = [i for i, m in enumerate(ms) if within(m["project"], q["project"])]
                qv = V(q["question"])
                cos = np.array([float((units[i] @ qv).max()) for i in idx])
                lex = bm25([docs[i] for i in idx], words(q["question"]))
                ranked = [ms[idx[j]]["uuid"] for j in fused_order(lex, cos)[:10]]
                gold = set(q["gold"])
                results[(how, lexical)][q["id"]] = next(
                    (1 / (i + 1) for i, u in enumerate(ranked) if u in gold), 0.0)

folds = defaultdict(list)
for q in questions:
    folds[q["corpus"]].append(q["id"])
names = sorted(folds)
print(f"{a.set} set ({len(questions)} questions), project scope, RRF k=60 of BM25 and MiniLM; MRR@10 per fold")
print(f"{'unit of retrieval':<26}{'lexical':<25}" + "".join(f"{n[:12]:>13}" for n in names) + f"{'mean':>7}{'all':>7}")
for (how, lexical), rr in results.items():
    per = [sum(rr[i] for i in folds[n]) / len(folds[n]) for n in names]
    print(f"{how:<26}{lexical:<25}" + "".join(f"{p:>13.3f}" for p in per)
          + f"{sum(per) / len(per):>7.3f}{sum(rr.values()) / len(rr):>7.3f}")
