#!/usr/bin/env python3
"""Hugging Face's tokenizer on bench_tokenizer's text (tests/data/tokenizer's corpus repeated to
about SIZE megabytes): tokenizers.Tokenizer.encode and GPT2TokenizerFast.encode of the whole
text, and tokenizers' encode_batch of its lines, the median of 3 runs each, in MB/s.

    python tokenizer_hf.py [FOLDER [SIZE]]   (a Python with tokenizers and transformers)
"""
import os
import sys
import time

from tokenizers import Tokenizer
from transformers import GPT2TokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "data", "tokenizer")
size = float(sys.argv[2]) if len(sys.argv) > 2 else 10
with open(os.path.join(folder, "corpus.txt"), encoding="utf-8", newline="") as f:
    corpus = f.read()
text = corpus * (int(size * 1e6 / len(corpus.encode())) + 1)
lines = text.splitlines(keepends=True)
n = len(text.encode())
raw = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
fast = GPT2TokenizerFast.from_pretrained(folder)
for name, run in [
        ("tokenizers.Tokenizer.encode", lambda: raw.encode(text, add_special_tokens=False)),
        ("GPT2TokenizerFast.encode", lambda: fast.encode(text, add_special_tokens=False)),
        ("tokenizers.Tokenizer.encode_batch of the lines",
         lambda: raw.encode_batch(lines, add_special_tokens=False))]:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    print(f"{name}: {n} bytes, {n / sorted(times)[1] / 1e6:.2f} MB/s")
