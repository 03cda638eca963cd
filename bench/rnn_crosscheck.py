#!/usr/bin/env python3
"""Writes the fixture that holds measured's LSTM and GRU to PyTorch's (no PyTorch needed in CI).

For each kind, PyTorch's `nn.LSTM` / `nn.GRU` (2 layers, batch_first) with a linear head on the
last day's hidden state starts from weights drawn here, trains 20 Adam steps (lr 1e-2, PyTorch's
default betas and eps) on 20 batches drawn here, and records the loss before each step. The
fixture holds the weights in measured's layout (`Arch::params`: PyTorch's weights transposed),
the batches and the losses; `tensor::tests::torch` replays the same steps on both of measured's
engines and requires every loss to agree to 1e-4 relative.

Usage: python bench/rnn_crosscheck.py [--out runner/tests/fixtures/torch/rnn_adam.json]
Needs torch and numpy (e.g. `python3 -m venv .venv && .venv/bin/pip install torch numpy`).
"""

import argparse
import json

import numpy as np
import torch

FEATURES, HIDDEN, LAYERS, DAYS, BATCH, OUTPUTS, STEPS, LR = 3, 4, 2, 5, 8, 2, 20, 1e-2


def build(kind: str, rng: np.random.Generator):
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
    rnn = cls(FEATURES, HIDDEN, num_layers=LAYERS, batch_first=True)
    head = torch.nn.Linear(HIDDEN, OUTPUTS)
    ours = []  # measured's order and layout
    with torch.no_grad():
        for layer in range(LAYERS):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                p = getattr(rnn, f"{name}_l{layer}")
                values = rng.uniform(-0.5, 0.5, size=tuple(p.shape)).astype(np.float32)
                p.copy_(torch.from_numpy(values))
                ours.append((values.T if values.ndim == 2 else values).ravel().tolist())
        w = rng.uniform(-0.5, 0.5, size=(OUTPUTS, HIDDEN)).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, size=(OUTPUTS,)).astype(np.float32)
        head.weight.copy_(torch.from_numpy(w))
        head.bias.copy_(torch.from_numpy(b))
        ours.append(w.T.ravel().tolist())
        ours.append(b.tolist())
    return rnn, head, ours


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="runner/tests/fixtures/torch/rnn_adam.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    rng = np.random.default_rng(20261125)
    fixture = {
        "torch": torch.__version__,
        "features": FEATURES,
        "hidden": HIDDEN,
        "layers": LAYERS,
        "days": DAYS,
        "batch": BATCH,
        "outputs": OUTPUTS,
        "lr": LR,
        "kinds": {},
    }
    batches = [
        (
            rng.uniform(-1, 1, size=(BATCH, DAYS, FEATURES)).astype(np.float32),
            rng.uniform(-1, 1, size=(BATCH, OUTPUTS)).astype(np.float32),
        )
        for _ in range(STEPS)
    ]
    fixture["x"] = [x.ravel().tolist() for x, _ in batches]
    fixture["y"] = [y.ravel().tolist() for _, y in batches]
    for kind in ("lstm", "gru"):
        rnn, head, ours = build(kind, rng)
        opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()), lr=LR)
        losses = []
        for x, y in batches:
            out, _ = rnn(torch.from_numpy(x))
            loss = torch.nn.functional.mse_loss(head(out[:, -1, :]), torch.from_numpy(y))
            losses.append(loss.item())
            opt.zero_grad()
            loss.backward()
            opt.step()
        fixture["kinds"][kind] = {"params": ours, "losses": losses}
        print(f"{kind}: loss {losses[0]:.6f} -> {losses[-1]:.6f}")
    with open(args.out, "w") as f:
        json.dump(fixture, f)
        f.write("\n")


if __name__ == "__main__":
    main()
