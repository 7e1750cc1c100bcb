"""A chain.Chain client on grpcio: one call to ADDRESS with a deadline of TIMEOUT seconds
(grpcio sends it as `grpc-timeout`), WORK_MS of work and HOPS hops; prints one JSON line: the
status code's name, the budgets each hop reported, and the milliseconds the call took."""

import json
import sys
import time

import grpc

import chain_pb


def main():
    address, timeout, work_ms, hops = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with grpc.insecure_channel(address) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        call = channel.unary_unary("/chain.Chain/Call")
        start = time.monotonic()
        try:
            answer = call(chain_pb.encode_work(work_ms, hops), timeout=timeout)
            code, budgets = "OK", chain_pb.decode_done(answer)
        except grpc.RpcError as error:
            code, budgets = error.code().name, []
        elapsed_ms = (time.monotonic() - start) * 1e3
    print(json.dumps({"code": code, "budgets_us": budgets, "elapsed_ms": elapsed_ms}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
