"""PyTorch reference for bench_train: the time of one training step (zero_grad, forward,
cross_entropy, backward, SGD step) of the same two models on the same batch, on the CPU with a
given number of threads. Prints one JSON line per model:
{"model": "mlp", "torch": "2.1.0", "threads": 2, "batch": 128, "time_s": ...,
 "cores_busy": 1.9}
Run by build/tests/bench/bench_train; usage: train_torch.py --threads N --batch B --repeats R
"""
import argparse
import json
import statistics
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


def step_time(model, x, y, warmup, repeats):
    """The median step's seconds, and the process's CPU time over its wall time across the timed
    steps: torch.set_num_threads sets PyTorch's own threads, but a build on the system's BLAS
    (Debian's) runs its products on OpenBLAS's threads, one a core whatever it is set to."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for r in range(warmup + repeats):
        if r == warmup:
            cpu0, wall0 = time.process_time(), time.perf_counter()
        t0 = time.perf_counter()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if r >= warmup:
            times.append(time.perf_counter() - t0)
    busy = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    return statistics.median(times), busy


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=30)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    y = torch.randint(0, 10, (a.batch,))
    cases = [
        ("mlp", nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)),
         torch.randn(a.batch, 784)),
        ("cnn", DigitsCNN(), torch.randn(a.batch, 1, 8, 8)),
    ]
    for name, model, x in cases:
        t, busy = step_time(model, x, y, a.warmup, a.repeats)
        print(json.dumps({"model": name, "torch": torch.__version__,
                          "threads": torch.get_num_threads(), "batch": a.batch, "time_s": t,
                          "cores_busy": round(busy, 2)}),
              flush=True)


if __name__ == "__main__":
    main()
