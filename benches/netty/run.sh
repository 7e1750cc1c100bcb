#!/usr/bin/env bash
# Netty's HashedWheelTimer beside the driver's workloads: the peer rows of BENCHMARKS.md.
#   bash benches/netty/run.sh [THREADS] [OPS]            rpc-churn (RpcChurn.java)
#   bash benches/netty/run.sh storm [THREADS] [TIMERS]   storm (Storm.java), on a 4 GiB heap
# JAVA_OPTS is passed to the storm's java after its own flags, so it can override them.
# Needs a JDK (javac, java) and Netty's common jar: Debian's libnetty-java puts it in
# /usr/share/java; NETTY_JAR names another.
set -euo pipefail
jar=${NETTY_JAR:-/usr/share/java/netty-common.jar}
[[ -f $jar ]] || { echo "no Netty jar at $jar: apt-get install libnetty-java, or set NETTY_JAR" >&2; exit 1; }
here=$(dirname "$0")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [[ ${1:-} == storm ]]; then
    javac -d "$out" -cp "$jar" "$here/Storm.java"
    # A young generation big enough that no GC runs while the timers are scheduled and fire
    # (G1 sizes it at ~200 MB and copies every live timer), and a heap touched up front, as a
    # long-running server's is: first-touch page faults otherwise double the scheduling time.
    java -Xms4g -Xmx4g -Xmn2g -XX:+AlwaysPreTouch ${JAVA_OPTS:-} -cp "$out:$jar" Storm "${2:-2}" "${3:-1000000}"
else
    javac -d "$out" -cp "$jar" "$here/RpcChurn.java"
    java -cp "$out:$jar" RpcChurn "${1:-1}" "${2:-5000000}"
fi
