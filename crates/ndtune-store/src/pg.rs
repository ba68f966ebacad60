//! The PostgreSQL [`Backend`]: a database shared by workers on several machines, reached with
//! the `postgres` client (no TLS). Opening checks, before writing anything, that the database is
//! empty or an ndtune store this version can open, then migrates it in one transaction under
//! an advisory lock, so workers starting together migrate it once.

use crate::backend::{Backend, Row, Value};
use crate::schema::{APPLICATION_ID, UPSERT_META};
use crate::StoreError;
use postgres::error::SqlState;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, NoTls, Statement};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// How long connecting waits for a server that does not answer, unless the URL says
/// (`connect_timeout=`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Postgres {
    client: Client,
    /// How to connect, again where the connection breaks.
    config: postgres::Config,
    /// The URL without its password, for messages.
    shown: PathBuf,
    statements: HashMap<String, Statement>,
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) if *ty == Type::INT8 => v.to_sql(ty, out),
            Value::Real(v) if *ty == Type::FLOAT8 => v.to_sql(ty, out),
            Value::Text(s) if *ty == Type::TEXT || *ty == Type::VARCHAR => s.to_sql(ty, out),
            other => Err(format!("cannot pass {other:?} as a parameter of type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn value(row: &postgres::Row, i: usize) -> Result<Value, postgres::Error> {
    let ty = row.columns()[i].type_();
    Ok(if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Value::Null, Value::Int)
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Value::Null, |v| Value::Int(v.into()))
    } else if *ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?
            .map_or(Value::Null, Value::Real)
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Value::Null, Value::Text)
    })
}

/// `?N` placeholders as PostgreSQL's `$N`.
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

impl Postgres {
    fn error(&self, error: postgres::Error) -> StoreError {
        StoreError::Postgres {
            path: self.shown.clone(),
            error,
        }
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let statement = self
            .client
            .prepare(&dollar_placeholders(sql))
            .map_err(|e| self.error(e))?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client.batch_execute(sql).map_err(|e| self.error(e))
    }
}

fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl Backend for Postgres {
    fn execute(&mut self, sql: &str, values: &[Value]) -> Result<u64, StoreError> {
        let statement = self.statement(sql)?;
        self.client
            .execute(&statement, &params(values))
            .map_err(|e| self.error(e))
    }

    fn query(&mut self, sql: &str, values: &[Value]) -> Result<Vec<Row>, StoreError> {
        let statement = self.statement(sql)?;
        let rows = self
            .client
            .query(&statement, &params(values))
            .map_err(|e| self.error(e))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| value(r, i)).collect())
            .map(|r: Result<Vec<Value>, _>| r.map(Row).map_err(|e| self.error(e)))
            .collect()
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.batch("BEGIN")
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) -> Result<(), StoreError> {
        self.batch("ROLLBACK")
    }

    fn lock_rows(&self) -> &'static str {
        " FOR UPDATE SKIP LOCKED"
    }

    fn reconnect(&mut self) -> Result<(), StoreError> {
        self.client = self.config.connect(NoTls).map_err(|e| self.error(e))?;
        // Prepared statements belonged to the old connection.
        self.statements.clear();
        Ok(())
    }
}

/// What a database holds, as far as ndtune is concerned.
enum Contents {
    Empty,
    Store(u32),
    NotAStore(String),
}

