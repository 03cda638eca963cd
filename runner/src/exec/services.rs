//! Shared services a stage may use while it runs (exec -> stage): the async runtime and the
//! stock database, connected on first use.

use crate::store::Db;
use std::future::Future;
use std::sync::OnceLock;

pub struct Services {
    rt: tokio::runtime::Handle,
    stock_url: String,
    /// The stock database was named on its own (`--stock-database`, `STOCK_DATABASE_URL`):
    /// it must exist and hold data. Only the results database doubles as a demo market.
    named: bool,
    stock: OnceLock<Result<Db, String>>,
}

impl Services {
    /// `stock_url` is where stages read market data from (connected only when needed);
    /// `named` when the user named it apart from the results database.
    pub fn new(rt: tokio::runtime::Handle, stock_url: String, named: bool) -> Self {
        Self {
            rt,
            stock_url,
            named,
            stock: OnceLock::new(),
        }
    }

    /// Runs async work (database access) from a stage's synchronous code.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The stock database, connected (and migrated) on first use. When it is the results
    /// database and empty, it is filled with the small synthetic demo market, so a fresh
    /// machine needs no setup; a stock database named apart must exist and hold bars. Where
    /// the data comes from is printed either way.
    pub fn stock_db(&self) -> Result<&Db, String> {
        self.stock
            .get_or_init(|| {
                self.block_on(async {
                    let shown = crate::store::redact_url(&self.stock_url);
                    if let Some(missing) = self.named.then(|| missing_named_stock(&self.stock_url)).flatten() {
                        return Err(missing);
                    }
                    let db = Db::connect_with(&self.stock_url, 8).await.map_err(|e| e.to_string())?;
                    if self.named {
                        if !crate::market::has_bars(&db).await.map_err(|e| e.to_string())? {
                            return Err(format!(
                                "the stock database {shown} (--stock-database / STOCK_DATABASE_URL) holds no daily bars\n\
                                 hint: fill it with `measured data synth` or `measured data import` and the same --stock-database"
                            ));
                        }
                        eprintln!("stock data: {shown}");
                        return Ok(db);
                    }
                    match crate::market::ensure_demo_market(&db)
                        .await
                        .map_err(|e| e.to_string())?
                    {
                        Some(report) => eprintln!(
                            "stock data: {shown} was empty, so it was filled with a {report} \
                             (replace it with `measured data import` or `measured data synth`)"
                        ),
                        None => eprintln!("stock data: {shown}"),
                    }
                    Ok(db)
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The error for a stock database named apart (`--stock-database`, `STOCK_DATABASE_URL`) whose
/// SQLite file does not exist; `None` when it exists or is a server. A mistyped path would
/// otherwise become a new file of fake data.
pub fn missing_named_stock(url: &str) -> Option<String> {
    (crate::store::is_sqlite_url(url) && crate::store::sqlite_file_id(url).is_none()).then(|| {
        format!(
            "the stock database {} (--stock-database / STOCK_DATABASE_URL) does not exist\n\
             hint: check the path; create it on purpose with `measured data synth` or \
             `measured data import` and the same --stock-database, or leave it unset to use the results database",
            crate::store::redact_url(url)
        )
    })
}
