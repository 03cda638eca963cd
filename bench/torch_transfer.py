#!/usr/bin/env python3
"""PyTorch host<->device copy bandwidth, the reference for measured's `transfer` stage on CUDA.

Measures, for sizes 4 KiB .. 256 MiB (powers of 4), the median GB/s (10^9 bytes/s) of:
  h2d_pinned_to       pinned CPU tensor .to('cuda', non_blocking=True)   (new tensor per copy,
                      served by PyTorch's caching allocator)
  h2d_pinned_copy     dst.copy_(pinned, non_blocking=True) into a reused CUDA tensor
  h2d_pageable_to     pageable CPU tensor .to('cuda')
  d2h_pinned_copy     pinned.copy_(cuda_tensor, non_blocking=True) into a reused pinned tensor
  d2h_pageable_cpu    cuda_tensor.cpu() (new pageable tensor per copy)

Timing matches measured's: each sample is a batch of back-to-back copies lasting at least
100 us, bracketed by CUDA events on the current stream and completed with an event
synchronize before the time is read; the median over --iterations samples is reported.

Usage: python3 bench/torch_transfer.py [--iterations 20] [--warmup 3] [--json out.json]
"""

import argparse
import json
import statistics
import sys

MIN_SAMPLE_S = 100e-6
MAX_BATCH = 100_000
SIZES = [4096 << (2 * i) for i in range(9)]  # 4 KiB .. 256 MiB


def fmt_size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024


def samples(torch, op, iterations, warmup):
    """Seconds per copy, one value per sample; `op()` issues one copy on the current stream."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)

    def batch(k):
        torch.cuda.synchronize()
        start.record()
        for _ in range(k):
            op()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    first = max(batch(1), 1e-9)  # also pays first-use costs; only sizes the batch
    k = max(1, min(MAX_BATCH, int(-(-MIN_SAMPLE_S // first))))
    for _ in range(warmup):
        batch(k)
    return [batch(k) / k for _ in range(iterations)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("torch_transfer: no CUDA device visible to PyTorch; run this on a GPU machine")
    device = torch.device("cuda")
    print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{torch.cuda.get_device_name(device)}")

    modes = ["h2d_pinned_to", "h2d_pinned_copy", "h2d_pageable_to",
             "d2h_pinned_copy", "d2h_pageable_cpu"]
    results = {m: {} for m in modes}
    print("size        " + "".join(f"{m:>18}" for m in modes) + "   (GB/s)")
    for size in SIZES:
        pinned = torch.full((size,), 0xA5, dtype=torch.uint8).pin_memory()
        pageable = torch.full((size,), 0xA5, dtype=torch.uint8)
        on_device = torch.full((size,), 0xA5, dtype=torch.uint8, device=device)
        dst_device = torch.empty(size, dtype=torch.uint8, device=device)
        dst_pinned = torch.empty(size, dtype=torch.uint8).pin_memory()
        ops = {
            "h2d_pinned_to": lambda: pinned.to(device, non_blocking=True),
            "h2d_pinned_copy": lambda: dst_device.copy_(pinned, non_blocking=True),
            "h2d_pageable_to": lambda: pageable.to(device),
            "d2h_pinned_copy": lambda: dst_pinned.copy_(on_device, non_blocking=True),
            "d2h_pageable_cpu": lambda: on_device.cpu(),
        }
        row = []
        for mode in modes:
            seconds = statistics.median(samples(torch, ops[mode], args.iterations, args.warmup))
            gbps = size / seconds / 1e9
            results[mode][size] = {"seconds": seconds, "gbps": gbps}
            row.append(gbps)
        print(f"{fmt_size(size):<12}" + "".join(f"{v:>18.2f}" for v in row), flush=True)
        del pinned, pageable, on_device, dst_device, dst_pinned
        torch.cuda.empty_cache()

    largest = SIZES[-1]
    target = 0.9 * results["h2d_pinned_to"][largest]["gbps"]
    print(f"# target: measured's h2d_pinned_reuse_gbps at step {largest} "
          f"({fmt_size(largest)}) >= {target:.2f} GB/s (90% of h2d_pinned_to)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "cuda": torch.version.cuda,
                       "device": torch.cuda.get_device_name(device),
                       "iterations": args.iterations, "warmup": args.warmup,
                       "results": {m: {str(s): v for s, v in r.items()}
                                   for m, r in results.items()}}, f, indent=2)


if __name__ == "__main__":
    main()
