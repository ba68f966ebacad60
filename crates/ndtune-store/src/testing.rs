//! [`PgServer`]: a throwaway PostgreSQL server for tests (the `testing` feature), started from
//! the server binaries of the machine (Debian's `postgresql` package) with `initdb` in a
//! temporary directory, on a free port of 127.0.0.1, and stopped when dropped.
//!
//! PostgreSQL refuses to run as root: run as root (as CI does), the helper runs the server as
//! the `postgres` user the Debian package creates (or `nobody`). Without the binaries,
//! [`PgServer::shared`] prints why and returns `None`, and the test skips itself:
//!
//! ```no_run
//! let Some(server) = ndtune_store::testing::PgServer::shared() else { return };
//! let url = server.create_database("my_test").unwrap();
//! let store = ndtune_store::Store::open(&url).unwrap();
//! ```

use std::net::TcpListener;
use std::os::unix::fs::chown;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The superuser every test server has.
pub const USER: &str = "ndtune";
/// Its password (connections over TCP must give it).
pub const PASSWORD: &str = "ndtune-test-password";

/// How long a starting server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running PostgreSQL server in a temporary directory; dropping it stops the server and
/// removes the directory.
pub struct PgServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
}

/// The server tests of this process share while any of them holds it.
static SHARED: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());

impl PgServer {
    /// The server the tests of this process share, started by the first that asks while none
    /// runs; `None`, after printing why to stderr, where the PostgreSQL binaries are absent.
    /// Panics if they are present but the server does not start.
    pub fn shared() -> Option<Arc<PgServer>> {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = shared.upgrade() {
            return Some(server);
        }
        let Some(bin) = binaries() else {
            eprintln!(
                "skipped: no PostgreSQL server binaries (initdb, postgres) under \
                 /usr/lib/postgresql/*/bin, on PATH or in NDTUNE_PG_BIN; install Debian's \
                 `postgresql` package"
            );
            return None;
        };
        let server = Arc::new(PgServer::start(&bin).unwrap_or_else(|e| panic!("{e}")));
        *shared = Arc::downgrade(&server);
        Some(server)
    }

    /// Starts a server of its own from the binaries in `bin`.
    pub fn start(bin: &Path) -> Result<PgServer, String> {
        let dir = tempfile::Builder::new()
            .prefix("ndtune-pg-")
            .tempdir()
            .map_err(|e| format!("cannot create a directory for PostgreSQL: {e}"))?;
        let owner = server_user()?;
        let password_file = dir.path().join("password");
        std::fs::write(&password_file, PASSWORD).map_err(|e| e.to_string())?;
        if let Some((uid, gid)) = owner {
            for path in [dir.path(), password_file.as_path()] {
                chown(path, Some(uid), Some(gid))
                    .map_err(|e| format!("cannot give {} to uid {uid}: {e}", path.display()))?;
            }
        }
        let data = dir.path().join("data");
        let mut initdb = command(&bin.join("initdb"), owner, dir.path());
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", USER, "-E", "UTF8", "--locale=C", "--no-sync"])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", password_file.display()));
        run(&mut initdb)?;
        let mut last_error = String::new();
        for _ in 0..3 {
            let port = free_port()?;
            match launch(bin, owner, dir.path(), port) {
                Ok(child) => {
                    return Ok(PgServer {
                        child,
                        port,
                        dir,
                        bin: bin.to_path_buf(),
                        owner,
                    })
                }
                Err(e) => last_error = e,
            }
        }
        Err(format!("PostgreSQL did not start: {last_error}"))
    }

    /// Stops the server (fast shutdown: every client is disconnected), leaves it down for
    /// `down`, and starts it again on the same port with the same data.
    pub fn restart_after(&mut self, down: Duration) -> Result<(), String> {
        stop(&mut self.child);
        std::thread::sleep(down);
        self.child = launch(&self.bin, self.owner, self.dir.path(), self.port)?;
        Ok(())
    }

    /// The TCP port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of `database` on this server, as [`USER`] with [`PASSWORD`].
    pub fn url(&self, database: &str) -> String {
        url(self.port, database)
    }

    /// Creates an empty database (dropping one of that name first); returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        self.admin(&format!(
            "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE); CREATE DATABASE \"{name}\""
        ))?;
        Ok(self.url(name))
    }

    /// Runs SQL statements in the `postgres` database as the superuser.
    pub fn admin(&self, sql: &str) -> Result<(), String> {
        let mut client = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .map_err(|e| format!("cannot connect to the test server: {e}"))?;
        for statement in sql.split(';').filter(|s| !s.trim().is_empty()) {
            client
                .batch_execute(statement)
                .map_err(|e| format!("{statement}: {e}"))?;
        }
        Ok(())
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

fn url(port: u16, database: &str) -> String {
    format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{port}/{database}")
}

/// Starts `postgres` on the data of `dir` (made by `initdb`), listening on `port`, and waits
/// until it accepts connections; its log is `dir/server.log`.
fn launch(bin: &Path, owner: Option<(u32, u32)>, dir: &Path, port: u16) -> Result<Child, String> {
    let log_path = dir.join("server.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| e.to_string())?;
    let mut child = command(&bin.join("postgres"), owner, dir)
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.display()))
        .args(["-c", "fsync=off", "-c", "max_connections=100"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot run {}/postgres: {e}", bin.display()))?;
    match wait_ready(&mut child, &url(port, "postgres"), &log_path) {
        Ok(()) => Ok(child),
        Err(e) => {
            stop(&mut child);
            Err(e)
        }
    }
}

/// Waits until the server at `url` accepts connections; its log says why where it exits.
fn wait_ready(child: &mut Child, url: &str, log: &Path) -> Result<(), String> {
    let log = || std::fs::read_to_string(log).unwrap_or_default();
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("the server exited ({status}): {}", log()));
        }
        match postgres::Client::connect(url, postgres::NoTls) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("not ready after {START_TIMEOUT:?}: {e}; {}", log()))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Stops a server (fast shutdown: clients are disconnected) and waits for it.
fn stop(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        // SAFETY: a plain kill(2) of our own child, which has not been reaped yet.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGINT);
        }
        let _ = child.wait();
    }
}

/// A command run as the server's user where this process is root, in `dir`.
fn command(program: &Path, owner: Option<(u32, u32)>, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(dir).env("LC_ALL", "C");
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{:?} failed ({}): {}{}",
            cmd.get_program(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The (uid, gid) to run the server as: `None` when this process is not root; else the
/// `postgres` user, or `nobody`.
fn server_user() -> Result<Option<(u32, u32)>, String> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| e.to_string())?;
    let user = |name: &str| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields.as_slice() {
                [n, _, uid, gid, ..] if *n == name => Some((uid.parse().ok()?, gid.parse().ok()?)),
                _ => None,
            }
        })
    };
    user("postgres")
        .or_else(|| user("nobody"))
        .map(Some)
        .ok_or_else(|| "running as root and neither a `postgres` nor a `nobody` user exists".into())
}

/// The directory holding `initdb` and `postgres`: `NDTUNE_PG_BIN`, else the newest
/// `/usr/lib/postgresql/*/bin`, else the directory on `PATH` that has `initdb`.
pub fn binaries() -> Option<PathBuf> {
    let has_both = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("NDTUNE_PG_BIN") {
        return Some(PathBuf::from(dir)).filter(|d| has_both(d));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, d)| has_both(d))
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.pop() {
        return Some(dir);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|d| has_both(d))
}

/// A TCP port of 127.0.0.1 that nothing listens on now.
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}
