"""Which functions of the release binary a start, a call and a turn run, as a symbol
ordering file for the linker (crates/cli/link/hot-functions.txt). The driver is
scripts/order-functions.sh; this file reads what it records.

  sections MAP CALLGRIND_OUT...   sections holding an instruction callgrind saw executed
  faults MAP PERF_DATA            sections where the host took a page fault (perf)
  coverage MAP LIST               how much of an ordering file names this build's functions

An ordering file goes stale without a sound: a dependency bumped, or any change to the
release profile or to what a crate depends on, changes the hash in every symbol below it (a
crate's metadata hashes its dependencies'), the linker skips the names it does not find, and
the functions fall back to being scattered (peak RSS of a seven-server start 11 -> 21 MiB).
scripts/bench-floor.sh prints the coverage before its numbers.

ORDER_BINARY names the program the map and profiles are of (default `mcp-host`; the
supervisor's list is made from `mcp-host-supervise`'s).

Functions are matched to the binary's own input sections through the linker's map (`-Map`),
by address: the shipped binary has no symbol table, and a build that keeps one has other
symbol hashes (the profile is part of every crate's metadata). Prints one name per line."""

import bisect
import os
import re
import subprocess
import sys

SECTION = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S.*:\(\.text\.(.+)\)$")
# LLVM puts functions it knows to be cold or hot into prefixed sections; the symbol inside
# is the name without the prefix, and the ordering file names symbols.
PREFIX = re.compile(r"^(unlikely|hot|startup|exit|split)\.")
BINARY = os.environ.get("ORDER_BINARY", "mcp-host")


class Sections:
    def __init__(self, map_path):
        rows = []
        with open(map_path) as f:
            for line in f:
                m = SECTION.match(line.rstrip("\n"))
                if m:
                    rows.append((int(m.group(1), 16), int(m.group(2), 16), PREFIX.sub("", m.group(3))))
        rows.sort()
        self.rows = rows
        self.starts = [r[0] for r in rows]

    def at(self, address):
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.rows[i][0] + self.rows[i][1]:
            return self.rows[i][2]
        return None


def executed(sections, outputs):
    """Callgrind with `--dump-instr=yes --compress-pos=no`: a cost line starts with the
    instruction's address in its object (the binary's own addresses, not the mapped ones)."""
    names = set()
    for path in outputs:
        ours = False
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("ob="):
                    ours = line.rstrip().endswith("/" + BINARY)
                elif ours and line.startswith("0x"):
                    name = sections.at(int(line.split(maxsplit=1)[0], 16))
                    if name:
                        names.add(name)
    return names


MMAP = re.compile(r"PERF_RECORD_MMAP2 (\d+)/\d+: \[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ 0 .* r--p \S*/"
                  + re.escape(BINARY) + "$")


def faulted(sections, data):
    """`perf record -e page-faults -c 1 -d`: the host's own faults (not its children's),
    addresses made relative to where the binary's first segment was mapped."""
    text = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events", "-F", "pid,addr"],
                          capture_output=True, text=True, check=True).stdout
    base, pid, names = None, None, set()
    for line in text.splitlines():
        m = MMAP.search(line)
        if m and base is None:
            pid, base = m.group(1), int(m.group(2), 16)
            continue
        parts = line.split()
        if base is not None and len(parts) == 2 and parts[0] == pid:
            name = sections.at(int(parts[1], 16) - base)
            if name:
                names.add(name)
    return names


def coverage(sections, list_path):
    """The share of the list's names that are functions of this build."""
    present = {row[2] for row in sections.rows}
    with open(list_path) as f:
        listed = [line.strip() for line in f if line.strip()]
    found = sum(name in present for name in listed)
    return found, len(listed)


def main():
    mode, map_path, *inputs = sys.argv[1:]
    sections = Sections(map_path)
    if mode == "coverage":
        found, listed = coverage(sections, inputs[0])
        share = found / listed if listed else 0.0
        print(f"{share:.3f} {found} {listed}")
        return
    names = executed(sections, inputs) if mode == "sections" else faulted(sections, inputs[0])
    for name in sorted(names):
        print(name)


if __name__ == "__main__":
    main()
