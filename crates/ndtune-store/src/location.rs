//! Where a store lives: an SQLite file, or a PostgreSQL database named by a URL; and how that
//! location is shown to people (a URL's password is never shown).

use std::ffi::OsStr;
use std::path::PathBuf;

/// A store's location as given on a command line (`--db`, `NDTUNE_DB`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    File(PathBuf),
    /// A PostgreSQL database: a `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Location {
    /// A `postgres://` or `postgresql://` URL is a PostgreSQL database; anything else is a path.
    pub fn parse(text: &OsStr) -> Location {
        match text.to_str() {
            Some(s) if is_postgres_url(s) => Location::Postgres(s.to_string()),
            _ => Location::File(PathBuf::from(text)),
        }
    }

    /// The location as shown in messages: the path, or the URL with its password replaced by
    /// `***`.
    pub fn shown(&self) -> PathBuf {
        match self {
            Location::File(path) => path.clone(),
            Location::Postgres(url) => PathBuf::from(redact(url)),
        }
    }
}

fn is_postgres_url(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` with the password of its user part and any `password=` parameter replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let (scheme, rest) = url.split_at(scheme_end);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (user_info, host) = authority.split_at(at);
            match user_info.split_once(':') {
                Some((user, _password)) => format!("{user}:***{host}"),
                None => authority.to_string(),
            }
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_postgres_and_everything_else_is_a_file() {
        let pg = |s: &str| Location::parse(OsStr::new(s));
        assert_eq!(
            pg("postgres://u@h/db"),
            Location::Postgres("postgres://u@h/db".into())
        );
        assert!(matches!(pg("PostgreSQL://h/db"), Location::Postgres(_)));
        assert_eq!(pg("ndtune.db"), Location::File("ndtune.db".into()));
        assert_eq!(
            pg("./postgres://x"),
            Location::File("./postgres://x".into())
        );
    }

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            redact("postgres://ndtune:s3cr%40t@db.lab:5433/tune?sslmode=disable"),
            "postgres://ndtune:***@db.lab:5433/tune?sslmode=disable"
        );
        assert_eq!(redact("postgresql://a:b:c@h/db"), "postgresql://a:***@h/db");
        assert_eq!(
            redact("postgres://u@h/db?password=x&user=u"),
            "postgres://u@h/db?password=***&user=u"
        );
        assert_eq!(redact("postgres://h"), "postgres://h");
        assert_eq!(
            redact("postgres://u:p@[::1]:5432"),
            "postgres://u:***@[::1]:5432"
        );
    }
}
