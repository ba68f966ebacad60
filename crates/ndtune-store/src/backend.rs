//! [`Backend`]: the one trait both databases implement. [`Store`](crate::Store) writes every
//! statement once, in SQL that SQLite and PostgreSQL both accept with `?N` placeholders, and
//! a backend only runs statements, converting [`Value`]s in and out.

use crate::StoreError;

/// A parameter or a column value: the four types the schema uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// One result row, its columns in the statement's order.
#[derive(Debug)]
pub(crate) struct Row(pub(crate) Vec<Value>);

impl Row {
    fn column(&self, i: usize) -> Result<&Value, String> {
        self.0
            .get(i)
            .ok_or_else(|| format!("a row of {} columns has no column {i}", self.0.len()))
    }

    pub(crate) fn text(&self, i: usize) -> Result<String, String> {
        match self.column(i)? {
            Value::Text(s) => Ok(s.clone()),
            other => Err(format!("column {i}: expected text, found {other:?}")),
        }
    }

    pub(crate) fn int(&self, i: usize) -> Result<i64, String> {
        match self.column(i)? {
            Value::Int(v) => Ok(*v),
            other => Err(format!("column {i}: expected an integer, found {other:?}")),
        }
    }

    pub(crate) fn real_or_null(&self, i: usize) -> Result<Option<f64>, String> {
        match self.column(i)? {
            Value::Real(v) => Ok(Some(*v)),
            Value::Null => Ok(None),
            other => Err(format!("column {i}: expected a real, found {other:?}")),
        }
    }

    pub(crate) fn int_or_null(&self, i: usize) -> Result<Option<i64>, String> {
        match self.column(i)? {
            Value::Int(v) => Ok(Some(*v)),
            Value::Null => Ok(None),
            other => Err(format!("column {i}: expected an integer, found {other:?}")),
        }
    }
}

/// A database connection that runs the store's statements. Statements use `?1`, `?2`, …
/// placeholders; errors name the store's location (a URL without its password).
pub(crate) trait Backend: Send {
    /// Runs a statement; returns the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError>;
    /// Runs a query; returns its rows.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError>;
    /// Starts a transaction. On SQLite it takes the write lock at once (`BEGIN IMMEDIATE`), so
    /// that transactions of several processes run one after the other.
    fn begin(&mut self) -> Result<(), StoreError>;
    fn commit(&mut self) -> Result<(), StoreError>;
    fn rollback(&mut self) -> Result<(), StoreError>;
    /// What a `SELECT` appends to lock the rows it reads for the rest of the transaction and
    /// skip rows another transaction holds: PostgreSQL's `FOR UPDATE SKIP LOCKED`; nothing on
    /// SQLite, where the transaction already holds the whole database.
    fn lock_rows(&self) -> &'static str;
    /// Connects again after the connection broke ([`StoreError::connection_lost`]); a
    /// database without a connection to lose has nothing to do.
    fn reconnect(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}
