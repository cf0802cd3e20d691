"""The driver of scripts/bench-floor.sh (see there for what it measures). Prints markdown.

argv: WORK RELEASE_DIR AFTER BEFORE RUNS QUICK MINIMAL_SERVER"""

import glob
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

work, release, after, before, runs, quick, minimal = sys.argv[1:8]
runs, quick = int(runs), quick == "1"
raw = os.path.join(release, "mcp-raw-client")
fake_model = os.path.join(release, "mcp-fake-model")
# The real interpreter, not a shell shim in front of it (pyenv's costs a bash start).
python = os.path.realpath(sys.executable)
builds = [("after", after)] + ([("before", before)] if before else [])
# Each build keeps its own data folder: their stores may be at different migrations.
ENVS = {b: dict(os.environ, XDG_DATA_HOME=os.path.join(work, f"data-{name}")) for name, b in builds}


def env_of(argv):
    return next((ENVS[a] for a in argv if a in ENVS), None)
ECHO = '{"text":"hi"}'


def minimal_config(n, sandbox=None):
    """`sandbox="off"` for callgrind: Landlock refuses the exec that valgrind makes of a
    confined server, so under valgrind servers run unconfined (confinement's own cost is in
    docs/benchmarks.md, issue 14)."""
    path = os.path.join(work, f"minimal-{n}{'-' + sandbox if sandbox else ''}.json")
    extra = {"sandbox": sandbox} if sandbox else {}
    servers = {f"m{i}": {"command": python, "args": [minimal], **extra} for i in range(n)}
    with open(path, "w") as f:
        json.dump({"mcpServers": servers}, f)
    return path


def host_args(config):
    return ["--strict-mcp-config", "--mcp-config", config]


def run(argv, check=True):
    out = subprocess.run(argv, capture_output=True, text=True, env=env_of(argv))
    if check and out.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{out.stdout}\n{out.stderr}")
    return out


def wall(argv):
    t = time.monotonic()
    run(argv)
    return time.monotonic() - t


def median_wall(argv):
    wall(argv)  # warm the page cache and the servers' own caches
    return statistics.median(wall(argv) for _ in range(runs))


def ratio(a, b):
    return f"{a / b:.2f}" if b else "-"


def row(name, floor, values, unit, fmt="{:.1f}"):
    cells = [fmt.format(floor)]
    for v in values:
        cells += [fmt.format(v), ratio(v, floor)]
    print(f"| {name} ({unit}) | " + " | ".join(cells) + " |")


