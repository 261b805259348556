"""Every transcript entry a coding hit stands for: its own uuid and, for a reply Claude Code wrote in pieces
(thinking, text, each call, one line each), the uuids of the pieces merged into it (`merged_uuids` of `ghola show
--json`). A hit counts when any of them is gold, so a question whose gold names the line that holds the evidence —
a later piece of a split reply — is scored as one naming the reply's first line, and a reply ghola names by its
first piece with text is scored as one named by its first piece (docs/search.md, "Which entry names a reply", "A
line with text names a hit"). Shared by bench/coding/eval.py and bench/folds.py, which must count alike.
"""
import json, subprocess


class Entries:
    """The entries of each hit, each session read once by `ghola show` (`base`: the ghola command line, with its
    --claude-dir and --index-dir, up to the subcommand)."""

    def __init__(self):
        self.sessions = {}

    def of(self, base, corpus, session, uuid):
        key = (corpus, session)
        if key not in self.sessions:
            r = subprocess.run(base + ["show", session, "--json", "--subagents"], capture_output=True, text=True)
            self.sessions[key] = ({m["uuid"]: {m["uuid"], *m.get("merged_uuids", [])}
                                   for m in json.loads(r.stdout)["messages"]} if r.returncode == 0 else {})
        return self.sessions[key].get(uuid, {uuid})
