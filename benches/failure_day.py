#!/usr/bin/env python3
"""A server's failure day under a load generator this project did not write (h2load, from
Debian's nghttp2-client), at a fixed request rate: a phase healthy, a phase with the backend
hung (every request to it runs into its deadline), a phase recovered. Run by
benches/failure-day.sh, which builds the servers; see BENCHMARKS.md for the figures.

Targets: `tonic`, the chain example's frontend over HTTP/2 (gRPC, calling a backend process
that hangs), and `http`, the http_server example over HTTP/1.1 (its `/deep` requests hang).
Each is built twice: `shardwheel` (its deadlines on the engine) and `tokio` (tonic's own
server timeout and tower's timeout, or tower's timeout layer, on tokio's timer). Two h2load
processes load each server, one with requests that never touch the backend (`quick`, whose
latency is the healthy requests') and one with requests that do (`deep`); each request
carries a `grpc-timeout` of --deadline-ms.

Prints a JSON line per run, then one of medians over the rounds per target and build, and
the ratios of the shardwheel build's to the tokio build's.
"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "shardwheel-tonic", "tests", "grpcio"))
import chain_pb  # noqa: E402  (the hand-written messages of the chain service)

PHASES = ("healthy", "hung", "recovered")
TICKS = os.sysconf("SC_CLK_TCK")


def start(command):
    """Starts a server; returns its process and the address it printed."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline().strip()
    if not line.startswith("listening on "):
        process.kill()
        raise SystemExit(f"{command[0]} did not start: {line!r}")
    return process, line.removeprefix("listening on ")


