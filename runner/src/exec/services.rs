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

    /// The stock database, connected (and migrated) on first use.
    pub fn stock_db(&self) -> Result<&Db, String> {
        self.stock
            .get_or_init(|| self.block_on(Db::connect(&self.stock_url)).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }
}
