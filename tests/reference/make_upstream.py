"""The upstream models' own numbers for the upstream suite (tests/test_upstream.c): torchvision's
resnet18, resnet50 and mobilenet_v2, and transformers' GPT2LMHeadModel and BertModel, run on
weights that both sides compute from one formula, so that no weight file is committed and the
full-size vision models are compared as they are.

  python tests/reference/make_upstream.py [DIR]

needs torch, torchvision and transformers (any Python where `pip install torch torchvision
transformers` worked); CI uses the committed files. It writes into DIR (default: this script's
folder) one file per model, upstream_<name>.safetensors, holding:
  input (and for BERT token_type_ids and attention_mask)   what the model is given
  output tensors: logits (vision, GPT-2), last_hidden_state and pooler_output (BERT), greedy
                  (GPT-2: 20 tokens greedy decoding appends to the first row of input)
  upstream_resnet18_photo.safetensors: ResNet-18's logits and top 5 classes on
                  tests/data/images/photo.jpg through torchvision's ImageNet transform (no input:
                  the image is the input)
  metadata "weights": a JSON object {name: [offset, scale]} for every floating entry of the
                  model's state_dict; entry `name` of n elements holds, element i,
                  (float)(offset + scale * u(name, i)), u of the formula below
  metadata "config": the Hugging Face config.json text (transformers' models)
  metadata "versions": the packages that computed it

The formula: s = FNV-1a 64 of the name's bytes; z = s + (i + 1) * 0x9E3779B97F4A7C15 (mod 2^64)
through splitmix64's finaliser (z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
z *= 0x94D049BB133111EB; z ^= z >> 31); u = (z >> 40) / 2^23 - 1, in [-1, 1), exact in
float32. Scales keep the activations of order 1 (weights sqrt(3 / fan_in), norms' weights
1 +- 0.2, running variances 1 +- 0.5).
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
from make_safetensors import save  # noqa: E402

MASK = (1 << 64) - 1


def fnv1a(name):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def uniform(name, n):
    """u(name, i) for i < n, as float64 (exact: 24 bits)."""
    i = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(fnv1a(name)) + i * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)).astype(np.float64) / float(1 << 23) - 1.0


def rule(name, shape, kind):
    """[offset, scale] for a state_dict entry of a module of `kind`: "norm" (batch and layer
    norm), "embedding", "conv1d" (transformers' Conv1D, weight stored (in, out)) or other."""
    last = name.rsplit(".", 1)[-1]
    if last == "running_var":
        return [1.0, 0.5]
    if last == "running_mean":
        return [0.0, 0.1]
    if kind == "norm" and last == "weight":
        return [1.0, 0.2]
    if len(shape) == 1:
        return [0.0, 0.1]
    if kind == "embedding":
        return [0.0, 0.5]
    fan_in = shape[0] if kind == "conv1d" else int(np.prod(shape[1:]))
    return [0.0, float(np.sqrt(3.0 / fan_in))]


def kind_of(module):
    t = type(module).__name__
    if "Norm" in t:
        return "norm"
    return {"Embedding": "embedding", "Conv1D": "conv1d"}.get(t, "other")


def fill(model):
    """Fills model's floating state_dict from the formula; returns the rules."""
    kinds = {}
    for mname, mod in model.named_modules():
        for pname, _ in list(mod.named_parameters(recurse=False)) + \
                list(mod.named_buffers(recurse=False)):
            kinds[(mname + "." if mname else "") + pname] = kind_of(mod)
    rules, seen = {}, set()
    for name, t in model.state_dict(keep_vars=True).items():
        if not t.is_floating_point() or t.data_ptr() in seen:  # tied: filled once
            continue
        seen.add(t.data_ptr())
        r = rule(name, tuple(t.shape), kinds.get(name, "other"))
        v = (r[0] + r[1] * uniform(name, t.numel())).astype(np.float32)
        with torch.no_grad():
            t.copy_(torch.from_numpy(v).reshape(t.shape))
        rules[name] = r
    return rules


def versions():
    import torchvision
    import transformers
    return "torch %s, torchvision %s, transformers %s" % (
        torch.__version__, torchvision.__version__, transformers.__version__)


def input_image(shape):
    return torch.from_numpy(uniform("input", int(np.prod(shape))).astype(np.float32)
                            ).reshape(shape)


def vision(out, name, ctor, shape):
    model = ctor().eval()
    rules = fill(model)
    x = input_image(shape)
    with torch.no_grad():
        logits = model(x)
    save(os.path.join(out, "upstream_%s.safetensors" % name), {"input": x, "logits": logits},
         {"weights": json.dumps(rules), "versions": versions()})


def photo(out):
    """ResNet-18 on tests/data/images/photo.jpg (640 x 480) through torchvision's ImageNet
    transform, as a user writes it: its top 5 classes."""
    import torchvision.models as tv
    from PIL import Image
    from torchvision import transforms
    here = os.path.dirname(os.path.abspath(__file__))
    image = Image.open(os.path.join(here, "..", "data", "images", "photo.jpg")).convert("RGB")
    transform = transforms.Compose([
        transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    model = tv.resnet18().eval()
    rules = fill(model)
    x = transform(image).unsqueeze(0)
    with torch.no_grad():
        logits = model(x)
    top5 = logits[0].topk(5).indices
    save(os.path.join(out, "upstream_resnet18_photo.safetensors"),
         {"logits": logits, "top5": top5.contiguous()},
         {"weights": json.dumps(rules), "versions": versions()})


GPT2_SMALL = dict(vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=4)
# every option of GPT2Config that changes the computation, each on its own
GPT2_VARIANTS = {
    "gpt2": {},
    "gpt2_relu": dict(activation_function="relu"),
    "gpt2_gelu": dict(activation_function="gelu"),
    "gpt2_silu": dict(activation_function="silu"),
    "gpt2_inverse_layer_idx": dict(scale_attn_by_inverse_layer_idx=True),
    "gpt2_unscaled": dict(scale_attn_weights=False),
    "gpt2_n_inner": dict(n_inner=48),
    "gpt2_eps": dict(layer_norm_epsilon=1e-2),
    "gpt2_untied": dict(tie_word_embeddings=False),
}


def ids(name, shape, vocab):
    u = uniform(name, int(np.prod(shape)))
    return torch.from_numpy(((u + 1) * 0.5 * vocab).astype(np.int64)).reshape(shape)


def gpt2(out, name, options):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(**GPT2_SMALL, **options, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    model.config._attn_implementation = "eager"
    rules = fill(model)
    x = ids("input_ids", (2, 8), config.vocab_size)
    with torch.no_grad():
        logits = model(x).logits
        greedy = model.generate(x[:1, :4], max_new_tokens=20, do_sample=False,
                                pad_token_id=0, attention_mask=torch.ones(1, 4, dtype=torch.int64))
    save(os.path.join(out, "upstream_%s.safetensors" % name),
         {"input": x, "logits": logits, "greedy": greedy[0, 4:].contiguous()},
         {"weights": json.dumps(rules), "config": config.to_json_string(),
          "versions": versions()})


BERT_SMALL = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=37, max_position_embeddings=40, type_vocab_size=2)
BERT_VARIANTS = {
    "bert": {},
    "bert_relu": dict(hidden_act="relu"),
    "bert_gelu_new": dict(hidden_act="gelu_new"),
    "bert_eps": dict(layer_norm_eps=1e-3),
}


def bert(out, name, options):
    from transformers import BertConfig, BertModel
    config = BertConfig(**BERT_SMALL, **options, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = BertModel(config).eval()
    model.config._attn_implementation = "eager"
    rules = fill(model)
    x = ids("input_ids", (2, 7), config.vocab_size)
    types = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0]])
    with torch.no_grad():
        o = model(input_ids=x, token_type_ids=types, attention_mask=mask)
    save(os.path.join(out, "upstream_%s.safetensors" % name),
         {"input": x, "token_type_ids": types, "attention_mask": mask,
          "last_hidden_state": o.last_hidden_state, "pooler_output": o.pooler_output},
         {"weights": json.dumps(rules), "config": config.to_json_string(),
          "versions": versions()})


def main():
    import torchvision.models as tv
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    vision(out, "resnet18", tv.resnet18, (1, 3, 64, 64))
    vision(out, "resnet50", tv.resnet50, (1, 3, 64, 64))
    vision(out, "mobilenet_v2", tv.mobilenet_v2, (1, 3, 64, 64))
    photo(out)
    for name, options in GPT2_VARIANTS.items():
        gpt2(out, name, options)
    for name, options in BERT_VARIANTS.items():
        bert(out, name, options)


if __name__ == "__main__":
    main()