def usage(pid):
    """A process's CPU seconds so far, resident set and its peak, in MB."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    memory = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                memory[name] = int(value.split()[0]) / 1024
    return cpu, memory["VmRSS"], memory["VmHWM"]


def grpc_body(path, work_ms, hops):
    message = chain_pb.encode_work(work_ms, hops)
    with open(path, "wb") as body:
        body.write(struct.pack(">BI", 0, len(message)) + message)


def h2load(uri, rate, clients, seconds, log, h1, deadline_ms, body=None):
    command = [
        "h2load", "-c", str(clients), "-m", "1" if h1 else "64",
        "--rps", f"{rate / clients:.3f}", "-D", str(seconds), "--log-file", log,
        "-H", f"grpc-timeout: {deadline_ms}m",
    ]
    if h1:
        command.append("--h1")
    if body:
        command += ["-d", body, "-H", "content-type: application/grpc", "-H", "te: trailers"]
    return subprocess.Popen(command + [uri], stdout=subprocess.PIPE, text=True)


def read_log(path):
    """(start in seconds since the epoch, HTTP status or -1, seconds taken) per request."""
    rows = []
    with open(path) as log:
        for line in log:
            start, status, took = line.split("\t")[:3]
            rows.append((int(start) / 1e6, int(status), int(took) / 1e6))
    return rows


def percentile(sorted_values, q):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def ms(seconds):
    return None if seconds is None else round(seconds * 1e3, 3)


def run(target, build, opts, binaries, scratch):
    phase = opts.phase_s
    t0 = time.time() + 3
    hang_at_ms = str(int((t0 + phase) * 1000))
    processes = []
    if target == "tonic":
        backend, backend_at = start([
            binaries["chain"], "serve", "--role", "backend",
            "--hang-at-ms", hang_at_ms, "--hang-for-s", str(phase)])
        processes.append(backend)
        server, at = start([
            binaries["chain"], "serve", "--role", "frontend", "--backend", backend_at,
            "--deadlines", build, "--own-ms", "1000"])
        quick_body, deep_body = f"{scratch}/quick.bin", f"{scratch}/deep.bin"
        grpc_body(quick_body, 0, 0)
        grpc_body(deep_body, 1, 1)
        uris = (f"http://{at}/chain.Chain/Call",) * 2
        bodies, h1, clients = (quick_body, deep_body), False, (4, 4)
    else:
        server, at = start([
            binaries["http_server"], "--serve", "127.0.0.1:0",
            "--timeouts", "shardwheel" if build == "shardwheel" else "tower",
            "--timeout-ms", str(opts.deadline_ms), "--client-timeout-ms", str(opts.deadline_ms),
            "--work-ms", "1", "--slow-percent", "0", "--idle-ms", "10000",
            "--header-read-ms", "20000", "--hang-at-ms", hang_at_ms, "--hang-for-s", str(phase)])
        uris = (f"http://{at}/quick", f"http://{at}/deep")
        bodies, h1, clients = (None, None), True, (16, 128)
    processes.append(server)
    try:
        time.sleep(max(0.0, t0 - time.time()))
        logs = (f"{scratch}/quick.log", f"{scratch}/deep.log")
        rates = (opts.rate * (1 - opts.deep_share), opts.rate * opts.deep_share)
        loads = [
            h2load(uri, rate, n, 3 * phase + 2, log, h1, opts.deadline_ms, body)
            for uri, rate, n, log, body in zip(uris, rates, clients, logs, bodies)]
        samples = []
        for i in range(4):
            time.sleep(max(0.0, t0 + i * phase - time.time()))
            samples.append(usage(server.pid))
        for load in loads:
            load.wait()
    finally:
        for process in processes:
            process.kill()
            process.wait()
    quick, deep = read_log(logs[0]), read_log(logs[1])
    result = {"target": target, "build": build}
    for i, name in enumerate(PHASES):
        lo, hi = t0 + i * phase, t0 + (i + 1) * phase

        def within(rows):
            return [row for row in rows if lo <= row[0] < hi]

        q, d = within(quick), within(deep)
        sent = len(q) + len(d)
        answered = sum(1 for row in q + d if row[1] > 0)
        healthy = sorted(row[2] for row in q if row[1] == 200)
        deadline = opts.deadline_ms / 1e3
        timed_out = sorted(row[2] - deadline for row in d if row[2] >= deadline * 0.99)
        cpu = samples[i + 1][0] - samples[i][0]
        result[name] = {
            "sent": sent,
            "answered": answered,
            "lost": sent - answered,
            "healthy_p50_ms": ms(percentile(healthy, 0.50)),
            "healthy_p99_ms": ms(percentile(healthy, 0.99)),
            "healthy_p999_ms": ms(percentile(healthy, 0.999)),
            "timed_out": len(timed_out),
            "late_p99_ms": ms(percentile(timed_out, 0.99)),
            "cpu_us_per_request": round(cpu / max(sent, 1) * 1e6, 2),
            "rss_mb": round(samples[i + 1][1], 1),
        }
    result["peak_rss_mb"] = round(samples[-1][2], 1)
    return result


def summary(runs):
    """Medians over the rounds, per target and build, and the builds' ratios."""
    lines = []
    keyed = {}
    for result in runs:
        keyed.setdefault((result["target"], result["build"]), []).append(result)
    for (target, build), results in sorted(keyed.items()):
        line = {"target": target, "build": build, "rounds": len(results)}
        for name in PHASES:
            line[name] = {}
            for key in results[0][name]:
                values = [r[name][key] for r in results if r[name][key] is not None]
                line[name][key] = statistics.median(values) if values else None
        line["peak_rss_mb"] = statistics.median(r["peak_rss_mb"] for r in results)
        lines.append(line)
    for target in sorted({target for target, _ in keyed}):
        mine = next((l for l in lines if l["target"] == target and l["build"] == "shardwheel"), None)
        theirs = next((l for l in lines if l["target"] == target and l["build"] == "tokio"), None)
        if mine and theirs:
            ratio = {"target": target, "build": "shardwheel/tokio"}
            for name in PHASES:
                ratio[name] = {}
                for key in ("healthy_p99_ms", "cpu_us_per_request", "rss_mb", "late_p99_ms"):
                    a, b = mine[name][key], theirs[name][key]
                    ratio[name][key] = round(a / b, 3) if a and b else None
            lines.append(ratio)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="tonic,http")
    parser.add_argument("--builds", default="shardwheel,tokio")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phase-s", type=int, default=10)
    parser.add_argument("--rate", type=float, default=1000, help="requests a second, in all")
    parser.add_argument("--deep-share", type=float, default=0.5)
    parser.add_argument("--deadline-ms", type=int, default=100)
    parser.add_argument("--chain", required=True, help="the chain example's binary")
    parser.add_argument("--http-server", required=True, help="the http_server example's binary")
    opts = parser.parse_args()
    binaries = {"chain": opts.chain, "http_server": opts.http_server}
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(opts.rounds):
            for target in opts.targets.split(","):
                for build in opts.builds.split(","):
                    result = run(target, build, opts, binaries, scratch)
                    print(json.dumps(result), flush=True)
                    runs.append(result)
    for line in summary(runs):
        print(json.dumps({"summary": line}), flush=True)
    lost = sum(r[p]["lost"] for r in runs for p in PHASES)
    if lost:
        print(f"failure-day: {lost} requests lost", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
