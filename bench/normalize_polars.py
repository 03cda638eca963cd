"""polars peer for the `normalize` stage's default-preset features.

Computes the same 20 columns as `measured` (docs/features.md) with idiomatic polars: one lazy
query of window expressions (`diff`/`shift`/`rolling_*`/`ewm_mean` with `.over("symbol")`), on
a bars CSV written by `cargo run --release --example normalize_bench -- --synth --write PATH`.
Reading the CSV is not timed (the Rust side starts from bars in memory too); each timed run
builds the query and collects it into a DataFrame. `--threads N` sets POLARS_MAX_THREADS (the
size of polars' thread pool, fixed when polars is imported); without it polars uses every core.

    .venv-bench/bin/python bench/normalize_polars.py --csv bench/data/synth.csv --runs 5 \
        --threads 1 --check bench/data/rust_features.csv

Output, tab-separated: one `polars threads=N run=K features_seconds=X` line per timed run,
then `polars threads=N median_features_seconds=X runs=N`, and with `--check` a line
`check max_abs_diff=X values=N ok=true|false` (exit status 1 when a warm-up row disagrees, a
row is missing or a value differs by more than 1e-9).
"""

import argparse
import os
import statistics
import sys
import time

FEATURES = [
    "ret_1", "ret_5", "ret_10", "ret_20", "hl_range", "close_pos", "gap",
    "vol_5", "vol_20", "vol_60", "sma_ratio_5", "sma_ratio_20", "sma_ratio_60",
    "rsi_14", "macd", "macd_signal", "bb_pctb_20", "vol_z_20", "dlog_volume", "skew_20",
]

