//! Shared services a stage may use while it runs (given by exec to every stage): the stock
//! database, connected on first use, and the versions a manifest's loads read. A stage waits on
//! the stock database through `crate::db::wait`.

use crate::db::{self, Db};
use crate::market::{DataSpec, DataView, StockError};
use std::sync::{Arc, Mutex, OnceLock};

/// The dataset versions a manifest's loads read, or why its declared data is not what the
/// stock database holds.
type View = Result<Arc<DataView>, StockError>;

/// What every stage of a run (or of a worker's runs) shares: the stock database and its views.
pub struct Services {
    stock_url: String,
    /// The stock database was named on its own (`--stock-database`, `STOCK_DATABASE_URL`):
    /// it must exist and hold data. Only the results database doubles as a demo market.
    named: bool,
    stock: OnceLock<Result<Db, StockError>>,
    /// Per declared `[data]`: a worker may serve runs of several manifests.
    views: Mutex<Vec<(DataSpec, View)>>,
}

impl Services {
    /// `stock_url` is where stages read market data from (connected only when needed);
    /// `named` when the user named it apart from the results database.
    pub fn new(stock_url: String, named: bool) -> Self {
        Self {
            stock_url,
            named,
            stock: OnceLock::new(),
            views: Mutex::new(Vec::new()),
        }
    }

    /// Uses `db`, already connected and prepared by the run (see `crate::preflight`), as the
    /// stock database, with the versions the preparation chose for `data`.
    pub fn prepared(self, db: Db, data: &DataSpec, view: DataView) -> Self {
        let _ = self.stock.set(Ok(db));
        if let Ok(mut v) = self.views.lock() {
            v.push((data.clone(), Ok(Arc::new(view))));
        }
        self
    }

    /// The versions loads of a manifest declaring `data` read: the ones it pins (a run's
    /// stored versions), else the declared data's, else the newest version of every dataset.
    /// Resolved once per declaration, so a worker whose stock database lacks them fails its
    /// trials with the reason instead of loading other data.
    pub fn view(&self, data: &DataSpec) -> View {
        let mut known = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = known.iter().find(|(d, _)| d == data) {
            return v.clone();
        }
        let v = match self.stock_db() {
            Ok(db) => match &data.pinned {
                Some(refs) => db::wait(crate::market::stored_view(db, refs)),
                None => db::wait(crate::market::data_view(db, data)),
            }
            .map(Arc::new),
            Err(e) => Err(e),
        };
        known.push((data.clone(), v.clone()));
        v
    }

    /// The stock database, connected (and migrated) on first use. When it is the results
    /// database and empty, it is filled with the small synthetic demo market, so a fresh
    /// machine needs no setup; a stock database named apart must exist and hold bars. Where
    /// the data comes from is printed either way.
    pub fn stock_db(&self) -> Result<&Db, StockError> {
        self.stock
            .get_or_init(|| {
                db::wait(async {
                    let shown = crate::db::redact_url(&self.stock_url);
                    if let Some(missing) = self.named.then(|| missing_named_stock(&self.stock_url)).flatten() {
                        return Err(missing);
                    }
                    let db = Db::connect_with(&self.stock_url, 8)
                        .await
                        .map_err(StockError::database)?;
                    let empty = crate::market::versions::list(&db)
                        .await
                        .map_err(StockError::database)?
                        .is_empty();
                    if self.named {
                        if empty {
                            return Err(StockError::Empty(shown));
                        }
                        eprintln!("stock data: {shown}");
                        return Ok(db);
                    }
                    if !empty {
                        eprintln!("stock data: {shown}");
                        return Ok(db);
                    }
                    let hidden = indicatif::ProgressBar::hidden();
                    match crate::market::catalog::ensure_synth(&db, &crate::market::demo_options(), &hidden)
                        .await
                        .map_err(StockError::database)?
                    {
                        (_, Some(report)) => eprintln!(
                            "stock data: {shown} was empty, so it was filled with a {report} \
                             (add your own with `measured data import` or `measured data synth`)"
                        ),
                        (version, None) => eprintln!("stock data: {shown} ({version})"),
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
