"""PyTorch interop for the io suite, in the safetensors format written by hand (struct, json,
numpy), so that no `safetensors` package is needed. Run with a Python that has torch
(Debian's python3-torch: /usr/bin/python3).

  make [FILE]   writes nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)) after
                torch.manual_seed(0): its state_dict, an "input" of shape (4, 6) and PyTorch's
                "expected" output, to FILE (default: torch_mlp.safetensors next to this script)
  check FILE    reads a file cltensor wrote (the same architecture's state_dict, with "input"
                and "expected" when present), loads it strictly into the PyTorch model and checks
                the forward output against "expected" within 1e-5; exits 1 on a mismatch

The io suite writes such a file when CLT_TEST_TORCH_OUT names one:
  CLT_TEST_TORCH_OUT=/tmp/clt_mlp.safetensors build/tests/clt_tests io
  /usr/bin/python3 tests/data/make_safetensors.py check /tmp/clt_mlp.safetensors
"""
import json
import os
import struct
import sys

import numpy as np
import torch
from torch import nn

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
          torch.bfloat16: "BF16", torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8",
          torch.bool: "BOOL"}
NUMPY = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I32": np.int32,
         "I64": np.int64, "U8": np.uint8, "BOOL": np.bool_}


def model():
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def save(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16
            data = t.view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            data = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data, tensors = raw[8 + n:], {}
    for name, h in header.items():
        begin, end = h["data_offsets"]
        if h["dtype"] == "BF16":
            a = np.frombuffer(data[begin:end], dtype="<i2").copy()
            t = torch.from_numpy(a).view(torch.bfloat16)
        else:
            a = np.frombuffer(data[begin:end], dtype=np.dtype(NUMPY[h["dtype"]]).newbyteorder("<"))
            t = torch.from_numpy(a.copy())
        tensors[name] = t.reshape(h["shape"])
    return tensors, metadata


def make(path):
    torch.manual_seed(0)
    m = model()
    x = torch.randn(4, 6)
    with torch.no_grad():
        y = m(x)
    tensors = dict(m.state_dict())
    tensors["input"], tensors["expected"] = x, y
    save(path, tensors, {"format": "pt", "source": "tests/data/make_safetensors.py"})
    print(f"wrote {path}")


def check(path):
    tensors, metadata = load(path)
    x, expected = tensors.pop("input", None), tensors.pop("expected", None)
    m = model()
    m.load_state_dict(tensors, strict=True)
    print(f"{path}: {len(tensors)} tensors load into the PyTorch model; metadata {metadata}")
    if x is not None and expected is not None:
        with torch.no_grad():
            y = m(x)
        err = (y - expected).abs().max().item()
        print(f"largest difference from cltensor's output: {err:.3g}")
        if err > 1e-5:
            sys.exit(1)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "make"
    if mode == "make":
        make(sys.argv[2] if len(sys.argv) > 2 else
             os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_mlp.safetensors"))
    elif mode == "check" and len(sys.argv) == 3:
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