def header():
    cols = ["raw"] + [c for b, _ in builds for c in (b, f"{b} / raw")]
    print("| measure | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))


# --- callgrind: instructions of every traced process, servers skipped -----------------------
def instructions(argv):
    logs = os.path.join(work, f"cg-{time.monotonic_ns()}")
    os.makedirs(logs)
    # A supervisor forked from the zygote starts with the zygote's count so far (callgrind
    # copies it at the fork); zeroing where the fork becomes a supervisor counts its own.
    run(["valgrind", "--tool=callgrind", "--zero-before=*become_supervisor*", "--trace-children=yes",
         "--trace-children-skip=*python*,*node*,*mcp-fake-server*", "--callgrind-out-file=/dev/null",
         f"--log-file={logs}/%p.log"] + argv)
    total, procs = 0, 0
    for log in glob.glob(f"{logs}/*.log"):
        with open(log) as f:
            m = re.search(r"Collected : (\d+)", f.read())
        if m:
            total, procs = total + int(m.group(1)), procs + 1
    return total, procs


# --- memory: peak RSS of the client, PSS of each of its direct children ---------------------
def status_kib(pid, field, path="status"):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


def children(pid):
    kids = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(task) as f:
                kids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return kids


def supervisors(pid):
    """The process's direct children, and the children of a zygote among them (the host's
    supervisors are forked from one); for the raw client, its servers."""
    kids = children(pid)
    for kid in list(kids):
        try:
            with open(f"/proc/{kid}/cmdline", "rb") as f:
                if b"__zygote" in f.read():
                    kids += children(kid)
        except OSError:
            pass
    return kids


def memory(argv):
    """Peak RSS of the process (MiB) and the largest PSS any of its supervisors (or, for the
    raw client, its direct children) reached (MiB)."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_of(argv))
    peak, child_pss = 0, {}
    while p.poll() is None:
        peak = max(peak, status_kib(p.pid, "VmHWM") or 0)
        for kid in supervisors(p.pid):
            pss = status_kib(kid, "Pss", "smaps_rollup")
            if pss is not None:
                child_pss[kid] = max(child_pss.get(kid, 0), pss)
        time.sleep(0.005)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}")
    return peak / 1024, (max(child_pss.values()) / 1024 if child_pss else 0), len(child_pss)


# --- an agent turn: host CPU against the calls made so far, in one run ----------------------
def thread_cpu_ns(pid):
    """CPU time of every live thread of `pid` (`schedstat`: nanoseconds, not clock ticks)."""
    total = 0
    for stat in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(stat) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def turn_argv(binary, url, config, n):
    """One `run` whose turn makes `n` calls, one per model step."""
    return [binary, "run", "-p", f"repeat {n} m0__echo {ECHO}", "-m", "openai-compatible:fake",
            "--base-url", url, "--allowed-tools", "m0__echo", "--max-steps", str(n + 5),
            "--context-window", "1000000000"] + host_args(config)


def turn_instructions(binary, url, config, a, b):
    """The host's instructions per step between a turn of `a` calls and one of `b` (the
    model's own work not counted: it is not traced). Repeatable where the CPU times above
    are not: a run of calls 1,800 → 2,000 against 100 → 300 says whether a step's cost
    grows with the turn."""
    return (instructions(turn_argv(binary, url, config, b))[0]
            - instructions(turn_argv(binary, url, config, a))[0]) / (b - a)


def turn_cpu(binary, url, config, n, marks):
    """Runs one turn of `n` calls and returns the host's CPU seconds at each call count in
    `marks`, read when the audit log (one line per call) first reaches it. Both ends of a
    stretch come from the same process, so a run's noise does not land on one end only."""
    env = env_of([binary])
    audit = os.path.join(env["XDG_DATA_HOME"], "mcp-host", "audit.jsonl")
    try:
        os.remove(audit)
    except OSError:
        pass
    argv = turn_argv(binary, url, config, n)
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()))
    reader.start()
    seen, calls, at = 0, 0, {}
    pending = sorted(marks)
    while p.poll() is None and pending:
        cpu = thread_cpu_ns(p.pid)
        try:
            with open(audit, "rb") as f:
                f.seek(seen)
                chunk = f.read()
            seen += len(chunk)
            calls += chunk.count(b"\n")
        except OSError:
            pass
        while pending and calls >= pending[0]:
            at[pending.pop(0)] = cpu / 1e9
        time.sleep(0.001)
    p.wait()
    reader.join()
    if p.returncode != 0 or pending:
        sys.exit(f"failed: {' '.join(argv)} (marks not reached: {pending})\n"
                 f"{err[0].decode(errors='replace')}")
    return at