# Largest absolute difference from the Rust columns that still counts as the same numbers.
TOLERANCE = 1e-9


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True,
                        help="bars: symbol,date,open,high,low,close,volume,amount,adj_factor")
    parser.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up")
    parser.add_argument("--check", help="raw features dumped by normalize_bench --dump")
    parser.add_argument("--threads", type=int,
                        help="POLARS_MAX_THREADS (default: polars' own, every core)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    return args


def features(bars):
    """The 20 default-preset columns of `bars` (a LazyFrame), in the input's row order."""
    by = "symbol"
    c, o, h, lo, v = (pl.col(name) for name in ("close", "open", "high", "low", "volume"))
    row, ret1 = pl.col("row"), pl.col("ret_1")

    # Split adjustment: prices times the factor, volume divided by it.
    adj = pl.col("adj_factor")
    adjusted = bars.with_columns(
        close=c * adj, open=o * adj, high=h * adj, low=lo * adj, volume=v / adj,
    )

    # Per-symbol series the features are built from.
    def ema(x, span):
        return x.ewm_mean(span=span, adjust=False)

    base = adjusted.with_columns(
        row=pl.int_range(pl.len()).over(by),
        prev_close=c.shift(1).over(by),
        prev_volume=v.shift(1).over(by),
        change=c.diff().over(by),
        macd_line=(ema(c, 12) - ema(c, 26)).over(by),
        **{f"ret_{k}": c.log().diff(k).over(by) for k in (1, 5, 10, 20)},
    )

    # Wilder's RSI: seed with the mean of the first 14 changes (row 14), then alpha = 1/14.
    def wilder(part):
        seeded = pl.when(row > 14).then(part).when(row == 14).then(part.rolling_mean(14))
        return seeded.ewm_mean(alpha=1 / 14, adjust=False).over(by)

    change = pl.col("change")
    mid = c.rolling_mean(20).over(by)
    sd = c.rolling_std(20, ddof=0).over(by)
    vmean = v.rolling_mean(20).over(by)
    vsd = v.rolling_std(20).over(by)
    prev_close, prev_volume = pl.col("prev_close"), pl.col("prev_volume")
    line = pl.col("macd_line")
    span = h - lo

    columns = base.with_columns(
        hl_range=span / c,
        close_pos=pl.when(span > 0).then((c - lo) / span).otherwise(0.5),
        gap=(o / prev_close).log(),
        **{f"vol_{w}": ret1.rolling_std(w).over(by) for w in (5, 20, 60)},
        **{f"sma_ratio_{w}": c / c.rolling_mean(w).over(by) - 1.0 for w in (5, 20, 60)},
        gain=wilder(change.clip(lower_bound=0.0)),
        loss=wilder((-change).clip(lower_bound=0.0)),
        macd=pl.when(row >= 25).then(line / c),
        macd_signal=pl.when(row >= 33).then(ema(line, 9).over(by) / c),
        bb_pctb_20=pl.when(sd > 1e-7 * mid).then((c - (mid - 2.0 * sd)) / (4.0 * sd))
        .when(sd.is_not_null()).then(0.5),
        vol_z_20=pl.when(vsd > 1e-7 * vmean).then((v - vmean) / vsd)
        .when(vsd.is_not_null()).then(0.0),
        dlog_volume=pl.when((prev_volume > 0) & (v > 0)).then((v / prev_volume).log())
        .when(prev_volume.is_not_null()).then(0.0),
        skew_20=ret1.rolling_skew(20, bias=False).over(by),
    )

    gain, loss = pl.col("gain"), pl.col("loss")
    total = gain + loss
    # A window of (numerically) equal returns has no skew: 0 when its variance (divisor 20,
    # from vol_20's divisor-19 sd) is at most 1e-14.
    flat = pl.col("vol_20") ** 2 * (19 / 20) <= 1e-14
    return columns.with_columns(
        rsi_14=pl.when(total > 0).then(100.0 * gain / total).when(total.is_not_null()).then(50.0),
        skew_20=pl.when(flat).then(0.0).otherwise(pl.col("skew_20")),
    ).select(FEATURES)


def compare(bars, ours, path):
    """Checks every value of the Rust dump against ours; returns whether they agree."""
    theirs = pl.read_csv(path, schema_overrides={"symbol": pl.String, "date": pl.String,
                                                 **{name: pl.Float64 for name in FEATURES}})
    mine = pl.concat([bars.select("symbol", "date"), ours], how="horizontal")
    merged = theirs.join(mine, on=["symbol", "date"], how="inner", suffix="_polars")
    symbols = theirs["symbol"].n_unique()
    print(f"# compared {merged.height} of {theirs.height} rows ({symbols} symbols) with {path}")
    ok = merged.height == theirs.height
    worst, values = 0.0, 0
    for name in FEATURES:
        # Warm-up rows are NaN in the dump and null here; both read back as NaN.
        a = merged[name].to_numpy()
        b = merged[f"{name}_polars"].to_numpy()
        a_nan, b_nan = a != a, b != b
        mismatched = int((a_nan != b_nan).sum())
        both = ~a_nan & ~b_nan
        diff = float(abs(a[both] - b[both]).max()) if both.any() else 0.0
        worst = max(worst, diff)
        values += int(both.sum())
        ok = ok and mismatched == 0
        print(f"#   {name:<14} values {int(both.sum()):>7}  max |diff| {diff:.3e}  "
              f"warm-up rows that disagree {mismatched}")
    ok = ok and worst <= TOLERANCE
    print(f"check\tmax_abs_diff={worst:.3e}\tvalues={values}\tok={'true' if ok else 'false'}")
    return ok


def main(args):
    bars = pl.read_csv(args.csv, schema_overrides={"symbol": pl.String, "date": pl.String})
    threads = pl.thread_pool_size()
    print(f"# polars {pl.__version__}")
    print(f"# {bars['symbol'].n_unique()} symbols, {bars.height} rows from {args.csv}; "
          f"thread pool {threads}")
    lazy = bars.lazy()
    ours = features(lazy).collect()  # warm-up run, also used for --check
    times = []
    for run in range(1, args.runs + 1):
        start = time.perf_counter()
        features(lazy).collect()
        seconds = time.perf_counter() - start
        times.append(seconds)
        print(f"polars\tthreads={threads}\trun={run}\tfeatures_seconds={seconds:.6f}", flush=True)
    print(f"polars\tthreads={threads}\tmedian_features_seconds={statistics.median(times):.6f}"
          f"\truns={args.runs}")
    if args.check and not compare(bars, ours, args.check):
        sys.exit(1)


if __name__ == "__main__":
    ARGS = parse_args()
    if ARGS.threads is not None:
        # polars sizes its thread pool once, when it is imported.
        os.environ["POLARS_MAX_THREADS"] = str(ARGS.threads)
    import polars as pl  # noqa: E402

    main(ARGS)
