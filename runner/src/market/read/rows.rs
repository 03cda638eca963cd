//! What every fetch strategy shares (read: resolve -> fetch -> **rows** -> `SymbolBars`): the
//! value columns it selects, the codes grouped by the version they are read from, the
//! placeholders of a SQLite IN list, and one fetched bar appended to a symbol's columns.

use crate::artifact::SymbolBars;
use crate::market::stock::Bar;

pub(super) const COLUMNS: &str = "trade_date, open, high, low, close, volume, amount, adj_factor";

/// Symbol codes with the dataset version each is read from, grouped by version (in order of
/// first appearance), each group's codes in the order given.
pub(crate) fn by_version(targets: &[(String, i64)]) -> Vec<(i64, Vec<String>)> {
    let mut groups: Vec<(i64, Vec<String>)> = Vec::new();
    for (code, version) in targets {
        match groups.iter_mut().find(|(v, _)| v == version) {
            Some((_, codes)) => codes.push(code.clone()),
            None => groups.push((*version, vec![code.clone()])),
        }
    }
    groups
}

/// `?, ?, ...` for SQLite IN lists (placeholders only; values are always bound).
pub(super) fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

pub(super) fn push_bar(s: &mut SymbolBars, b: Bar) {
    s.dates.push(b.date);
    s.open.push(b.open);
    s.high.push(b.high);
    s.low.push(b.low);
    s.close.push(b.close);
    s.volume.push(b.volume);
    s.amount.push(b.amount);
    s.adj_factor.push(b.adj_factor);
}
