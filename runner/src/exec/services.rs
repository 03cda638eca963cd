//! Shared services a stage may use while it runs (exec -> stage): the async runtime and the
//! stock database, connected on first use.

use crate::store::Db;
use std::future::Future;
use std::sync::OnceLock;

pub struct Services {
    rt: tokio::runtime::Handle,
    stock_url: String,
    stock: OnceLock<Result<Db, String>>,
}

impl Services {
    /// `stock_url` is where stages read market data from (connected only when needed).
    pub fn new(rt: tokio::runtime::Handle, stock_url: String) -> Self {
        Self {
            rt,
            stock_url,
            stock: OnceLock::new(),
        }
    }

    /// Runs async work (database access) from a stage's synchronous code.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The stock database, connected (and migrated) on first use. An empty one is filled with
    /// the small synthetic demo market, so a fresh machine needs no setup; where the data
    /// comes from is printed either way.
    pub fn stock_db(&self) -> Result<&Db, String> {
        self.stock
            .get_or_init(|| {
                self.block_on(async {
                    let db = Db::connect_with(&self.stock_url, 8).await.map_err(|e| e.to_string())?;
                    let shown = crate::store::redact_url(&self.stock_url);
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
