"""The chain.Chain messages (examples/chain/chain.proto) in protobuf's wire format, by hand:
no generated code, so that the test needs grpcio alone."""

NO_DEADLINE = 2**64 - 1


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(buf, i):
    n = shift = 0
    while True:
        byte = buf[i]
        i += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, i


def fields(buf):
    """Each (field number, wire type, value) of a message: varints and length-delimited."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 2:
            length, i = read_varint(buf, i)
            value, i = buf[i:i + length], i + length
        else:
            raise ValueError(f"wire type {wire} is not used here")
        yield number, wire, value


def encode_work(work_ms, hops):
    out = b""
    if work_ms:
        out += b"\x08" + varint(work_ms)
    if hops:
        out += b"\x10" + varint(hops)
    return out


def decode_work(buf):
    work = {1: 0, 2: 0}
    for number, _, value in fields(buf):
        work[number] = value
    return work[1], work[2]


def encode_done(budgets_us):
    packed = b"".join(varint(b) for b in budgets_us)
    return b"\x0a" + varint(len(packed)) + packed if packed else b""


def decode_done(buf):
    budgets = []
    for number, wire, value in fields(buf):
        if number != 1:
            continue
        if wire == 0:
            budgets.append(value)
        else:
            i = 0
            while i < len(value):
                budget, i = read_varint(value, i)
                budgets.append(budget)
    return budgets
