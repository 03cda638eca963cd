//! The options every command shares (`--database`, `--stock-database`, `--quiet`), resolved
//! against the project root: where results go and where stock data comes from.

use crate::paths::Root;

/// Where results go; shared by every command that touches the database.
#[derive(Debug, Clone)]
pub struct Globals {
    /// The results database: as given, or the default under the command's project root.
    pub database: String,
    /// Stock data; the results database when `None`.
    pub stock_database: Option<String>,
    pub quiet: bool,
}

impl Globals {
    /// The global options with the default database resolved against `root`; a database the
    /// user named (`--database`, `DATABASE_URL`) stays as written, relative to the current
    /// directory.
    pub fn resolve(database: Option<&str>, stock_database: Option<String>, quiet: bool, root: &Root) -> Globals {
        Globals {
            database: root.database(database),
            stock_database,
            quiet,
        }
    }

    pub fn stock_url(&self) -> String {
        self.stock_database.clone().unwrap_or_else(|| self.database.clone())
    }
}
