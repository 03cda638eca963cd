#!/usr/bin/env python3
"""PyTorch reference for `runner/examples/rnn_bench.rs`: the same LSTM/GRU, shapes, data layout
and loop, on the CPU (or with `--device cuda`, on the GPU: the batch is gathered on the host and
copied per step, as measured does, and the clock is read after `torch.cuda.synchronize()`).

Windows of 60 days x 105 features one row apart over one synthetic symbol; `nn.LSTM` / `nn.GRU`
(hidden 128, 2 layers, batch_first) with a linear head on the last day's hidden state; batch 256.

- train: one epoch of `--batches` batches: a shuffled gather into a contiguous tensor, forward,
  MSE, backward, Adam (PyTorch's defaults, which measured also uses), `loss.item()` every step.
- infer: forward over `--batches` batches under `torch.inference_mode()`, outputs copied out.

In f32, TF32 is off for cuDNN and matmuls (`torch.backends.cudnn.allow_tf32`, on by default, lets
cuDNN's RNN run FP32 on tensor cores at TF32 precision): measured's `precision = "f32"` is IEEE
FP32 math, so both sides do the same arithmetic; `--tf32` keeps PyTorch's default instead. The
printed line says which math ran.

Prints the median samples/s over `--reps` runs after one warm-up run.
Usage: python bench/torch_rnn.py [--kind lstm|gru] [--mode train|infer] [--reps N] [--threads N]
       [--batches N] [--dtype f32|bf16] [--tf32] [--tiny]
(`--tiny`: rnn_bench's tiny shape, 8 days x 6 features, hidden 8, batch 16, for smoke runs)
"""

import argparse
import statistics
import time

import torch
from torch import nn

SEQ_LEN, FEATURES, HIDDEN, LAYERS, BATCH = 60, 105, 128, 2, 256


class Net(nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        cls = {"lstm": nn.LSTM, "gru": nn.GRU}[kind]
        self.rnn = cls(FEATURES, HIDDEN, num_layers=LAYERS, batch_first=True)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1, :])


def windows(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    rows = n + SEQ_LEN - 1
    features = torch.rand(rows, FEATURES, generator=gen) * 2 - 1
    x = features.unfold(0, SEQ_LEN, 1).permute(0, 2, 1).contiguous()  # (n, 60, 105)
    y = (torch.rand(n, 1, generator=gen) - 0.5) * 0.1
    return x, y


DEVICE = "cpu"


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def train(kind: str, x: torch.Tensor, y: torch.Tensor, seed: int, dtype) -> float:
    torch.manual_seed(seed)
    model = Net(kind).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = x.shape[0]
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    start = time.perf_counter()
    for i in range(0, n, BATCH):
        idx = order[i : i + BATCH]
        xb, yb = x[idx].to(DEVICE), y[idx].to(DEVICE)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEVICE, dtype=dtype, enabled=dtype != torch.float32):
            loss = nn.functional.mse_loss(model(xb).float(), yb)
        loss.backward()
        opt.step()
        assert loss.item() == loss.item()
    sync()
    return n / (time.perf_counter() - start)


def infer(kind: str, x: torch.Tensor, seed: int, dtype) -> float:
    torch.manual_seed(seed)
    model = Net(kind).to(DEVICE).eval()
    n = x.shape[0]
    start = time.perf_counter()
    out = []
    with torch.inference_mode(), torch.autocast(DEVICE, dtype=dtype, enabled=dtype != torch.float32):
        for i in range(0, n, BATCH):
            out.append(model(x[i : i + BATCH].to(DEVICE)).float().cpu().numpy().copy())
    sync()
    return n / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="lstm", choices=["lstm", "gru"])
    ap.add_argument("--mode", default="train", choices=["train", "infer"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--tf32", action="store_true", help="f32 with PyTorch's default TF32 cuDNN math")
    ap.add_argument("--tiny", action="store_true", help="rnn_bench --tiny's shape, for smoke runs")
    args = ap.parse_args()
    global DEVICE, SEQ_LEN, FEATURES, HIDDEN, LAYERS, BATCH
    DEVICE = args.device
    if args.tiny:
        SEQ_LEN, FEATURES, HIDDEN, LAYERS, BATCH = 8, 6, 8, 2, 16
    torch.set_num_threads(args.threads)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    tf32 = dtype != torch.float32 or args.tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    x, y = windows(BATCH * args.batches, 7)
    run = (lambda s: train(args.kind, x, y, s, dtype)) if args.mode == "train" else (lambda s: infer(args.kind, x, s, dtype))
    run(0)  # warm-up
    rates = [run(s) for s in range(1, args.reps + 1)]
    print(
        f"torch {torch.__version__} {args.device} {args.kind} {args.mode} {args.dtype}"
        f"{'' if tf32 else ' (TF32 off)'}: "
        f"median {statistics.median(rates):.1f} samples/s, runs {[round(r, 1) for r in rates]}"
    )


if __name__ == "__main__":
    main()
