"""A transcript entry's text as the coding scripts read it — its text and thinking blocks, each tool call as
`[name] input` (the input's JSON cut at 1,000 characters) and each tool result's text — written once for
`floor.py` (one document per entry) and `naming_check.py` (which entry holds a question's evidence)."""
import json


def entry_text(e):
    """The text of one `user`/`assistant` line of a transcript, its blocks joined by newlines."""
    c = (e.get("message") or {}).get("content")
    if isinstance(c, str):
        return c
    out = []
    for b in c or []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            out.append(b.get("text") or "")
        elif t == "thinking":
            out.append(b.get("thinking") or "")
        elif t == "tool_use":
            out.append(f"[{b.get('name')}] {json.dumps(b.get('input'))[:1000]}")
        elif t == "tool_result":
            r = b.get("content")
            if isinstance(r, list):
                r = " ".join(x.get("text", "") for x in r if isinstance(x, dict))
            out.append(str(r or ""))
    return "\n".join(out)
