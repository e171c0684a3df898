"""torchvision's and Hugging Face transformers' own numbers for the models suite, written as
small committed files. Run with a Python that has torch, torchvision 0.29 and transformers 5
(`pip install torch torchvision transformers` in a virtual environment):

  python tests/reference/make_hf_reference.py [DIR]

writes into DIR (default: this script's folder):
  resnet50_names.txt        torchvision.models.resnet50()'s parameter and buffer names and
                            shapes, one "name d0 d1 ..." a line, in state_dict order
  resnext50_32x4d_names.txt the same for resnext50_32x4d() (groups 32, width_per_group 4)
  bottleneck_small.safetensors  a ResNet of torchvision's Bottleneck and _make_layer with
                            planes 4 (the stem's 64 made 4), layers [1, 2, 1, 1], groups 2,
                            width_per_group 32, replace_stride_with_dilation [False, True, True],
                            5 classes, after torch.manual_seed(0) and random BatchNorm
                            statistics; "input" (2, 3, 32, 32) and its eval-mode "logits"
  gpt2_options.safetensors  GPT2LMHeadModel's state_dict ("transformer." names and an untied
                            lm_head.weight) for a GPT2Config of 2 layers, 2 heads, width 16,
                            n_inner 24, quick_gelu, layer_norm_epsilon 1e-3,
                            scale_attn_by_inverse_layer_idx, tie_word_embeddings false
  gpt2_options_io.safetensors  its "input_ids" (2, 6) and eval-mode "logits"; metadata
                            "config": the config.json transformers writes (every field:
                            use_diff=False)
  bert_mlm.safetensors      BertForMaskedLM's state_dict ("bert." names, no pooler, the cls.*
                            head) for a BertConfig of 2 layers, 2 heads, width 16, relu,
                            layer_norm_eps 1e-6, pad_token_id 1
  bert_mlm_io.safetensors   its "input_ids" and "attention_mask" (2, 5; row 1 padded) and
                            eval-mode "last_hidden_state"; metadata "config" as above
"""
import os
import sys

import torch
from safetensors.torch import save_file
from torch import nn
from torchvision.models import resnet
import transformers

from make_reference import names_file


def state(model):
    """the state_dict as a head class's file holds it (tied tensors each written out)"""
    return {k: v.contiguous().clone() for k, v in model.state_dict().items()}


def io_path(path):
    return path.replace(".safetensors", "_io.safetensors")


class SmallResNet(resnet.ResNet):
    """torchvision's ResNet.__init__ with the 64 planes of its stem and first stage made
    `planes`; _make_layer, Bottleneck and forward are torchvision's."""

    def __init__(self, planes, layers, num_classes, groups, width_per_group, dilation):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = planes
        self.dilation = 1
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, planes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        block = resnet.Bottleneck
        self.layer1 = self._make_layer(block, planes, layers[0])
        self.layer2 = self._make_layer(block, 2 * planes, layers[1], stride=2, dilate=dilation[0])
        self.layer3 = self._make_layer(block, 4 * planes, layers[2], stride=2, dilate=dilation[1])
        self.layer4 = self._make_layer(block, 8 * planes, layers[3], stride=2, dilate=dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * planes * block.expansion, num_classes)


def bottleneck_small(path):
    torch.manual_seed(0)
    model = SmallResNet(4, [1, 2, 1, 1], 5, 2, 32, [False, True, True])
    with torch.no_grad():  # statistics other than 0 and 1, so that eval mode is checked
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    model.eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        logits = model(x)
    out = {k: v.contiguous().clone() for k, v in model.state_dict().items()}
    out["input"], out["logits"] = x, logits
    save_file(out, path)


def gpt2_options(path):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=40, n_positions=12, n_embd=16, n_layer=2, n_head=2, n_inner=24,
        bos_token_id=0, eos_token_id=0, activation_function="quick_gelu", layer_norm_epsilon=1e-3,
        scale_attn_by_inverse_layer_idx=True, tie_word_embeddings=False)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 40, (2, 6))
    with torch.no_grad():
        logits = model(ids).logits
    save_file(state(model), path)
    save_file({"input_ids": ids, "logits": logits}, io_path(path),
              {"config": config.to_json_string(use_diff=False)})


def bert_mlm(path):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=24, max_position_embeddings=10, hidden_act="relu",
        layer_norm_eps=1e-6, pad_token_id=1)
    model = transformers.BertForMaskedLM(config).eval()
    ids = torch.randint(2, 30, (2, 5))
    ids[1, 3:] = 1
    mask = torch.ones(2, 5, dtype=torch.int64)
    mask[1, 3:] = 0
    with torch.no_grad():
        hidden = model.bert(input_ids=ids, attention_mask=mask).last_hidden_state
    save_file(state(model), path)
    save_file({"input_ids": ids, "attention_mask": mask, "last_hidden_state": hidden},
              io_path(path), {"config": config.to_json_string(use_diff=False)})


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    names_file(os.path.join(here, "resnet50_names.txt"), resnet.resnet50())
    names_file(os.path.join(here, "resnext50_32x4d_names.txt"), resnet.resnext50_32x4d())
    bottleneck_small(os.path.join(here, "bottleneck_small.safetensors"))
    gpt2_options(os.path.join(here, "gpt2_options.safetensors"))
    bert_mlm(os.path.join(here, "bert_mlm.safetensors"))


if __name__ == "__main__":
    main()
