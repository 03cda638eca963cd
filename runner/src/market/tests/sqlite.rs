//! Loads from SQLite: values that are not bars, and batched pages that end on the last date.

use super::*;

/// SQLite stores whatever a column is given: a load of values that are not what `daily_bars`
/// declares fails naming the column and the value, whatever the strategy.
#[test]
fn a_sqlite_bar_that_is_not_a_bar_fails_the_load_naming_it() {
    on_sqlite(|db| async move {
        synth(&db, &small_market(3), &indicatif::ProgressBar::hidden())
            .await
            .unwrap();
        let Db::Sqlite(pool) = &db else { unreachable!() };
        let first: String = sqlx::query_scalar("SELECT MIN(symbol) FROM daily_bars")
            .fetch_one(pool)
            .await
            .unwrap();
        let corrupt = |sql: &'static str| {
            let first = first.clone();
            async move {
                sqlx::query(sql).bind(first).execute(pool).await.unwrap();
            }
        };
        let load_error = |strategy| {
            let db = db.clone();
            async move {
                let params = LoadParams {
                    strategy,
                    ..LoadParams::default()
                };
                load_with(&db, params).await.0.unwrap_err().to_string()
            }
        };
        let long = format!("{}9", "2020-01-0".repeat(10));
        corrupt(
            "UPDATE daily_bars SET trade_date = '2020-01-0' || trade_date WHERE symbol = $1 \
             AND trade_date = (SELECT MAX(trade_date) FROM daily_bars WHERE symbol = $1)",
        )
        .await;
        for strategy in [FetchStrategy::Stream, FetchStrategy::Batched] {
            let message = load_error(strategy).await;
            assert!(
                message.contains(&format!("`trade_date` of `{first}` holds `2020-01-02"))
                    && message.contains("not a date (YYYY-MM-DD)"),
                "{strategy}: {message}"
            );
        }
        // A stored value is shown cut to 40 characters.
        sqlx::query("UPDATE daily_bars SET trade_date = $1 WHERE symbol = $2 AND trade_date LIKE '2020-01-02020%'")
            .bind(&long)
            .bind(&first)
            .execute(pool)
            .await
            .unwrap();
        let message = load_error(FetchStrategy::Stream).await;
        assert!(message.contains(&format!("holds `{}…`", &long[..40])), "{message}");

        sqlx::query("DELETE FROM daily_bars WHERE trade_date = $1")
            .bind(&long)
            .execute(pool)
            .await
            .unwrap();
        load_with(&db, LoadParams::default())
            .await
            .0
            .expect("the corrupt row is gone");
        corrupt("UPDATE daily_bars SET low = 'n/a' WHERE symbol = $1").await;
        for strategy in [FetchStrategy::Stream, FetchStrategy::Batched] {
            let message = load_error(strategy).await;
            assert!(message.contains("low"), "{strategy}: {message}");
        }
    });
}

/// `batched` pages on the stored `trade_date` text: a page ending on the last date a date
/// can have (where the next day would format as `+10000-01-01`, text that sorts first) ends
/// the symbol instead of starting it again, whatever the page size.
#[test]
fn sqlite_batched_pages_end_on_the_last_possible_date() {
    on_sqlite(|db| async move {
        synth(&db, &small_market(4), &indicatif::ProgressBar::hidden())
            .await
            .unwrap();
        let Db::Sqlite(pool) = &db else { unreachable!() };
        sqlx::query(
            "INSERT INTO daily_bars (version, symbol, trade_date, open, high, low, close, volume, amount, adj_factor) \
             SELECT version, symbol, '9999-12-31', open, high, low, close, volume, amount, adj_factor FROM daily_bars \
             WHERE symbol = (SELECT MIN(symbol) FROM daily_bars) ORDER BY trade_date DESC LIMIT 1",
        )
        .execute(pool)
        .await
        .unwrap();
        let stream = LoadParams {
            strategy: FetchStrategy::Stream,
            ..LoadParams::default()
        };
        let expected = flatten(&load_with(&db, stream).await.0.unwrap());
        assert!(expected
            .iter()
            .any(|r| r.1 == NaiveDate::from_ymd_opt(9999, 12, 31).unwrap()));
        for fetch_size in [1, 2, 7, 10_000] {
            let batched = LoadParams {
                strategy: FetchStrategy::Batched,
                fetch_size,
                ..LoadParams::default()
            };
            let got = flatten(&load_with(&db, batched).await.0.unwrap());
            assert_eq!(got, expected, "fetch_size {fetch_size}");
        }
    });
}
