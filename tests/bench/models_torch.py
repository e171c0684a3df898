"""PyTorch reference for bench_models, on the CPU with a given number of threads: ResNet-18
inference (eval, no_grad) at 224 x 224 for batches of 1 and 16, ResNet-50's and MobileNetV2's
for a batch of 1, GPT-2 small generating `new` tokens greedily after a `prompt`-token prompt
with a KV cache, and BERT-base on one sequence of 128 tokens: torchvision's and transformers'
own models where both are installed (eager attention), else the same architectures as
tests/reference/make_reference.py writes them (then without ResNet-50 and BERT). Prints one
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
import warnings

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


def upstream_models():
    """torchvision's and transformers' own models when both are installed, else None."""
    try:
        import torchvision.models as tv
        import transformers
        from transformers import BertConfig, BertModel, GPT2Config
        from transformers import GPT2LMHeadModel as HFGPT2
    except ImportError:
        return None
    # the cache's keyword differs between transformers versions: no deprecation notes
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    gpt = HFGPT2(GPT2Config())
    gpt.config._attn_implementation = "eager"
    bert = BertModel(BertConfig())
    bert.config._attn_implementation = "eager"
    return {"resnet18": tv.resnet18(), "resnet50": tv.resnet50(),
            "mobilenet_v2": tv.mobilenet_v2(), "gpt2": gpt, "bert": bert}


def generate(gpt, prompt, new, upstream):
    """Greedy decoding of `new` tokens after prompt with the KV cache."""
    if not upstream:
        past, ids = [], prompt
        for _ in range(new):
            ids = cached_step(gpt, ids, past)[:, -1].argmax(-1, keepdim=True)
        return
    out = gpt(prompt, use_cache=True)
    for _ in range(new):
        ids = out.logits[:, -1].argmax(-1, keepdim=True)
        out = gpt(ids, past_key_values=out.past_key_values, use_cache=True)


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

    def timed(name, fn, repeats, **extra):
        fn()  # warm-up
        sync()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        print(json.dumps({"case": name, "torch": torch.__version__, "threads": a.threads,
                          "device": a.device, "time_s": t,
                          **{k: v(t) for k, v in extra.items()}}))

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    up = upstream_models()
    if up is None:  # the same architectures, written out in make_reference.py
        up = {"resnet18": ResNet([2, 2, 2, 2], 64, 1000), "mobilenet_v2": MobileNetV2(),
              "gpt2": GPT2LMHeadModel({"vocab_size": 50257, "n_positions": 1024,
                                       "n_embd": 768, "n_layer": 12, "n_head": 12,
                                       "layer_norm_epsilon": 1e-5})}
        upstream = False
    else:
        upstream = True
    with torch.no_grad():
        for name, batch in (("resnet18", 1), ("resnet18", 16), ("resnet50", 1),
                            ("mobilenet_v2", 1)):
            if name not in up:
                continue
            net = up[name].eval().to(dev)
            x = torch.randn(batch, 3, 224, 224, device=dev)
            timed("%s_b%d" % (name, batch), lambda: net(x), a.repeats)
        gpt = up["gpt2"].eval().to(dev)
        prompt = torch.randint(0, 50257, (1, a.prompt)).to(dev)
        timed("gpt2_generate", lambda: generate(gpt, prompt, a.new, upstream),
              max(1, a.repeats - 1), tokens_per_s=lambda t: a.new / t)
        if "bert" in up:
            bert = up["bert"].eval().to(dev)
            ids = torch.randint(0, 30522, (1, 128)).to(dev)
            timed("bert_b1_t128", lambda: bert(input_ids=ids), a.repeats)


if __name__ == "__main__":
    main()
