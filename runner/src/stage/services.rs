//! Shared services a stage may use while it runs (given by exec to every stage): the async runtime and the
//! stock database, connected on first use.

use crate::db::Db;
use crate::market::{DataSpec, StockError};
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

/// The codes a manifest's loads may choose from (`None`: every symbol), or why its declared
/// data is not what the stock database holds.
type Universe = Result<Option<Arc<[String]>>, StockError>;

pub struct Services {
    rt: tokio::runtime::Handle,
    stock_url: String,
    /// The stock database was named on its own (`--stock-database`, `STOCK_DATABASE_URL`):
    /// it must exist and hold data. Only the results database doubles as a demo market.
    named: bool,
    stock: OnceLock<Result<Db, StockError>>,
    /// Per declared `[data]`: a worker may serve runs of several manifests.
    universes: Mutex<Vec<(DataSpec, Universe)>>,
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
            universes: Mutex::new(Vec::new()),
        }
    }

    /// Uses `db`, already connected and prepared by the run (see `crate::preflight`), as the
    /// stock database, with the universe the preparation found for `data`.
    pub fn prepared(self, db: Db, data: &DataSpec, universe: Option<Vec<String>>) -> Self {
        let _ = self.stock.set(Ok(db));
        if let Ok(mut u) = self.universes.lock() {
            u.push((data.clone(), Ok(universe.map(Arc::from))));
        }
        self
    }

    /// The codes loads of a manifest declaring `data` choose from: the declared market's, or
    /// every symbol when it declares none. Checked against the stock database once per
    /// declaration, so a worker whose stock database holds another market fails its trials
    /// with the reason instead of loading other data.
    pub fn universe(&self, data: &DataSpec) -> Universe {
        if !data.restricts() {
            return Ok(None);
        }
        let mut known = self.universes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, u)) = known.iter().find(|(d, _)| d == data) {
            return u.clone();
        }
        let u = match self.stock_db() {
            Ok(db) => self
                .block_on(crate::market::universe(db, data))
                .map(|codes| codes.map(Arc::from)),
            Err(e) => Err(e),
        };
        known.push((data.clone(), u.clone()));
        u
    }

    /// Runs async work (database access) from a stage's synchronous code.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The stock database, connected (and migrated) on first use. When it is the results
    /// database and empty, it is filled with the small synthetic demo market, so a fresh
    /// machine needs no setup; a stock database named apart must exist and hold bars. Where
    /// the data comes from is printed either way.
    pub fn stock_db(&self) -> Result<&Db, StockError> {
        self.stock
            .get_or_init(|| {
                self.block_on(async {
                    let shown = crate::db::redact_url(&self.stock_url);
                    if let Some(missing) = self.named.then(|| missing_named_stock(&self.stock_url)).flatten() {
                        return Err(missing);
                    }
                    let db = Db::connect_with(&self.stock_url, 8)
                        .await
                        .map_err(StockError::database)?;
                    if self.named {
                        if !crate::market::has_bars(&db).await.map_err(StockError::database)? {
                            return Err(StockError::Empty(shown));
                        }
                        eprintln!("stock data: {shown}");
                        return Ok(db);
                    }
                    match crate::market::catalog::ensure_demo_recorded(&db)
                        .await
                        .map_err(StockError::database)?
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
pub fn missing_named_stock(url: &str) -> Option<StockError> {
    (crate::db::is_sqlite_url(url) && crate::db::sqlite_file_id(url).is_none())
        .then(|| StockError::Missing(crate::db::redact_url(url)))
}