def main():
    one, ten, fifty = minimal_config(1), minimal_config(10), minimal_config(50)
    seven = os.path.join(work, "seven.json")
    print(f"Machine: {os.cpu_count()} CPUs; {runs} runs per wall-time median.\n")
    header()
    for n, config in [(1, one), (10, ten), (50, fifty)]:
        floor = median_wall([raw, "list", config])
        hosts = [median_wall([b, "tools"] + host_args(config)) for _, b in builds]
        row(f"start → all tools listed, {n} servers", floor * 1e3, [h * 1e3 for h in hosts], "ms")

    calls = 2000
    # Then again with the client and its server held to one vCPU: on an idle VM most of a
    # call's CPU is the hypervisor putting a vCPU to sleep and waking it (docs/benchmarks.md,
    # the fourteenth section), which sharing one vCPU takes away from both clients.
    for pinned, where in [([], ""), (["taskset", "-c", "1"], ", client and server on one vCPU")]:
        floor = json.loads(run(pinned + [raw, "calls", str(calls), "echo", ECHO, "--", python,
                                         minimal]).stdout)
        hosts = []
        for _, b in builds:
            err = run(pinned + [b, "call", "m0", "echo", "--args", ECHO, "--repeat", str(calls)]
                      + host_args(one)).stderr
            m = re.search(r"p50 (\d+) µs.*host CPU (\d+) µs per call", err)
            if not m:
                sys.exit(f"no timing in: {err}")
            hosts.append((int(m.group(1)), int(m.group(2))))
        row(f"sequential tools/call p50{where}", floor["p50_us"], [h[0] for h in hosts], "µs",
            "{:.0f}")
        row(f"client CPU per call{where}", floor["cpu_per_call_us"], [h[1] for h in hosts], "µs",
            "{:.0f}")

    floor_rss, _, _ = memory([raw, "list", seven])
    mems = [memory([b, "tools"] + host_args(seven)) for _, b in builds]
    row("peak RSS holding the 7 real servers", floor_rss, [m[0] for m in mems], "MiB")
    print("| largest supervisor PSS (MiB) | - | " + " | ".join(
        f"{m[1]:.2f} ({m[2]} procs) | -" for m in mems) + " |")

    if not quick:
        ten, fifty, one = (minimal_config(n, "off") for n in (10, 50, 1))
        for n, config in [(10, ten), (50, fifty)]:
            floor_i, _ = instructions([raw, "list", config])
            hosts_i = [instructions([b, "tools"] + host_args(config)) for _, b in builds]
            row(f"instructions, start with {n} servers (host + supervisors)", floor_i / 1e6,
                [h[0] / 1e6 for h in hosts_i], "M")
        low, high = 100, 1000
        per = lambda argv_for: (instructions(argv_for(high))[0] - instructions(argv_for(low))[0]) / (high - low)
        floor_c = per(lambda k: [raw, "calls", str(k), "echo", ECHO, "--", python, minimal])
        hosts_c = [per(lambda k, b=b: [b, "call", "m0", "echo", "--args", ECHO, "--repeat", str(k)]
                       + host_args(one)) for _, b in builds]
        row("instructions per call", floor_c / 1e3, [h / 1e3 for h in hosts_c], "k", "{:.0f}")
        # A large result: the testkit server's `big` tool answers with 4 MB of numbered lines.
        fake = os.path.join(release, "mcp-fake-server")
        big_config = os.path.join(work, "big.json")
        with open(big_config, "w") as f:
            json.dump({"mcpServers": {"f": {"command": fake, "sandbox": "off"}}}, f)
        big = '{"bytes":4000000}'
        per_big = lambda argv_for: (instructions(argv_for(3))[0] - instructions(argv_for(1))[0]) / 2
        floor_b = per_big(lambda k: [raw, "calls", str(k), "big", big, "--", fake])
        hosts_b = [per_big(lambda k, b=b: [b, "call", "f", "big", "--args", big, "--repeat", str(k)]
                           + host_args(big_config)) for _, b in builds]
        row("instructions per call answered with 4 MB of text", floor_b / 1e6,
            [h / 1e6 for h in hosts_b], "M")

    one = minimal_config(1)
    model = subprocess.Popen([fake_model], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = model.stdout.readline().split("listening on ")[1].strip() + "/v1"
        print("\nAn agent turn of one call per step (host CPU per call, µs; the scripted model's"
              " own work is not counted):\n")
        print("| build | calls 20 → 200 | calls 1,800 → 1,990 | end / start |")
        print("|---|---|---|---|")
        for name, b in builds:
            t = turn_cpu(b, url, one, 2000, (20, 200, 1800, 1990))
            start = (t[200] - t[20]) / 180 * 1e6
            end = (t[1990] - t[1800]) / 190 * 1e6
            print(f"| {name} | {start:.0f} | {end:.0f} | {end / start:.2f} |")
        if not quick:
            print("\nThe same turn in instructions (callgrind, the host only: k per step):\n")
            print("| build | calls 100 → 300 | calls 1,800 → 2,000 | end / start |")
            print("|---|---|---|---|")
            unconfined = minimal_config(1, "off")
            for name, b in builds:
                start = turn_instructions(b, url, unconfined, 100, 300) / 1e3
                end = turn_instructions(b, url, unconfined, 1800, 2000) / 1e3
                print(f"| {name} | {start:.1f} | {end:.1f} | {end / start:.2f} |")
    finally:
        model.kill()


main()
