"""PyTorch's numbers for the models suite, written as small committed files so that CI without
PyTorch still compares with them. Run with a Python that has torch (Debian's python3-torch:
/usr/bin/python3); torchvision and transformers are not needed: the models are written out
here with their parameter names (torchvision's ResNet and MobileNetV2, Hugging Face's
GPT2LMHeadModel and BertModel).

  /usr/bin/python3 tests/reference/make_reference.py [DIR]

writes into DIR (default: this script's folder):
  resnet_small.safetensors  a ResNet-18-shaped net of width 4 with 10 classes after
                            torch.manual_seed(0), random BatchNorm statistics, an input
                            (2, 3, 32, 32); "logits" in eval mode; one training step (train
                            mode, cross entropy on "target"): "loss" and "grad.<name>" for every
                            parameter
  gpt_small.safetensors     a GPT-2 of 2 layers, 2 heads, width 16, vocabulary 64, 32 positions;
                            "input_ids" (2, 8), "logits", the next-token "loss" and its gradients
                            ("grad.<name>"), and "greedy" (6 tokens after the first 4 of row 0);
                            the config as metadata "config"
  mobilenet_small.safetensors  the same for a MobileNetV2 of width 0.25 with its first four
                            stages shortened (MOBILENET_SMALL: depthwise convolutions of 8 to
                            96 channels), 4 classes, dropout 0
  bert_small.safetensors    a BERT encoder of 2 layers, 2 heads, width 16, vocabulary 50;
                            "input_ids", "token_type_ids" and "attention_mask" (2, 7; row 1
                            padded at its end), "last_hidden_state", "pooler_output", and the
                            loss sum(hidden * probe.hidden) + sum(pooled * probe.pooled) with
                            its gradients; the config as metadata "config"
  resnet18_names.txt, mobilenet_v2_names.txt, gpt2_names.txt, bert_base_names.txt
                            the full-size models' parameter and buffer names and
                            shapes, one "name d0 d1 ..." a line, in state_dict order
"""
import json
import math
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
from make_safetensors import save  # noqa: E402  (the hand-written safetensors writer)


# ---- ResNet as torchvision builds it --------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, blocks, width, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = width
        for s, n in enumerate(blocks):
            cout = width << s
            layers = [BasicBlock(cin if i == 0 else cout, cout, (1 if s == 0 else 2) if i == 0 else 1)
                      for i in range(n)]
            setattr(self, "layer%d" % (s + 1), nn.Sequential(*layers))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---- MobileNetV2 as torchvision builds it ---------------------------------------------------

