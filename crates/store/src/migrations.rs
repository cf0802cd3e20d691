//! Migrations built into the binary without sqlx's `migrate!` macro: a list of files and
//! their text ([`embed_migrations!`]), read at compile time with `include_str!`, turned into
//! a [`Migrator`] the way sqlx reads a migrations folder (`<VERSION>_<DESCRIPTION>.sql`, the
//! text's SHA-384 as its checksum, `-- no-transaction` to opt out of a transaction), so a
//! database migrated by the macro's build is recognised by this one. The macro needed a
//! host-side build of sqlx with both database drivers and a second SQLite compiled just to
//! expand it. A test holds each list equal to its folder (`tests` below).

use sqlx::migrate::{MigrateError, Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, SqlSafeStr};
use std::borrow::Cow;

/// One migration file: its name in its folder and its text.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    pub file: &'static str,
    pub sql: &'static str,
}

/// `embed_migrations!("folder": "0001_x.sql", ...)`: the files of a folder beside the
/// crate's `Cargo.toml`, as `&'static [Embedded]`.
#[macro_export]
macro_rules! embed_migrations {
    ($dir:literal: $($file:literal),+ $(,)?) => {
        &[$($crate::migrations::Embedded {
            file: $file,
            sql: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $dir, "/", $file)),
        }),+]
    };
}

/// A migrator of `files`, in version order. A file not named `<VERSION>_<DESCRIPTION>.sql`
/// is refused (never skipped: a skipped migration would leave the tables behind the code).
pub fn migrator(files: &[Embedded]) -> Result<Migrator, MigrateError> {
    let mut migrations = Vec::with_capacity(files.len());
    for file in files {
        let refused =
            || MigrateError::Source(format!("bad migration file name {:?}", file.file).into());
        let (version, rest) = file.file.split_once('_').ok_or_else(refused)?;
        let version: i64 = version.parse().map_err(|_| refused())?;
        let description = rest.strip_suffix(".sql").ok_or_else(refused)?;
        if description.ends_with(".up") || description.ends_with(".down") {
            return Err(refused());
        }
        migrations.push(Migration::new(
            version,
            Cow::Owned(description.replace('_', " ")),
            MigrationType::Simple,
            AssertSqlSafe(file.sql).into_sql_str(),
            file.sql.starts_with("-- no-transaction"),
        ));
    }
    Ok(Migrator::with_migrations(migrations))
}

/// Whether `files` are exactly the files of the folder `dir` (for a test of each list: a
/// file added to the folder but not to its list would otherwise never run).
pub fn check_folder(dir: &std::path::Path, files: &[Embedded]) -> Result<(), String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    let listed: Vec<&str> = files.iter().map(|f| f.file).collect();
    if listed == names {
        Ok(())
    } else {
        Err(format!(
            "{} holds {names:?}; its embed_migrations! list is {listed:?}",
            dir.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

    use super::*;

    #[test]
    fn every_list_is_its_folder() {
        for (dir, files) in [
            ("migrations", crate::OWN_MIGRATIONS),
            ("shared_migrations", crate::SHARED_MIGRATIONS),
            ("pin_migrations", crate::pins::PIN_MIGRATIONS),
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            check_folder(&path, files).unwrap();
            assert_eq!(migrator(files).unwrap().iter().count(), files.len());
        }
    }

    #[test]
    fn names_and_texts_are_read_as_sqlx_reads_a_folder() {
        let files = [
            Embedded {
                file: "20261129000002_remembered_answers.sql",
                sql: "CREATE TABLE a (x);",
            },
            Embedded {
                file: "7_no_tx.sql",
                sql: "-- no-transaction\nVACUUM;",
            },
        ];
        let m = migrator(&files).unwrap();
        let got: Vec<_> = m
            .iter()
            .map(|m| (m.version, m.description.to_string(), m.no_tx))
            .collect();
        assert_eq!(
            got,
            [
                (7, "no tx".to_string(), true),
                (20261129000002, "remembered answers".to_string(), false)
            ]
        );
        // sqlx's checksum of a folder's file: SHA-384 of its text.
        use sha2::Digest;
        let first = m.iter().find(|m| m.version == 7).unwrap();
        assert_eq!(&*first.checksum, &sha2::Sha384::digest(files[1].sql)[..]);
        for bad in ["x_y.sql", "1.sql", "1_y.txt", "1_y.up.sql"] {
            assert!(
                migrator(&[Embedded { file: bad, sql: "" }]).is_err(),
                "{bad}"
            );
        }
    }
}
