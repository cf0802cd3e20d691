#!/usr/bin/env python3
"""Checks request files before the Rust loader does: tools exist, kinds are known, and a
paraphrase uses no word of its tool's name (split at _ - . and camelCase, compared after
Snowball English stemming, as `mcp_host_registry::eval::shared_word` does).

Usage: check_requests.py eval/requests/NAME.json [...]   (needs `pip install snowballstemmer`)
"""
import json, os, re, sys
import snowballstemmer

stem = snowballstemmer.stemmer("english").stemWord
root = os.path.join(os.path.dirname(__file__), "..")


def words(text):
    """The Rust `identifier_words`: split at non-alphanumerics, lower-to-upper and digit edges."""
    out, cur, prev = [], "", None
    for c in text:
        if not c.isalnum():
            if cur:
                out.append(cur)
            cur, prev = "", None
            continue
        if prev is not None and ((prev.islower() and c.isupper()) or (prev.isdigit() != c.isdigit())):
            if cur:
                out.append(cur)
            cur = ""
        cur += c.lower()
        prev = c
    if cur:
        out.append(cur)
    return out


tools = {}
for f in os.listdir(os.path.join(root, "servers")):
    d = json.load(open(os.path.join(root, "servers", f)))
    for t in d["tools"]:
        tools[(d["server"], t["name"])] = t
bad = 0
for path in sys.argv[1:]:
    d = json.load(open(path))
    kinds = {}
    for r in d["requests"]:
        where = f"{path}: {r.get('text')!r}"
        answers = [(d["server"], r["tool"])] + [tuple(a.split("/", 1)) for a in r.get("also", [])]
        for a in answers:
            if a not in tools:
                print(f"{where}: no tool {a[0]}/{a[1]}"); bad += 1
        if r["kind"] not in ("direct", "paraphrase", "task"):
            print(f"{where}: kind {r['kind']!r}"); bad += 1
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        if r["kind"] == "paraphrase":
            used = {stem(w) for w in words(r["text"])}
            shared = [w for w in words(r["tool"]) if stem(w) in used]
            if shared:
                print(f"{where}: paraphrase uses {shared} from {r['tool']}"); bad += 1
    print(f"{path}: {len(d['requests'])} requests {kinds}")
sys.exit(1 if bad else 0)
