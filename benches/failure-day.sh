#!/usr/bin/env bash
# The failure day on a real wire (see benches/failure_day.py): builds the two servers in
# release mode, then loads each with h2load (Debian's nghttp2-client) in three phases.
# Arguments go to failure_day.py (--rounds, --phase-s, --rate, --targets, --builds, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v h2load >/dev/null || {
    echo "failure-day: needs h2load (apt-get install nghttp2-client)" >&2
    exit 2
}
cargo build --release --quiet --features tower,hyper --example http_server
cargo build --release --quiet -p shardwheel-tonic --example chain
exec python3 benches/failure_day.py \
    --chain target/release/examples/chain \
    --http-server target/release/examples/http_server "$@"
