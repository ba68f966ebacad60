//! The SQLite [`Backend`]: an embedded file, the zero-setup default. Opening and migrating the
//! file is [`crate::open`]'s job; this module only runs statements on the open connection.

use crate::backend::{Backend, Row, Value};
use crate::error::At;
use crate::StoreError;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};
use std::path::PathBuf;

pub(crate) struct Sqlite {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Real(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

fn value(v: ValueRef<'_>) -> rusqlite::Result<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(
            std::str::from_utf8(t)
                .map_err(rusqlite::Error::Utf8Error)?
                .to_string(),
        ),
        ValueRef::Blob(_) => {
            return Err(rusqlite::Error::InvalidColumnType(
                0,
                "a blob".into(),
                rusqlite::types::Type::Blob,
            ))
        }
    })
}

impl Backend for Sqlite {
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(rusqlite::params_from_iter(params)))
            .map(|n| n as u64)
            .at(&self.path)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                let columns = s.column_count();
                s.query_map(rusqlite::params_from_iter(params), |r| {
                    (0..columns)
                        .map(|i| value(r.get_ref(i)?))
                        .collect::<rusqlite::Result<Vec<Value>>>()
                        .map(Row)
                })?
                .collect()
            })
            .at(&self.path)
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN IMMEDIATE").at(&self.path)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT").at(&self.path)
    }

    fn rollback(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("ROLLBACK").at(&self.path)
    }

    fn lock_rows(&self) -> &'static str {
        ""
    }
}
