"""Starts an MCP server command (argv[1:]) and checks it over stdio as Claude Code would: `initialize`, then a
search whose answer holds the past session's message. Exits non-zero, saying why, otherwise."""
import json
import subprocess
import sys
import time

proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr)


def send(v):
    proc.stdin.write((json.dumps(v) + "\n").encode())
    proc.stdin.flush()


def recv(want_id, deadline):
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            sys.exit(f"the server closed stdout (exit {proc.poll()})")
        try:
            v = json.loads(line)
        except ValueError:
            sys.exit(f"stdout is not JSON-RPC: {line!r}")
        if v.get("id") == want_id:
            return v
    sys.exit("timed out")


started = time.time()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "check", "version": "0"}}})
init = recv(1, time.time() + 60)
assert init["result"]["serverInfo"], init
print(f"initialize answered in {time.time() - started:.1f} s")
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
for attempt in range(30):
    send({"jsonrpc": "2.0", "id": 10 + attempt, "method": "tools/call",
          "params": {"name": "search_project_history", "arguments": {"query": "ERR_LINKER_MISSING"}}})
    r = recv(10 + attempt, time.time() + 120)
    text = r["result"]["content"][0]["text"]
    if "lld linker" in text:
        # The compact text a model reads: the hit's header names its session.
        assert "[1] " in text and " · session " in text and " · hit " in text, text
        print(f"search answered with the past session after {time.time() - started:.1f} s")
        break
    time.sleep(1)
else:
    sys.exit(f"the search never found the past session: {text[:500]}")
proc.stdin.close()
proc.terminate()
