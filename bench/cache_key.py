"""The key under which a bench script caches a ghola binary's rankings: what the ranks depend on besides the
configuration's name. A cache keyed by name alone once served an older build's ranks (bench/folds.py's
"defaults" read .690 / .607 instead of .703 / .621)."""
import hashlib, json, os


def build_key(ghola, flags, env=None):
    """A short hash of the ghola binary (size and modification time), the search flags, and every GHOLA_ variable
    of this run's environment and of `env` (an experimental build reads its settings from them)."""
    st = os.stat(ghola)
    ghola_env = sorted((k, v) for k, v in {**os.environ, **(env or {})}.items() if k.startswith("GHOLA_"))
    blob = json.dumps([st.st_size, st.st_mtime_ns, list(flags), ghola_env])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
