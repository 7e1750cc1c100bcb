#!/usr/bin/env bash
# Netty's HashedWheelTimer on the rpc-churn loop: the peer row of BENCHMARKS.md.
#   bash benches/netty/run.sh [THREADS] [OPS]
# Needs a JDK (javac, java) and Netty's common jar: Debian's libnetty-java puts it in
# /usr/share/java; NETTY_JAR names another.
set -euo pipefail
jar=${NETTY_JAR:-/usr/share/java/netty-common.jar}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
javac -d "$out" -cp "$jar" "$(dirname "$0")/RpcChurn.java"
java -cp "$out:$jar" RpcChurn "${1:-1}" "${2:-5000000}"
