#!/usr/bin/env bash
# The many-core check: the scaling matrix, the five workloads, a storm and a spike, on a
# driver built elsewhere (`cargo build --release`), in about six minutes on 16 cpus. Writes
# the machine's description, each run's table and JSON lines, and the scaling plot into OUT.
#
#   bash benches/many-core.sh [DRIVER] [OUT]
#
# DRIVER defaults to target/release/shardwheel, OUT to many-core-out. A driver built with
# RUSTFLAGS="--cfg tokio_unstable" also runs tokio's per-worker timer (peer tokio-alt).
set -euo pipefail
driver=${1:-target/release/shardwheel}
out=${2:-many-core-out}
mkdir -p "$out"

{
    echo "cpus: $(nproc)"
    grep -m1 'model name' /proc/cpuinfo || true
    uname -srm
} >"$out/machine.txt"

run() {
    local name=$1
    shift
    echo "== $name: $*" >&2
    local start=$SECONDS
    if ! timeout 240 "$driver" "$@" --json >"$out/$name.txt" 2>"$out/$name.err"; then
        echo "$name failed (see $out/$name.err)" >&2
    fi
    echo "   $((SECONDS - start)) s" >&2
}

# The matrix: 1, 2, 4, ... up to the cpu count, then it and twice it.
run scaling scaling --ops 200000 --plot "$out/scaling.svg"
# rpc-churn at the cpu count, at the size its targets are stated in.
run rpc-churn-cpus rpc-churn --threads "$(nproc)" --ops 2000000
# The five workloads at their defaults, each in a process of its own.
run five
# The failure day: a million, then four million, due at once from 2 threads, on the pool;
# a spike's memory.
run storm storm
run storm-4m storm --timers 4000000
run spike spike
echo "done: $out" >&2
