#!/usr/bin/env python3
"""Words of a language written without spaces, found inside the sentences that use them (docs/search.md, "Chinese,
Japanese and Korean by pairs of characters"). Every run of katakana (three characters or more) and of kanji (two
or more) that ghola's messages of a corpus folder hold is asked as a query, in global scope; a word counts as
found when the first hit holds it, and as found in the top ten when any of the first ten does.

    python3 bench/cjk_words.py [--ghola target/release/ghola] [--folder d-kimuson-claude-code-viewer]
        [--work /tmp/cjk-words]

The folder is read in place from ../shared/corpus; its index goes under --work.
"""
import argparse, json, re, subprocess
from pathlib import Path

root = Path(__file__).resolve().parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--folder", default="d-kimuson-claude-code-viewer")
ap.add_argument("--work", default="/tmp/cjk-words")
a = ap.parse_args()

ghola = [a.ghola, "--claude-dir", str(root.parent / "shared/corpus" / a.folder), "--index-dir",
         str(Path(a.work) / "index"), "--model-dir", a.model_dir]
subprocess.run(ghola + ["index"], capture_output=True, check=True)
listing = json.loads(subprocess.run(ghola + ["sessions", "--global", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
texts = []
for s in listing["sessions"]:
    sid = s["session_id"]
    shown = json.loads(subprocess.run(ghola + ["show", sid, "--json"], capture_output=True, text=True,
                                      check=True).stdout)
    texts += ["\n".join(p.get("text") or "" for p in m["parts"]) for m in shown["messages"]]
word = re.compile(r"[\u30a0-\u30ff]{3,}|[\u4e00-\u9fff]{2,}")
words = sorted({w for t in texts for w in word.findall(t)})
first = top10 = 0
for w in words:
    r = subprocess.run(ghola + ["search", w, "--global", "--context", "0", "--limit", "10", "--json", "--no-update"],
                       capture_output=True, text=True, check=True)
    hits = [h["matched_message"]["content"] for h in json.loads(r.stdout)["results"]]
    first += bool(hits) and w in hits[0]
    top10 += any(w in h for h in hits)
print(f"{a.folder}: {len(words)} words of katakana or kanji in {len(texts)} messages; "
      f"the first hit holds the word for {first} ({first / max(len(words), 1):.0%}), "
      f"one of the first ten for {top10} ({top10 / max(len(words), 1):.0%})")
