#!/usr/bin/env python3
"""Writes the test data of the tokenizer suite (tests/test_tokenizer.c) into this folder.

A small byte-level BPE (tokenizers' ByteLevelBPETokenizer, vocabulary of 1500 with
<|endoftext|> as its special token) is trained on the lines of corpus.txt above the line
"Unseen text below the training part", so that the rest of the corpus is text the merges were
not learned from. It writes:
- tokenizer.json, and vocab.json + merges.txt (the same tokenizer in its two file forms);
- reference.json: test cases, each a name, a text and the ids of that text. The cases are every
  line of the corpus with and without its "\\n", every paragraph (the text between blank
  lines), the whole corpus, a few edge cases (empty text, whitespace alone, special tokens
  alone, long words) and 300 short random texts.

The reference ids are transformers.GPT2TokenizerFast's (loaded from tokenizer.json), with
add_special_tokens=False. They are cross-checked against:
- GPT2TokenizerFast loaded from vocab.json + merges.txt;
- tokenizers.Tokenizer loaded from tokenizer.json;
- a transcription of OpenAI's GPT-2 encoder.py (the `regex` package's pattern and the
  lowest-rank-first merges), with the special tokens split off first, as the slow
  transformers.GPT2Tokenizer did. transformers 5 has no slow GPT2Tokenizer any more:
  GPT2Tokenizer is GPT2TokenizerFast there, so this transcription stands in for it.
The script stops with the first case where any of them disagrees with the reference.

Run with a Python that has tokenizers and transformers (written with tokenizers 0.23.3 and
transformers 5.25.0):  python make_tokenizer.py
"""
import json
import os
import random
import shutil
import sys
import tempfile
import unicodedata

import regex
import tokenizers
import transformers
from tokenizers import ByteLevelBPETokenizer, Tokenizer
from transformers import GPT2TokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIAL = "<|endoftext|>"
VOCAB_SIZE = 1500
TRAINING_END = "Unseen text below the training part"


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (OpenAI's encoder.py)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class OpenAIEncoder:
    """OpenAI's GPT-2 encoder.py: the pattern, the byte map and the merges by lowest rank."""

    PATTERN = regex.compile(
        r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def __init__(self, vocab, merges, specials):
        self.encoder = vocab
        self.ranks = {tuple(m): i for i, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.specials = specials

    def bpe(self, token):
        word = tuple(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
        return word

    def encode_plain(self, text):
        ids = []
        for piece in self.PATTERN.findall(text):
            mapped = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(mapped))
        return ids

    def encode(self, text):
        split = regex.compile("(" + "|".join(regex.escape(s) for s in self.specials) + ")")
        ids = []
        for part in split.split(text):
            if part in self.specials:
                ids.append(self.encoder[part])
            elif part:
                ids.extend(self.encode_plain(part))
        return ids


def cases_of(corpus):
    cases = []
    lines = corpus.split("\n")
    for i, line in enumerate(lines[:-1]):  # the corpus ends with "\n"
        cases.append((f"line {i + 1}", line + "\n"))
        cases.append((f"line {i + 1} without its newline", line))
    for i, para in enumerate(corpus.split("\n\n")):
        cases.append((f"paragraph {i + 1}", para))
    cases.append(("the whole corpus", corpus))
    edge = ["", " ", "  ", "\n", " \n ", "\t\t a", "a  ", "a \u00a0", SPECIAL, SPECIAL + SPECIAL,
            " " + SPECIAL + " ", "x" + SPECIAL, "'s's's", "'S", "don't'", "a" * 3000,
            "ab" * 1500, "the" * 1000 + " the" * 500, "!" * 2000, "7" * 2000, " " * 2000,
            "\u4e2d\u6587" * 500, "é" * 1000 + "e\u0301" * 500]
    for i, text in enumerate(edge):
        cases.append((f"edge case {i + 1}", text))
    for i, text in enumerate(random_texts(300)):
        cases.append((f"random text {i + 1}", text))
    return cases


def random_texts(n):
    """n short random texts (seeded): pieces that meet at the pattern's edges (white space of
    every kind, apostrophes, contractions, digits, added tokens and parts of them), and code
    points of planes 0 to 3 and 14 that this Python's Unicode assigns (code points assigned
    later are classed differently by the tokenizers package's newer Unicode)."""
    rng = random.Random(2)
    pieces = list("aeSTRVLMD'’ \t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u2028\u3000\u200b"
                  ".,!?-0129²½Ⅻ٣") + [
        SPECIAL, "<|end", "'s", "'re", "'ll", "'ve", "'d", "'m", "'t", "é", "e\u0301", "中",
        "👍🏽", "🇫🇷", "the", " the", "ab", "aa"]

    def assigned():
        while True:
            cp = rng.randint(1, 0x32000) if rng.random() < 0.9 else rng.randint(0xE0000, 0xEFFFF)
            if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) != "Cn":
                return chr(cp)

    return ["".join(rng.choice(pieces) if rng.random() < 0.7 else assigned()
                    for _ in range(rng.randint(1, 30))) for _ in range(n)]


def main():
    with open(os.path.join(HERE, "corpus.txt"), encoding="utf-8", newline="") as f:
        corpus = f.read()
    training = corpus[:corpus.index(TRAINING_END)].split("\n")

    trainer = ByteLevelBPETokenizer(add_prefix_space=False)
    trainer.train_from_iterator(training, vocab_size=VOCAB_SIZE, min_frequency=1,
                                special_tokens=[SPECIAL], show_progress=False)
    trainer.save(os.path.join(HERE, "tokenizer.json"))
    trainer.save_model(HERE)

    fast = GPT2TokenizerFast.from_pretrained(HERE)  # reads tokenizer.json
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(HERE, name), tmp)
        fast_files = GPT2TokenizerFast.from_pretrained(tmp)
    raw = Tokenizer.from_file(os.path.join(HERE, "tokenizer.json"))
    with open(os.path.join(HERE, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(HERE, "merges.txt"), encoding="utf-8") as f:
        merges = [line.split(" ") for line in f.read().split("\n")
                  if line and not line.startswith("#version")]
    openai = OpenAIEncoder(vocab, merges, [SPECIAL])

    out = []
    for name, text in cases_of(corpus):
        ids = fast.encode(text, add_special_tokens=False)
        others = {
            "GPT2TokenizerFast from vocab.json + merges.txt":
                fast_files.encode(text, add_special_tokens=False),
            "tokenizers.Tokenizer": raw.encode(text, add_special_tokens=False).ids,
            "OpenAI's encoder.py": openai.encode(text),
        }
        for who, got in others.items():
            if got != ids:
                sys.exit(f"{name}: {who} disagrees with GPT2TokenizerFast:\n{got}\n{ids}")
        out.append({"name": name, "text": text, "ids": ids})

    reference = {
        "reference": "transformers.GPT2TokenizerFast",
        "tokenizers": tokenizers.__version__,
        "transformers": transformers.__version__,
        "vocab_size": len(fast),
        "cases": out,
    }
    with open(os.path.join(HERE, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{len(out)} cases, vocabulary of {len(fast)}, all four agree")


if __name__ == "__main__":
    main()
