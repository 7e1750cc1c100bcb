"""A chain.Chain backend on grpcio (gRPC's C core): answers each call with the time its
deadline left it on arrival (`context.time_remaining()`), after working `work_ms` (at most a
minute). Prints `listening on <port>`, then serves until killed."""

import concurrent.futures
import sys
import time

import grpc

import chain_pb


def call(request, context):
    work_ms, _ = chain_pb.decode_work(request)
    left = context.time_remaining()
    budget = chain_pb.NO_DEADLINE if left is None else int(left * 1e6)
    time.sleep(min(work_ms, 60_000) / 1000)
    return chain_pb.encode_done([budget])


def main():
    handler = grpc.method_handlers_generic_handler(
        "chain.Chain", {"Call": grpc.unary_unary_rpc_method_handler(call)}
    )
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening on {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    sys.exit(main())
