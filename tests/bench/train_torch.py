"""PyTorch reference for bench_train: training steps (zero_grad, forward, cross_entropy,
backward, SGD step) of the same two models on the same batch, on the CPU, run in blocks that
bench_train asks for in turn with its own, so that both are timed under the same conditions.

  train_torch.py --threads N --batch B

Sets torch.set_num_threads(N) once (changing it back and forth in one process made the later
blocks with two threads slower than the first), then reads one request a line on stdin,
"MODEL STEPS" (MODEL mlp or cnn), runs STEPS steps of that model and prints one JSON line:
{"model": "mlp", "torch": "2.1.0", "threads": 1, "batch": 128, "cpu_s": ..., "wall_s": ...,
 "times": [seconds of each step, ...]}
cpu_s over wall_s is the cores the block kept busy: torch.set_num_threads sets PyTorch's own
threads, but a build on the system's BLAS (Debian's) runs its products on OpenBLAS's threads,
one a core whatever it is set to. Ends at end of input.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class DigitsCNN(nn.Module):
    """The CNN of samples/train_digits.c, on 8x8 single-channel images."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(32 * 4 * 4, 10))

    def forward(self, x):
        return self.layers(x)


def block(model, optimizer, x, y, steps):
    """Each step's seconds, and the block's CPU and wall seconds."""
    times = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - t0)
    return times, time.process_time() - cpu0, time.perf_counter() - wall0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--batch", type=int, default=128)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    y = torch.randint(0, 10, (a.batch,))
    cases = {
        "mlp": (nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)),
                torch.randn(a.batch, 784)),
        "cnn": (DigitsCNN(), torch.randn(a.batch, 1, 8, 8)),
    }
    optimizers = {name: torch.optim.SGD(m.parameters(), lr=0.01) for name, (m, _) in cases.items()}
    for line in sys.stdin:
        name, steps = line.split()
        model, x = cases[name]
        times, cpu, wall = block(model, optimizers[name], x, y, int(steps))
        print(json.dumps({"model": name, "torch": torch.__version__,
                          "threads": torch.get_num_threads(), "batch": a.batch, "cpu_s": cpu,
                          "wall_s": wall, "times": times}),
              flush=True)


if __name__ == "__main__":
    main()
