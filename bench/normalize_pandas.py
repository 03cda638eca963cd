"""pandas baseline for the `normalize` stage's default-preset features.

Computes the same 20 columns as `measured` (docs/features.md) with idiomatic vectorized pandas
(groupby + diff/shift/rolling/ewm), single-threaded, on a bars CSV written by
`cargo run --release --example normalize_bench -- --synth --write PATH`, and prints the median
time of the feature computation (reading the CSV is not timed, as the Rust side starts from
bars in memory too).

    python bench/normalize_pandas.py --csv bench/data/synth.csv --runs 5 \
        --check bench/data/rust_features.csv
"""

import argparse
import statistics
import time

import numpy as np
import pandas as pd

FEATURES = [
    "ret_1", "ret_5", "ret_10", "ret_20", "hl_range", "close_pos", "gap",
    "vol_5", "vol_20", "vol_60", "sma_ratio_5", "sma_ratio_20", "sma_ratio_60",
    "rsi_14", "macd", "macd_signal", "bb_pctb_20", "vol_z_20", "dlog_volume", "skew_20",
]


def rolling(series, key, window):
    """Per-symbol rolling window, realigned to the frame's index."""
    return series.groupby(key, sort=False).rolling(window)


def flat(result):
    return result.reset_index(level=0, drop=True)


def features(df):
    key = df["symbol"]
    adj = df["adj_factor"]
    close = df["close"] * adj
    open_ = df["open"] * adj
    high = df["high"] * adj
    low = df["low"] * adj
    volume = df["volume"] / adj
    row = df.groupby(key, sort=False).cumcount()
    out = pd.DataFrame(index=df.index)

    log_close = np.log(close)
    by_symbol = log_close.groupby(key, sort=False)
    for k in (1, 5, 10, 20):
        out[f"ret_{k}"] = by_symbol.diff(k)
    out["hl_range"] = (high - low) / close
    span = high - low
    out["close_pos"] = ((close - low) / span).where(span > 0, 0.5)
    prev_close = close.groupby(key, sort=False).shift(1)
    out["gap"] = np.log(open_ / prev_close)

    ret1 = out["ret_1"]
    for w in (5, 20, 60):
        out[f"vol_{w}"] = flat(rolling(ret1, key, w).std())
    for w in (5, 20, 60):
        out[f"sma_ratio_{w}"] = close / flat(rolling(close, key, w).mean()) - 1.0

    # Wilder's RSI: seed with the mean of the first 14 changes, then alpha = 1/14 smoothing.
    change = close.groupby(key, sort=False).diff()
    averages = []
    for part in (change.clip(lower=0.0), (-change).clip(lower=0.0)):
        seed = flat(rolling(part, key, 14).mean())
        seeded = part.where(row > 14, seed.where(row == 14))
        averages.append(flat(seeded.groupby(key, sort=False).ewm(alpha=1 / 14, adjust=False).mean()))
    gain, loss = averages
    total = gain + loss
    out["rsi_14"] = (100.0 * gain / total).where(total > 0, 50.0).where(gain.notna())

    by_close = close.groupby(key, sort=False)
    fast = flat(by_close.ewm(span=12, adjust=False).mean())
    slow = flat(by_close.ewm(span=26, adjust=False).mean())
    line = fast - slow
    signal = flat(line.groupby(key, sort=False).ewm(span=9, adjust=False).mean())
    out["macd"] = (line / close).where(row >= 25)
    out["macd_signal"] = (signal / close).where(row >= 33)

    mid = flat(rolling(close, key, 20).mean())
    sd = flat(rolling(close, key, 20).std(ddof=0))
    pctb = (close - (mid - 2.0 * sd)) / (4.0 * sd)
    out["bb_pctb_20"] = pctb.where(sd > 1e-7 * mid, 0.5).where(sd.notna())

    vmean = flat(rolling(volume, key, 20).mean())
    vsd = flat(rolling(volume, key, 20).std())
    out["vol_z_20"] = ((volume - vmean) / vsd).where(vsd > 1e-7 * vmean, 0.0).where(vsd.notna())

    prev_volume = volume.groupby(key, sort=False).shift(1)
    both = (prev_volume > 0) & (volume > 0)
    dlog = np.log(volume.where(both) / prev_volume.where(both))
    out["dlog_volume"] = dlog.where(both, 0.0).where(prev_volume.notna())

    out["skew_20"] = flat(rolling(ret1, key, 20).skew())
    return out[FEATURES]


def compare(df, ours, path):
    """Max absolute difference per feature against the Rust dump, on rows both define."""
    theirs = pd.read_csv(path, dtype={"symbol": str})
    mine = pd.concat([df[["symbol", "date"]], ours], axis=1)
    mine = mine[mine["symbol"].isin(theirs["symbol"].unique())]
    merged = theirs.merge(mine, on=["symbol", "date"], suffixes=("_rust", "_pandas"))
    print(f"compared {len(merged)} rows of {merged['symbol'].nunique()} symbols with {path}")
    worst = 0.0
    for name in FEATURES:
        a, b = merged[f"{name}_rust"], merged[f"{name}_pandas"]
        same_nan = (a.isna() == b.isna()).all()
        both = a.notna() & b.notna()
        diff = float((a[both] - b[both]).abs().max())
        rel = float(((a[both] - b[both]).abs() / b[both].abs().clip(lower=1e-12)).max())
        worst = max(worst, diff)
        print(f"  {name:<14} rows {int(both.sum()):>6}  max |diff| {diff:.3e}  "
              f"max rel {rel:.3e}  warm-up rows agree: {same_nan}")
    print(f"max abs diff over all features: {worst:.3e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--check", help="raw features dumped by normalize_bench --dump")
    args = parser.parse_args()

    df = pd.read_csv(args.csv, dtype={"symbol": str})
    print(f"pandas {pd.__version__}, numpy {np.__version__}: "
          f"{df['symbol'].nunique()} symbols, {len(df)} rows")
    ours = features(df)  # warm-up run, also used for --check
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        features(df)
        times.append(time.perf_counter() - start)
    print("runs (s): " + ", ".join(f"{t:.3f}" for t in times))
    print(f"pandas features median: {statistics.median(times):.4f} s")
    if args.check:
        compare(df, ours, args.check)


if __name__ == "__main__":
    main()
