#!/usr/bin/env python3
"""Derive Quiver's static token table from the PyPI package `wordllama`.

    pip download --no-deps wordllama==0.4.0.post1 -d /tmp/wl
    python3 models/wordllama/derive.py /tmp/wl/wordllama-0.4.0.post1-*.whl

Checks the wheel's SHA-256, then writes beside this script:

- `table.safetensors`: `embeddings` I8 [32000 x DIM] and `scales` F32 [32000],
  the first DIM columns of wordllama's `l2_supercat_256` table (trained with
  Matryoshka losses at 64/128/256 dimensions, so a prefix is itself an
  embedding), each row quantised to int8 with its own scale.
- `tokenizer.json`: the package's tokenizer (Llama 2's BPE vocabulary),
  re-serialised without indentation.

Standard library only, so it runs wherever Python 3.9+ does. Deterministic:
the same wheel gives the same bytes.
"""

import hashlib
import json
import struct
import sys
import zipfile
from array import array
from pathlib import Path

WHEEL_SHA256 = "42c2c88907ace0b0681ac6f9092d6a300a6409a5d2d61071a3fb5e7159370c97"
TABLE = "wordllama/weights/l2_supercat_256.safetensors"
TOKENIZER = "wordllama/tokenizers/l2_supercat_tokenizer_config.json"
DIM = 256


def read_table(blob):
    (header_len,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8 : 8 + header_len])
    info = header["embedding.weight"]
    assert info["dtype"] == "F16", info
    rows, cols = info["shape"]
    start, end = info["data_offsets"]
    data = blob[8 + header_len + start : 8 + header_len + end]
    values = struct.unpack(f"<{rows * cols}e", data)
    return rows, cols, values


def quantise(rows, cols, values, dim):
    table = array("b")
    scales = array("f")
    for r in range(rows):
        row = values[r * cols : r * cols + dim]
        peak = max(abs(v) for v in row) or 1.0
        scale = peak / 127.0
        scales.append(scale)
        table.extend(max(-127, min(127, round(v / scale))) for v in row)
    return table, scales


def safetensors(tensors):
    header, offset, payload = {}, 0, b""
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        payload += data
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + payload


def main():
    wheel = Path(sys.argv[1])
    dim = int(sys.argv[2]) if len(sys.argv) > 2 else DIM
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {WHEEL_SHA256} (wordllama 0.4.0.post1)")
    with zipfile.ZipFile(wheel) as z:
        rows, cols, values = read_table(z.read(TABLE))
        tokenizer = json.loads(z.read(TOKENIZER))
    assert dim <= cols
    table, scales = quantise(rows, cols, values, dim)
    if sys.byteorder != "little":
        table.byteswap()
        scales.byteswap()
    out = Path(__file__).resolve().parent
    (out / "table.safetensors").write_bytes(
        safetensors(
            [
                ("embeddings", "I8", [rows, dim], table.tobytes()),
                ("scales", "F32", [rows], scales.tobytes()),
            ]
        )
    )
    (out / "tokenizer.json").write_text(json.dumps(tokenizer, separators=(",", ":"), ensure_ascii=False))
    print(f"wrote {rows} x {dim} int8 table and tokenizer to {out}")


if __name__ == "__main__":
    main()
