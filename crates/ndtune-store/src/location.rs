//! Where a store lives: an SQLite file, or a PostgreSQL database named by a URL or a libpq
//! key/value connection string; and how that location is shown to people (a password is never
//! shown).

use std::ffi::OsStr;
use std::path::PathBuf;

/// A store's location as given on a command line (`--db`, `NDTUNE_DB`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    File(PathBuf),
    /// A PostgreSQL database: a `postgres://` or `postgresql://` URL, or a libpq key/value
    /// connection string (`host=db.lab port=5432 dbname=ndtune user=ndtune password=...`).
    Postgres(String),
}

/// The keywords of a key/value connection string that the `postgres` client understands (a
/// string that starts with one of them followed by `=` is a connection string, not a file).
const KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "options",
    "application_name",
    "sslmode",
    "sslnegotiation",
    "connect_timeout",
    "tcp_user_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_retries",
    "target_session_attrs",
    "channel_binding",
    "load_balance_hosts",
];

impl Location {
    /// A `postgres://` or `postgresql://` URL, or a key/value connection string whose first
    /// keyword is one of PostgreSQL's (`host=...`, `dbname=...`), is a PostgreSQL database;
    /// anything else is a path.
    pub fn parse(text: &OsStr) -> Location {
        match text.to_str() {
            Some(s) if is_postgres_url(s) || is_key_values(s) => Location::Postgres(s.to_string()),
            _ => Location::File(PathBuf::from(text)),
        }
    }

    /// The location as shown in messages: the path, or the URL or connection string with its
    /// password replaced by `***`.
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

/// Whether `s` is a key/value connection string: `keyword = value ...` with a keyword the
/// client knows first, in any case (`HOST=...` is a connection string the client then refuses
/// by name, never an SQLite file of that name).
fn is_key_values(s: &str) -> bool {
    s.trim_start().split_once('=').is_some_and(|(keyword, _)| {
        KEYWORDS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(keyword.trim_end()))
    })
}

/// A PostgreSQL location with its password hidden: a URL's user password and `password=`
/// parameter, or a connection string's `password` value, replaced by `***`.
pub(crate) fn redact(location: &str) -> String {
    if is_key_values(location) {
        return redact_key_values(location);
    }
    let url = location;
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

/// A key/value connection string with each `password` value replaced by `***`, read as the
/// client reads it (values quoted with `'...'` or bare, a backslash escaping the next character). Where
/// the string does not parse past a `password` keyword, everything after it is hidden.
fn redact_key_values(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let start = rest.len() - rest.trim_start().len();
        let Some(eq) = rest.find('=') else {
            out.push_str(rest);
            return out;
        };
        let keyword = rest[start..eq].trim();
        let after_eq = &rest[eq + 1..];
        let value_at = after_eq.len() - after_eq.trim_start().len();
        let value = &after_eq[value_at..];
        let Some(len) = value_len(value) else {
            out.push_str(&rest[..eq + 1 + value_at]);
            if !keyword.eq_ignore_ascii_case("password") {
                out.push_str(value);
            } else {
                out.push_str("***");
            }
            return out;
        };
        out.push_str(&rest[..eq + 1 + value_at]);
        out.push_str(if keyword.eq_ignore_ascii_case("password") {
            "***"
        } else {
            &value[..len]
        });
        rest = &value[len..];
    }
}

/// The length in bytes of the value `s` starts with (quoted or bare); `None` if it does not end.
fn value_len(s: &str) -> Option<usize> {
    let quoted = s.starts_with('\'');
    let mut chars = s.char_indices().skip(usize::from(quoted));
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next()?;
            }
            '\'' if quoted => return Some(i + 1),
            c if !quoted && c.is_whitespace() => return Some(i),
            _ => {}
        }
    }
    (!quoted && !s.is_empty()).then_some(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
        assert_eq!(
            pg("host=db.lab dbname=tune"),
            Location::Postgres("host=db.lab dbname=tune".into())
        );
        assert!(matches!(pg("  dbname = tune"), Location::Postgres(_)));
        assert_eq!(
            pg("runs/n=1024.db"),
            Location::File("runs/n=1024.db".into())
        );
        assert_eq!(pg("size=2.db"), Location::File("size=2.db".into()));
        assert!(matches!(pg("HOST=h PASSWORD=p"), Location::Postgres(_)));
    }

    #[test]
    fn connection_strings_hide_every_password_however_written() {
        let shown = |s: &str| Location::parse(OsStr::new(s)).shown();
        assert_eq!(
            shown("host=db.lab port=5433 dbname=tune user=u password=s3cr3t"),
            Path::new("host=db.lab port=5433 dbname=tune user=u password=***")
        );
        assert_eq!(
            shown("password = 'a b\\' c' host=h"),
            Path::new("password = *** host=h")
        );
        assert_eq!(
            shown("HOST=h PASSWORD=secret"),
            Path::new("HOST=h PASSWORD=***")
        );
        assert_eq!(
            shown("host=h password=x\\ y dbname=d"),
            Path::new("host=h password=*** dbname=d")
        );
        // Unparsable after the password: the rest is hidden.
        assert_eq!(
            shown("host=h password='unterminated secret"),
            Path::new("host=h password=***")
        );
        assert_eq!(shown("host=h password="), Path::new("host=h password=***"));
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
