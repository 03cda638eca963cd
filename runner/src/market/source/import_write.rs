//! Writing what an import read (`import::prepare` -> [`ImportPlan`] -> **here** -> a new dataset
//! version): the version already holding the same files is found instead; `--into` extends a
//! dataset's newest version, and stops at bars the two disagree on unless `--replace`.

use super::import::{prepare, FileSummary, ImportPlan};
use super::import_options::{ImportError, ImportOptions, ImportReport, SHOWN_CONFLICTS};
use crate::db::Db;
use crate::market::stock::{db_message, MarketError, SymbolInfo};
use crate::market::versions::{self, FileRef, NewVersion, Origin, VersionRef};
use crate::market::write::write_import;
use chrono::NaiveDate;
use std::collections::HashMap;

/// Imports `opts.files` into `db` as a new dataset version (see [`ImportOptions`]); with
/// `dry_run` it only checks them and reports 0 rows written.
pub async fn import(db: &Db, opts: &ImportOptions) -> Result<ImportReport, ImportError> {
    let plan = prepare(opts)?;
    let report = ImportReport {
        version: None,
        already: false,
        files: plan.files,
        rows_read: plan.rows_read,
        rows_written: 0,
        symbols: plan.codes.len(),
        skipped: plan.skipped,
        bad: plan.bad.clone(),
        first_date: plan.first_date,
        last_date: plan.last_date,
    };
    if opts.dry_run {
        return Ok(report);
    }
    let done = import_plan(db, plan, opts).await?;
    Ok(ImportReport {
        version: Some(done.version),
        already: done.already,
        rows_written: done.rows_written,
        ..report
    })
}

/// What [`import_plan`] wrote, or found already written.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub version: VersionRef,
    pub already: bool,
    pub rows_written: u64,
}

/// Writes what [`prepare`] read as a new version (of `opts.dataset`, the first file's name, or
/// with `opts.into` that dataset); the version already holding these files when there is one.
pub(crate) async fn import_plan(db: &Db, plan: ImportPlan, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let files: Vec<FileRef> = plan.sources.iter().map(FileSummary::file_ref).collect();
    let db_err = |e: MarketError| ImportError::Db(e.to_string());
    let parent = match &opts.into {
        None => None,
        Some(name) => match versions::latest(db)
            .await
            .map_err(db_err)?
            .into_iter()
            .find(|v| &v.dataset == name)
        {
            Some(v) => Some(v),
            None => {
                let known: Vec<String> = versions::latest(db)
                    .await
                    .map_err(db_err)?
                    .into_iter()
                    .map(|v| v.dataset)
                    .collect();
                return Err(ImportError::Options(format!(
                    "--into {}: the stock database holds no dataset of that name{}",
                    crate::printable::printable(name),
                    match crate::hint::did_you_mean(name, known.iter().map(String::as_str)) {
                        Some(h) => format!("; {h}"),
                        None if known.is_empty() => String::new(),
                        None => format!(" (datasets: {})", known.join(", ")),
                    }
                )));
            }
        },
    };
    let origin = match &parent {
        Some(p) => Origin::Extend {
            parent: p.label(),
            files,
            replace: opts.replace,
        },
        None => Origin::Import { files },
    };
    if let Some(v) = versions::by_key(db, &origin.key()).await.map_err(db_err)? {
        return Ok(Imported {
            version: v.to_ref(),
            already: true,
            rows_written: 0,
        });
    }
    let dataset = match (&parent, &opts.dataset) {
        (Some(p), _) => p.dataset.clone(),
        (None, Some(name)) => name.clone(),
        (None, None) => {
            versions::dataset_from_file(opts.files.first().map_or(std::path::Path::new(""), |p| p.as_path()))
        }
    };
    if !versions::is_valid_dataset(&dataset) {
        return Err(ImportError::Options(format!(
            "`{}` cannot name a dataset: use 1 to 64 of A-Z a-z 0-9 _ - . (not starting with . or -)",
            crate::printable::printable(&dataset)
        )));
    }
    if let (Some(p), false) = (&parent, opts.replace) {
        conflicts(db, &plan, p).await?;
    }
    if plan.groups.is_empty() && parent.is_none() {
        return Err(ImportError::Options("the input holds no bars to import".into()));
    }
    let infos: Vec<SymbolInfo> = plan.codes.iter().map(|c| SymbolInfo::from_code(c)).collect();
    let new = NewVersion {
        dataset,
        origin,
        parent: parent.as_ref().map(|p| p.id),
    };
    let (version, rows_written) = write_import(db, &new, &infos, &plan.groups)
        .await
        .map_err(ImportError::Db)?;
    Ok(Imported {
        version,
        already: false,
        rows_written,
    })
}

/// Bars of `plan` that `parent` holds with other values, as a conflict error.
async fn conflicts(db: &Db, plan: &ImportPlan, parent: &versions::Version) -> Result<(), ImportError> {
    type Row = (NaiveDate, f64, f64, f64, f64, f64, f64, f64);
    let sql = "SELECT trade_date, open, high, low, close, volume, amount, adj_factor FROM daily_bars \
               WHERE version = $1 AND symbol = $2 ORDER BY trade_date";
    let mut found = Vec::new();
    let mut total = 0usize;
    for (group, positions) in plan.groups.iter().zip(&plan.positions) {
        let rows: Vec<Row> = crate::on_pool!(db, |pool| {
            sqlx::query_as::<_, Row>(sql)
                .bind(parent.id)
                .bind(&group.code)
                .fetch_all(pool)
                .await
        })
        .map_err(|e| ImportError::Db(db_message(&e)))?;
        if rows.is_empty() {
            continue;
        }
        let stored: HashMap<NaiveDate, Row> = rows.into_iter().map(|r| (r.0, r)).collect();
        for (b, (file, line)) in group.bars.iter().zip(positions) {
            let differs = stored.get(&b.date).is_some_and(|r| {
                (r.1, r.2, r.3, r.4, r.5, r.6, r.7)
                    != (b.open, b.high, b.low, b.close, b.volume, b.amount, b.adj_factor)
            });
            if differs {
                total += 1;
                if found.len() < SHOWN_CONFLICTS {
                    let at = plan.sources.get(*file).map_or("?", |s| s.file.as_str());
                    found.push((format!("{at}:{line}"), group.code.clone(), b.date));
                }
            }
        }
    }
    if total == 0 {
        return Ok(());
    }
    Err(ImportError::Conflict {
        dataset: parent.label(),
        conflicts: found,
        total,
    })
}
