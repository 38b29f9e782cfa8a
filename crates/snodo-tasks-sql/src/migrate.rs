//! The schema, embedded in the binary and applied at connect by sqlx's migrator (which
//! records what ran in `_sqlx_migrations`, checks checksums, and on PostgreSQL holds an
//! advisory lock so instances starting together migrate once).

use std::borrow::Cow;

use futures_util::future::BoxFuture;
use snodo::tasks::StoreError;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};

/// `(version, description, sql)`, oldest first. Versions are dates so they do not collide
/// with an application's own sqlx migrations in the same database.
pub(crate) type Scripts = &'static [(i64, &'static str, &'static str)];

#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: Scripts = &[
    (
        20261203000001,
        "snodo tasks",
        include_str!("../migrations/sqlite/20261203000001_tasks.sql"),
    ),
    (
        20261204000001,
        "snodo tasks owner index",
        include_str!("../migrations/sqlite/20261204000001_owner_index.sql"),
    ),
];

#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: Scripts = &[
    (
        20261203000001,
        "snodo tasks",
        include_str!("../migrations/postgres/20261203000001_tasks.sql"),
    ),
    (
        20261204000001,
        "snodo tasks owner index",
        include_str!("../migrations/postgres/20261204000001_owner_index.sql"),
    ),
];

#[derive(Debug)]
struct Embedded(Scripts);

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        let migrations = self
            .0
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    Cow::Borrowed(description),
                    MigrationType::Simple,
                    Cow::Borrowed(sql),
                    false,
                )
            })
            .collect();
        Box::pin(async move { Ok(migrations) })
    }
}

/// The migrator for `scripts`; migrations of other components in the same database
/// (other versions in `_sqlx_migrations`) are left alone.
pub(crate) async fn migrator(scripts: Scripts) -> Result<Migrator, StoreError> {
    let mut migrator = Migrator::new(Embedded(scripts))
        .await
        .map_err(|e| StoreError::Unavailable(format!("migrations: {e}")))?;
    migrator.set_ignore_missing(true);
    Ok(migrator)
}
