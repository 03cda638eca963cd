"""ConnectorX peer for the `load` stage: daily bars from PostgreSQL into Arrow.

Reads every row of `daily_bars` the way `polars.read_database_uri` does (ConnectorX,
`return_type="arrow"`), with the statement `measured`'s `copy` strategy sends per connection:
the codes of the `symbols` table, sorted, dealt round-robin into `--connections` shares (as
`load` deals them to its workers), and for each share

    SELECT symbol, trade_date, open, high, low, close, volume, amount, adj_factor
    FROM daily_bars WHERE version = V AND symbol IN (...codes...)
    AND trade_date >= DATE '0001-01-01' AND trade_date <= DATE '9999-12-31'
    ORDER BY symbol, trade_date

With more than one connection the statements go to `cx.read_sql` as a list, which runs them
concurrently, one connection each, and concatenates the results into one Arrow table. The
database must hold one dataset version, V, as the benchmark's does; its codes and the expected
row count are read with ConnectorX too, untimed; a run that returns another count fails with
exit status 1.

    .venv-bench/bin/python bench/load_connectorx.py --url "$DATABASE_URL" --connections 2 --runs 5

Output, tab-separated: `connectorx connections=N run=K rows=R seconds=S rows_per_second=X` per
timed run (after one warm-up), then `connectorx connections=N rows=R median_seconds=S
median_rows_per_second=X runs=N`.
"""

import argparse
import statistics
import sys
import time

import connectorx as cx

COLUMNS = "symbol, trade_date, open, high, low, close, volume, amount, adj_factor"


def statement(version, codes):
    listed = ", ".join("'" + code.replace("'", "''") + "'" for code in codes)
    return (f"SELECT {COLUMNS} FROM daily_bars WHERE version = {int(version)} AND symbol IN ({listed}) "
            "AND trade_date >= DATE '0001-01-01' AND trade_date <= DATE '9999-12-31' "
            "ORDER BY symbol, trade_date")


def shares(codes, n):
    """`codes` dealt round-robin into `n` shares, as `load` deals them to its workers; each
    share stays sorted."""
    n = min(n, len(codes))
    return [codes[i::n] for i in range(n)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="postgres://user:password@host:port/db")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up")
    args = parser.parse_args()
    if args.connections < 1 or args.runs < 1:
        parser.error("--connections and --runs must be at least 1")

    print(f"# connectorx {cx.__version__}")
    versions = cx.read_sql(args.url, "SELECT min(id) AS v, count(*) AS n FROM dataset_versions",
                           return_type="arrow")
    if int(versions.column(1)[0].as_py()) != 1:
        sys.exit("the database must hold exactly one dataset version")
    version = int(versions.column(0)[0].as_py())
    symbols = cx.read_sql(args.url, f"SELECT code FROM symbols WHERE version = {version}",
                          return_type="arrow")
    codes = sorted(symbols.column("code").to_pylist())
    if not codes:
        sys.exit("no symbols in the symbols table")
    counted = cx.read_sql(args.url, f"SELECT count(*) AS n FROM daily_bars WHERE version = {version}",
                          return_type="arrow")
    expected = int(counted.column(0)[0].as_py())
    queries = [statement(version, share) for share in shares(codes, args.connections)]
    connections = len(queries)
    query = queries[0] if connections == 1 else queries
    print(f"# {len(codes)} symbols, {expected} rows in daily_bars; connections: {connections}")

    def read():
        start = time.perf_counter()
        table = cx.read_sql(args.url, query, return_type="arrow")
        seconds = time.perf_counter() - start
        if table.num_rows != expected:
            sys.exit(f"read {table.num_rows} rows, daily_bars has {expected}")
        return table.num_rows, seconds

    rows, seconds = read()  # warm-up
    print(f"# warm-up: {seconds:.6f} s")
    times = []
    for run in range(1, args.runs + 1):
        rows, seconds = read()
        times.append(seconds)
        print(f"connectorx\tconnections={connections}\trun={run}\trows={rows}"
              f"\tseconds={seconds:.6f}\trows_per_second={rows / seconds:.0f}", flush=True)
    median = statistics.median(times)
    print(f"connectorx\tconnections={connections}\trows={rows}\tmedian_seconds={median:.6f}"
          f"\tmedian_rows_per_second={rows / median:.0f}\truns={args.runs}")


if __name__ == "__main__":
    main()
