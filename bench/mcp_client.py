"""A minimal MCP client over stdio for the bench scripts: starts `ghola … serve`, initialises, calls tools, and
waits until the server ranks with the model (not by words alone), as a user's default search does."""
import json, subprocess, time


class Server:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=env, text=True, bufsize=1)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "ghola-bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.next_id:
                return msg

    def call(self, tool, args):
        """(is_error, text) of a tool call."""
        res = self.request("tools/call", {"name": tool, "arguments": args})["result"]
        return res.get("isError", False), "".join(c.get("text", "") for c in res["content"])

    def wait_for_model(self, project, timeout=600):
        for _ in range(timeout):
            _, t = self.call("search_project_history", {"query": "warm up", "project": project})
            if "keyword-only" not in t and "first indexing pass" not in t:
                return
            time.sleep(1)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def search_args(pairs):
    """Tool arguments from NAME=VALUE strings (a value that parses as JSON is taken as JSON, else as text)."""
    out = {}
    for pair in pairs:
        k, v = pair.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out