def make_divisible(v, d=8):
    r = max(d, int(v + d / 2) // d * d)
    return r + d if r < 0.9 * v else r


class ConvBNReLU6(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1):
        super().__init__(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = int(round(cin * t))
        self.use_res_connect = stride == 1 and cin == cout
        layers = [ConvBNReLU6(cin, hidden, k=1)] if t != 1 else []
        layers += [ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, 1, 0, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


MOBILENET_V2 = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
                [6, 160, 3, 2], [6, 320, 1, 1]]


# the first four stages, shorter: every kind of block (expansion 1 and 6, strides 1 and 2, with
# and without the residual) in a file of 300 KB
MOBILENET_SMALL = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 1, 2], [6, 64, 1, 2]]


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, setting=MOBILENET_V2, dropout=0.2):
        super().__init__()  # torchvision's arguments (setting: inverted_residual_setting)
        cin, last = make_divisible(32 * width_mult), make_divisible(1280 * max(1.0, width_mult))
        features = [ConvBNReLU6(3, cin, stride=2)]
        for t, c, n, s in setting:
            cout = make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        features.append(ConvBNReLU6(cin, last, k=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(last, num_classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---- GPT-2 as Hugging Face builds it --------------------------------------------------------

class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head = c["n_head"]
        self.c_attn = Conv1D(3 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], c["n_embd"])

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(C // self.n_head)
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        y = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(4 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], 4 * c["n_embd"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.attn = Attention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.h = nn.ModuleList([Block(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = Body(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, ids):
        t = self.transformer
        h = t.wte(ids) + t.wpe(torch.arange(ids.shape[1]))
        for block in t.h:
            h = block(h)
        return self.lm_head(t.ln_f(h))


# ---- BERT as Hugging Face builds it (BertModel) --------------------------------------------

class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])
        e = self.word_embeddings(ids) + self.token_type_embeddings(types)
        return self.dropout(self.LayerNorm(e + self.position_embeddings(pos)))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["num_attention_heads"]
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, h, ext_mask):
        B, T, C = h.shape
        q, k, v = (f(h).view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for f in (self.query, self.key, self.value))
        s = q @ k.transpose(-1, -2) / math.sqrt(C // self.heads) + ext_mask
        return (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)


class DenseNorm(nn.Module):  # BertSelfOutput, BertOutput
    def __init__(self, c, cin):
        super().__init__()
        self.dense = nn.Linear(cin, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = DenseNorm(c, c["hidden_size"])


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = DenseNorm(c, c["intermediate_size"])

    def forward(self, h, ext_mask):
        a = self.attention.output(self.attention.self(h, ext_mask), h)
        return self.output(F.gelu(self.intermediate.dense(a)), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, ids, types, mask):
        ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        h = self.embeddings(ids, types)
        for layer in self.encoder.layer:
            h = layer(h, ext)
        return h, torch.tanh(self.pooler.dense(h[:, 0]))


BERT_BASE = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
             "num_attention_heads": 12, "intermediate_size": 3072,
             "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
             "hidden_dropout_prob": 0.1}


# ---- the files ------------------------------------------------------------------------------

def names_file(path, model):
    with open(path, "w") as f:
        for name, t in model.state_dict().items():
            f.write(" ".join([name] + [str(d) for d in t.shape]) + "\n")


def image_small(path, model, target):
    """model's state, eval logits, and one training step's loss and gradients"""
    with torch.no_grad():  # statistics other than 0 and 1, so that eval mode is checked
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    x = torch.randn(2, 3, 32, 32)
    target = torch.tensor(target)
    out = {k: v.clone() for k, v in model.state_dict().items()}
    model.eval()
    out["input"], out["target"] = x, target
    out["logits"] = model(x).detach()
    model.train()
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    out["loss"] = loss.detach().reshape(())
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad
    save(path, out)


def resnet_small(path):
    torch.manual_seed(0)
    image_small(path, ResNet([2, 2, 2, 2], 4, 10), [3, 7])


def mobilenet_small(path):
    torch.manual_seed(0)
    image_small(path, MobileNetV2(4, 0.25, MOBILENET_SMALL, dropout=0.0), [3, 1])


def gpt_small(path):
    c = {"vocab_size": 64, "n_positions": 32, "n_embd": 16, "n_layer": 2, "n_head": 2,
         "layer_norm_epsilon": 1e-5}
    torch.manual_seed(0)
    model = GPT2LMHeadModel(c)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
            if isinstance(m, Conv1D):
                m.bias.uniform_(-0.1, 0.1)
        model.transformer.wte.weight.normal_(0, 0.5)
        model.transformer.wpe.weight.normal_(0, 0.2)
    ids = torch.randint(0, c["vocab_size"], (2, 9))
    x, y = ids[:, :8], ids[:, 1:]
    out = {k: v.clone() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    logits = model(x)
    out["input_ids"], out["target"] = x, y
    out["logits"] = logits.detach()
    loss = F.cross_entropy(logits.reshape(-1, c["vocab_size"]), y.reshape(-1))
    loss.backward()
    out["loss"] = loss.detach().reshape(())
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad
    with torch.no_grad():  # greedy decoding from the first 4 tokens of row 0
        seq = x[:1, :4]
        for _ in range(6):
            nxt = model(seq)[:, -1].argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], 1)
        out["greedy"] = seq[0, 4:].clone()
    save(path, out, {"config": json.dumps(c)})


def bert_small(path):
    c = {"vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
         "intermediate_size": 32, "max_position_embeddings": 16, "type_vocab_size": 2,
         "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.0}
    torch.manual_seed(0)
    model = BertModel(c)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    ids = torch.randint(0, c["vocab_size"], (2, 7))
    types = torch.randint(0, 2, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2])  # row 1 padded at its last 2 tokens
    out = {k: v.clone() for k, v in model.state_dict().items()}
    out["input_ids"], out["token_type_ids"], out["attention_mask"] = ids, types, mask
    hidden, pooled = model(ids, types, mask)
    out["last_hidden_state"], out["pooler_output"] = hidden.detach(), pooled.detach()
    # one backward pass of a loss that weighs every output
    out["probe.hidden"], out["probe.pooled"] = torch.randn(hidden.shape), torch.randn(pooled.shape)
    loss = (hidden * out["probe.hidden"]).sum() + (pooled * out["probe.pooled"]).sum()
    loss.backward()
    out["loss"] = loss.detach().reshape(())
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad
    save(path, out, {"config": json.dumps(c)})


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    resnet_small(os.path.join(here, "resnet_small.safetensors"))
    gpt_small(os.path.join(here, "gpt_small.safetensors"))
    mobilenet_small(os.path.join(here, "mobilenet_small.safetensors"))
    bert_small(os.path.join(here, "bert_small.safetensors"))
    names_file(os.path.join(here, "resnet18_names.txt"), ResNet([2, 2, 2, 2], 64, 1000))
    names_file(os.path.join(here, "mobilenet_v2_names.txt"), MobileNetV2())
    names_file(os.path.join(here, "bert_base_names.txt"), BertModel(BERT_BASE))
    names_file(os.path.join(here, "gpt2_names.txt"),
               GPT2LMHeadModel({"vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
                                "n_layer": 12, "n_head": 12, "layer_norm_epsilon": 1e-5}))


if __name__ == "__main__":
    main()
