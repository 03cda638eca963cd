"""PyTorch reference for `runner/examples/train_bench.rs`: the same MLP, data layout and loop.

Synthetic windows (one symbol, 60 days x 16 features, windows one row apart), a shuffled
gather of each batch into a contiguous tensor, forward, MSE, backward, Adam (PyTorch defaults,
which the Rust side also uses), and the loss read back every step. Prints one Markdown table row
per configuration with the median samples/s over the repetitions.

With `--device cuda` the model runs on the GPU; batches are gathered on the host and copied per
step, as measured does, and the clock is read after `torch.cuda.synchronize()`. `--autocast
bf16|f16` runs forward and loss under `torch.autocast` (f16 with a `GradScaler`), PyTorch's mixed
precision, against which measured's `precision = "bf16"`/`"f16"` is compared. `--config quick`
is the quickstart's model ([64, 32], batch 128), asked for by name.

Usage: python bench/torch_mlp.py [--reps N] [--threads N] [--config quick|small|large|all]
       [--device cpu|cuda] [--autocast none|bf16|f16]
"""

import argparse
import statistics
import time

import torch
from torch import nn

SEQ_LEN = 60
FEATURES = 16
INPUT = SEQ_LEN * FEATURES

CONFIGS = {
    # name: (hidden widths, batch size, steps per epoch)
    "quick": ([64, 32], 128, 100),
    "small": ([256, 128], 256, 40),
    "large": ([2048, 1024, 512], 1024, 16),
}


def synthetic_windows(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Flattened windows (n, 960) over one feature matrix, plus targets (n, 1)."""
    gen = torch.Generator().manual_seed(seed)
    rows = n + SEQ_LEN - 1
    features = torch.rand(rows, FEATURES, generator=gen) * 2 - 1
    # unfold gives the overlapping windows as a view; materialize them once, as the Rust side
    # reads each window as one contiguous slice.
    windows = features.unfold(0, SEQ_LEN, 1).permute(0, 2, 1).reshape(n, INPUT).contiguous()
    targets = (torch.rand(n, 1, generator=gen) - 0.5) * 0.1
    return windows, targets


def mlp(hidden: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = INPUT
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


DEVICE = "cpu"
AUTOCAST = None  # torch.bfloat16 or torch.float16 under --autocast


def samples_per_second(x: torch.Tensor, y: torch.Tensor, hidden: list[int], batch: int, seed: int) -> float:
    torch.manual_seed(seed)
    model = mlp(hidden).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    scaler = torch.amp.GradScaler("cuda") if AUTOCAST == torch.float16 else None
    n = x.shape[0]
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    start = time.perf_counter()
    for i in range(0, n, batch):
        idx = order[i : i + batch]
        # Gather into new contiguous tensors on the host and copy them, like the Rust loop.
        xb, yb = x[idx].to(DEVICE), y[idx].to(DEVICE)
        opt.zero_grad(set_to_none=True)
        if AUTOCAST is None:
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
        else:
            with torch.autocast(DEVICE, dtype=AUTOCAST):
                loss = loss_fn(model(xb), yb)
            if scaler is None:
                loss.backward()
                opt.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        assert loss.item() == loss.item()  # read the loss back every step (and reject NaN)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--config", default="all", choices=["all", *CONFIGS])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--autocast", default="none", choices=["none", "bf16", "f16"])
    args = parser.parse_args()
    global DEVICE, AUTOCAST
    DEVICE = args.device
    AUTOCAST = {"none": None, "bf16": torch.bfloat16, "f16": torch.float16}[args.autocast]
    torch.set_num_threads(args.threads)

    print(f"| config | implementation | median samples/s | runs |  (torch {torch.__version__})")
    print("|---|---|---|---|")
    for name, (hidden, batch, steps) in CONFIGS.items():
        if (args.config == "all" and name == "quick") or args.config not in ("all", name):
            continue
        x, y = synthetic_windows(batch * steps, 7)
        samples_per_second(x, y, hidden, batch, 0)  # warm-up, not counted
        runs = [samples_per_second(x, y, hidden, batch, r + 1) for r in range(args.reps)]
        label = f"{name} {INPUT}-{hidden}-1 batch {batch}"
        shown = ", ".join(f"{r:.0f}" for r in runs)
        what = f"PyTorch {torch.__version__}" + ("" if AUTOCAST is None else f" autocast {args.autocast}")
        print(f"| {label} | {what} | {statistics.median(runs):.0f} | [{shown}] |")


if __name__ == "__main__":
    main()