/// Connects to the database at `url` (a URL or a key/value connection string), checks what it
/// holds and brings it to version `steps.len()`. Returns the backend and the schema version.
pub(crate) fn open(url: &str, steps: &[&str]) -> Result<(Postgres, u32), StoreError> {
    let shown = crate::location::redact(url);
    let connect_error = |error: postgres::Error| {
        let hint = match error.code() {
            Some(c)
                if *c == SqlState::INVALID_PASSWORD
                    || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
            {
                "the server refused the credentials"
            }
            Some(c) if *c == SqlState::INVALID_CATALOG_NAME => {
                "the database does not exist: create it first (createdb)"
            }
            _ => "the server cannot be reached or refused the connection",
        };
        StoreError::Connect {
            url: shown.clone(),
            hint: hint.into(),
            error,
        }
    };
    let mut config: postgres::Config = url.parse().map_err(|error| StoreError::Connect {
        url: shown.clone(),
        hint: "not a valid PostgreSQL URL or key/value connection string".into(),
        error,
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    let client = config.connect(NoTls).map_err(connect_error)?;
    let mut pg = Postgres {
        client,
        config,
        shown: PathBuf::from(&shown),
        statements: HashMap::new(),
    };
    let supported = steps.len() as u32;
    let version = match contents(&mut pg)? {
        Contents::Store(v) if v == supported => v,
        Contents::Store(v) if v > supported => {
            return Err(StoreError::NewerSchema {
                path: pg.shown.clone(),
                found: v,
                supported,
            })
        }
        Contents::NotAStore(reason) => return Err(not_a_store(&pg, reason)),
        Contents::Empty | Contents::Store(_) => bring_up_to_date(&mut pg, steps)?,
    };
    Ok((pg, version))
}

fn not_a_store(pg: &Postgres, reason: String) -> StoreError {
    StoreError::NotAStore {
        path: pg.shown.clone(),
        reason,
    }
}

/// Runs the migrations the database lacks in one transaction, under an advisory lock, after
/// checking again under that lock what it holds.
fn bring_up_to_date(pg: &mut Postgres, steps: &[&str]) -> Result<u32, StoreError> {
    let supported = steps.len() as u32;
    pg.begin()?;
    let migrated = migrate_locked(pg, steps);
    match migrated {
        Ok(v) => {
            pg.commit()?;
            Ok(v)
        }
        Err(e) => {
            pg.rollback()?;
            Err(e)
        }
    }
    .and_then(|v| {
        if v > supported {
            Err(StoreError::NewerSchema {
                path: pg.shown.clone(),
                found: v,
                supported,
            })
        } else {
            Ok(v)
        }
    })
}

/// Inside the migrating transaction: returns the version the database is at afterwards (a
/// version above `steps.len()` is returned untouched for the caller to refuse).
fn migrate_locked(pg: &mut Postgres, steps: &[&str]) -> Result<u32, StoreError> {
    pg.execute(
        "SELECT pg_advisory_xact_lock(?1)",
        &[i64::from(APPLICATION_ID).into()],
    )?;
    let from = match contents(pg)? {
        Contents::Empty => 0,
        Contents::Store(v) if v >= steps.len() as u32 => return Ok(v),
        Contents::Store(v) => v,
        Contents::NotAStore(reason) => return Err(not_a_store(pg, reason)),
    };
    for step in &steps[from as usize..] {
        pg.batch(step)?;
    }
    let to = steps.len() as u32;
    for (key, value) in [
        ("schema_version", to.to_string()),
        ("ndtune_version", crate::NDTUNE_VERSION.to_string()),
    ] {
        pg.execute(UPSERT_META, &[key.into(), value.into()])?;
    }
    Ok(to)
}

/// Tells what the database (its current schema) holds, reading only.
fn contents(pg: &mut Postgres) -> Result<Contents, StoreError> {
    let tables: Vec<String> = pg
        .query(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = current_schema() ORDER BY table_name",
            &[],
        )?
        .iter()
        .map(|r| r.text(0))
        .collect::<Result<_, _>>()
        .map_err(|e| not_a_store(pg, e))?;
    if tables.is_empty() {
        return Ok(Contents::Empty);
    }
    if !tables.iter().any(|t| t == "meta") {
        return Ok(Contents::NotAStore(format!(
            "a database of another program: tables [{}]",
            tables.join(", ")
        )));
    }
    let mut meta = |key: &str| -> Result<Option<String>, StoreError> {
        let rows = pg
            .client
            .query("SELECT value::text FROM meta WHERE key::text = $1", &[&key])
            .map_err(|source| StoreError::NotAStore {
                path: pg.shown.clone(),
                reason: format!("its meta table is not ndtune's: {source}"),
            })?;
        Ok(rows.first().map(|r| r.get(0)))
    };
    if meta("application_id")?.as_deref() != Some("ndtune") {
        return Ok(Contents::NotAStore(format!(
            "a database of another program: its meta table does not name ndtune; tables [{}]",
            tables.join(", ")
        )));
    }
    let recorded = meta("schema_version")?;
    match recorded.as_deref().map(str::parse::<u32>) {
        Some(Ok(v)) => Ok(Contents::Store(v)),
        _ => Ok(Contents::NotAStore(format!(
            "its meta table has no valid schema_version: {recorded:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars() {
        assert_eq!(
            dollar_placeholders("SELECT a FROM t WHERE b = ?1 AND (?12 IS NULL OR c = ?12)"),
            "SELECT a FROM t WHERE b = $1 AND ($12 IS NULL OR c = $12)"
        );
    }
}
