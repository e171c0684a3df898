"""PyTorch reference for bench_models, on the CPU with a given number of threads: ResNet-18
inference (eval, no_grad) at 224 x 224 for batches of 1 and 16, MobileNetV2's for a batch of
1, and GPT-2 small generating
`new` tokens greedily after a `prompt`-token prompt with a KV cache, the models of
tests/reference/make_reference.py (torchvision's and Hugging Face's architectures). Prints one
JSON line per case:
{"case": "resnet18_b1", "torch": "1.13.0", "threads": 2, "time_s": ...}
{"case": "gpt2_generate", "torch": "1.13.0", "threads": 2, "tokens_per_s": ..., "time_s": ...}
usage: models_torch.py --threads N --repeats R [--prompt P --new T] [--device cpu|cuda]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from make_reference import GPT2LMHeadModel, MobileNetV2, ResNet  # noqa: E402


def cached_step(model, ids, past):
    """The logits of ids after the cached keys and values `past` (a list, extended)."""
    t = model.transformer
    start = past[0][0].shape[2] if past else 0
    h = t.wte(ids) + t.wpe(torch.arange(start, start + ids.shape[1], device=ids.device))
    new = []
    for i, block in enumerate(t.h):
        a, x = block.attn, block.ln_1(h)
        B, T, C = x.shape
        q, k, v = a.c_attn(x).split(C, dim=2)
        q, k, v = (z.view(B, T, a.n_head, C // a.n_head).transpose(1, 2) for z in (q, k, v))
        if past:
            k, v = torch.cat([past[i][0], k], 2), torch.cat([past[i][1], v], 2)
        new.append((k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(C // a.n_head)
        if T > 1:
            s = s.masked_fill(~torch.ones(T, k.shape[2], dtype=torch.bool, device=s.device).tril(start), float("-inf"))
        y = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)
        h = h + a.c_proj(y)
        h = h + block.mlp(block.ln_2(h))
    past[:] = new
    return model.lm_head(t.ln_f(h))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--prompt", type=int, default=32)
    p.add_argument("--new", type=int, default=128)
    p.add_argument("--device", default="cpu", help="cpu, or cuda for scripts/gpu-check.sh")
    a = p.parse_args()
    dev = torch.device(a.device)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    with torch.no_grad():
        def image_case(name, net, batch):
            x = torch.randn(batch, 3, 224, 224, device=dev)
            net(x)  # warm-up
            sync()
            times = []
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                net(x)
                sync()
                times.append(time.perf_counter() - t0)
            print(json.dumps({"case": name, "torch": torch.__version__, "threads": a.threads,
                              "device": a.device, "time_s": statistics.median(times)}))

        net = ResNet([2, 2, 2, 2], 64, 1000).eval().to(dev)
        for batch in (1, 16):
            image_case("resnet18_b%d" % batch, net, batch)
        image_case("mobilenet_v2_b1", MobileNetV2().eval().to(dev), 1)
        gpt = GPT2LMHeadModel({"vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
                               "n_layer": 12, "n_head": 12, "layer_norm_epsilon": 1e-5}).eval()
        gpt = gpt.to(dev)
        prompt = torch.randint(0, 50257, (1, a.prompt)).to(dev)
        times = []
        for _ in range(max(1, a.repeats - 1)):
            past, ids = [], prompt
            t0 = time.perf_counter()
            for _ in range(a.new):
                ids = cached_step(gpt, ids, past)[:, -1].argmax(-1, keepdim=True)
            sync()
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        print(json.dumps({"case": "gpt2_generate", "torch": torch.__version__,
                          "threads": a.threads, "device": a.device, "tokens_per_s": a.new / t,
                          "time_s": t}))


if __name__ == "__main__":
    main()
