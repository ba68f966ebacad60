//! Faults around a campaign, on PoCL: `ndtune tune` killed with SIGKILL and with SIGTERM while
//! its build workers are stopped, started by a script (so that it does not lead its process
//! group), and `tune --pool` killed with SIGKILL, leave no process of theirs behind (found in
//! /proc by a marker in their environment); a store in a directory the user cannot write (run
//! as `nobody` where the test runs as root), on a read-only file system and on a full one (in a
//! mount namespace of its own, where the test may make one) is read by the commands that only
//! read and refused, with the reason, by `tune`; libpq key/value connection strings on a real
//! PostgreSQL server, whose password no output shows.

mod common;

use common::{ndtune, ndtune_process, work_spec, CONFIGURATIONS};
use ndtune_core::Outcome;
use ndtune_store::testing::{PgServer, PASSWORD, USER};
use ndtune_store::Store;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that marks the processes of one test's campaign.
const MARK: &str = "NDTUNE_TEST_CAMPAIGN";

/// A process of a marked campaign, as /proc shows it.
#[derive(Debug)]
struct Proc {
    pid: u32,
    /// R, S, T (stopped), ...
    state: char,
    ppid: u32,
    pgrp: u32,
    cmdline: String,
}

/// The living processes whose environment has `MARK=marker`.
fn marked(marker: &str) -> Vec<Proc> {
    let needle = format!("{MARK}={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !env.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // After the command name in parentheses: state, ppid, pgrp, ...
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
        let [state, ppid, pgrp, ..] = fields[..] else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        found.push(Proc {
            pid,
            state: state.chars().next().unwrap_or('?'),
            ppid: ppid.parse().unwrap_or(0),
            pgrp: pgrp.parse().unwrap_or(0),
            cmdline: String::from_utf8_lossy(&cmdline).replace('\0', " "),
        });
    }
    found
}

/// Starts `ndtune ARGS` from a shell script that waits for it, as a script or a service manager
/// would: ndtune does not lead its process group. Waits until `ready` holds of the campaign's
/// processes, checks that ndtune is not its group's leader, and sends it `signals`, back to
/// back. Returns the
/// script's exit status and ndtune's stderr and stdout, after checking that 5 s later no
/// process of the campaign is left, and no temporary file of it (its `TMPDIR` is a folder of
/// its own).
fn kill_campaign(
    dir: &Path,
    args: &[&str],
    ready: impl Fn(&[Proc]) -> bool,
    signals: &[libc::c_int],
) -> (std::process::ExitStatus, String, String) {
    let signal = signals[0];
    let marker = format!("{}-{}-{signal}", std::process::id(), args.len());
    let err_path = dir.join(format!("tune-{signal}.err"));
    let out_path = dir.join(format!("tune-{signal}.out"));
    let tmp = dir.join(format!("tmp-{signal}"));
    std::fs::create_dir(&tmp).unwrap();
    let mut script = Command::new("sh");
    script
        .args(["-c", r#""$0" "$@" & wait $!"#])
        .arg(ndtune_process().get_program())
        .args(args)
        .envs(
            ndtune_process()
                .get_envs()
                .filter_map(|(k, v)| Some((k, v?))),
        )
        .env(MARK, &marker)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()));
    let mut script = script.spawn().unwrap();
    let err = || std::fs::read_to_string(&err_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(300);
    let tune = loop {
        assert!(
            script.try_wait().unwrap().is_none(),
            "the campaign ended before it was killed: {}",
            err()
        );
        assert!(
            Instant::now() < deadline,
            "never ready: {:?}",
            marked(&marker)
        );
        let procs = marked(&marker);
        if let Some(tune) = procs.iter().find(|p| p.ppid == script.id()) {
            if ready(&procs) {
                break (tune.pid, tune.pgrp);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_ne!(tune.0, tune.1, "ndtune must not lead its process group");
    // SAFETY: kill(2) of a process this test started (through the script), still running.
    for &signal in signals {
        unsafe {
            libc::kill(tune.0 as libc::pid_t, signal);
        }
    }
    let gone = Instant::now() + Duration::from_secs(5);
    while !marked(&marker).is_empty() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = marked(&marker);
    assert!(
        left.is_empty(),
        "left behind after 5 s: {left:?}; {}",
        err()
    );
    let exit = script.wait().unwrap();
    // SIGKILL leaves what a process cannot remove itself.
    if signal != libc::SIGKILL {
        let files: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(
            files.is_empty(),
            "temporary files left: {files:?}; {}",
            err()
        );
    }
    (exit, err(), std::fs::read_to_string(&out_path).unwrap())
}

/// A campaign whose build workers are stopped (state T) while it measures on the CPU.
fn builders_stopped(procs: &[Proc]) -> bool {
    procs
        .iter()
        .any(|p| p.cmdline.contains("__builder") && p.state == 'T')
}

fn tune_args<'a>(spec: &'a str, db: &'a str) -> Vec<&'a str> {
    vec![
        "tune",
        spec,
        "--db",
        db,
        "--build-jobs",
        "3",
        "--set",
        "N=1048576",
    ]
}

#[test]
fn a_killed_tune_leaves_no_process_even_with_its_builders_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let db = dir.path().join("killed.db");
    let db = db.to_str().unwrap();
    let (exit, _, _) = kill_campaign(
        dir.path(),
        &tune_args(&spec, db),
        builders_stopped,
        &[libc::SIGKILL],
    );
    assert_eq!(exit.code(), Some(128 + libc::SIGKILL), "{exit:?}");
    // The store opens, with its claims to expire after their lease.
    let store = Store::open(db).unwrap();
    let group = store.campaigns().unwrap().pop().unwrap();
    let status = store.campaign_status(&group).unwrap();
    assert_eq!(status.measured_twice, 0, "{status:?}");
    assert!(status.workers[0].claimed > 0, "{status:?}");
}

#[test]
fn a_terminated_tune_ends_its_workers_keeps_its_results_and_gives_back_its_claims() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let db = dir.path().join("terminated.db");
    let db = db.to_str().unwrap();
    // Once something was measured, while the builders are stopped.
    let measured = || {
        Store::open_read_only(db).is_ok_and(|s| {
            s.campaigns()
                .unwrap()
                .iter()
                .any(|g| s.campaign_status(g).unwrap().results > 0)
        })
    };
    let (exit, err, out) = kill_campaign(
        dir.path(),
        &tune_args(&spec, db),
        |procs| builders_stopped(procs) && measured(),
        &[libc::SIGTERM],
    );
    assert_eq!(exit.code(), Some(128 + libc::SIGTERM), "{exit:?} {err}");
    // The summary of what was measured until then.
    assert!(
        out.contains("stopped    ndtune was interrupted (SIGTERM)") && out.contains("measured "),
        "{out}"
    );
    assert!(err.contains("ndtune was interrupted (SIGTERM)"), "{err}");
    assert!(err.contains("the same command goes on from there"), "{err}");
    let store = Store::open(db).unwrap();
    let group = store.campaigns().unwrap().pop().unwrap();
    let status = store.campaign_status(&group).unwrap();
    assert_eq!(status.measured_twice, 0, "{status:?}");
    assert!(status.workers.iter().all(|w| w.claimed == 0), "{status:?}");
    // No evaluation was recorded as a crash of the workers it ended.
    for r in store.records(&group).unwrap() {
        assert!(!matches!(r.outcome, Outcome::Crashed { .. }), "{r:?}");
    }
}

/// Two SIGTERMs at once (a service manager's and a user's) while PoCL's LLVM has its own
/// handler installed, one that puts the default action back while it runs: ndtune ends by its
/// own hand all the same, either summing up or, where it saw the second, at once; never killed
/// by the signal's default action, which would leave its claims and temporary files behind.
#[test]
fn a_tune_sent_sigterm_twice_at_once_ends_by_its_own_hand() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let db = dir.path().join("twice.db");
    let db = db.to_str().unwrap();
    let measuring = |procs: &[Proc]| procs.iter().any(|p| p.cmdline.contains("__worker"));
    let (exit, err, _) = kill_campaign(
        dir.path(),
        &tune_args(&spec, db),
        |procs| measuring(procs) && claimed(db),
        &[libc::SIGTERM, libc::SIGTERM],
    );
    assert_eq!(exit.code(), Some(128 + libc::SIGTERM), "{exit:?} {err}");
    assert!(
        err.contains("ndtune was interrupted (SIGTERM)") || err.contains("SIGTERM again"),
        "killed by the signal's default action: {err}"
    );
}

#[test]
fn a_killed_pool_leaves_no_worker_running() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let db = dir.path().join("pool.db");
    let db = db.to_str().unwrap();
    let mut args = tune_args(&spec, db);
    args.extend(["--device", "0:0/2,0:1/2", "--pool"]);
    let (exit, _, _) = kill_campaign(
        dir.path(),
        &args,
        |procs| {
            let workers = procs.iter().filter(|p| p.cmdline.contains("__campaign"));
            workers.count() == 2
                && procs.iter().any(|p| p.cmdline.contains("__worker"))
                && claimed(db)
        },
        &[libc::SIGKILL],
    );
    assert_eq!(exit.code(), Some(128 + libc::SIGKILL), "{exit:?}");
    // Its workers, ended by the parent's death (a SIGTERM for each of its threads, back to
    // back, while LLVM's handler in PoCL would have put the default action back), gave back
    // their claims: a next run need not wait for the lease (a campaign with neither results
    // nor claims is not listed).
    let store = Store::open(db).unwrap();
    for group in store.campaigns().unwrap() {
        let status = store.campaign_status(&group).unwrap();
        assert!(status.workers.iter().all(|w| w.claimed == 0), "{status:?}");
    }
}

/// Whether a worker holds a claim in the store at `db`.
fn claimed(db: &str) -> bool {
    Store::open_read_only(db).is_ok_and(|s| {
        s.campaigns().unwrap_or_default().iter().any(|g| {
            s.campaign_status(g)
                .is_ok_and(|st| st.workers.iter().any(|w| w.claimed > 0))
        })
    })
}

/// Runs `ndtune ARGS` in `cwd` as a user who cannot write the store's directory: as root (who
/// may write anything) the user `nobody`, with `home` for a home, and a copy of the binary in
/// `cwd` (the build's own may lie under a folder only root may enter, as a checkout in a
/// `mktemp -d` folder does); else this user.
fn as_reader(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    let mut cmd = ndtune_process();
    if is_root() {
        let copy = cwd.join("ndtune-as-reader");
        if !copy.exists() {
            std::fs::copy(cmd.get_program(), &copy).unwrap();
            chmod(&copy, 0o755);
        }
        let envs: Vec<_> = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
            .collect();
        cmd = Command::new(&copy);
        cmd.envs(envs).uid(65534).gid(65534);
    }
    cmd.args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("NDTUNE_CACHE_DIR", home.join("cache"));
    cmd.output().unwrap()
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_store_that_cannot_be_written_is_read_and_refused_for_tuning_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let db = store_dir.join("k.db");
    let tuned = ndtune()
        .args(["tune", &spec, "--db", db.to_str().unwrap()])
        .args(["--strategy", "random", "--budget", "3", "--build-jobs", "1"])
        .output()
        .unwrap();
    assert!(tuned.status.success(), "{}", text(&tuned));
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
        chmod(dir.path(), 0o755);
    }
    chmod(&db, 0o444);
    chmod(&store_dir, 0o555);
    let before = std::fs::read_dir(&store_dir).unwrap().count();

    let run = |args: &[&str]| as_reader(dir.path(), &home, args);
    let status = run(&["status", "--db", "store/k.db"]);
    assert!(status.status.success(), "{}", text(&status));
    assert!(text(&status).contains(": 3 results"), "{}", text(&status));
    let html = home.join("r.html");
    let report = run(&[
        "report",
        "--db",
        "store/k.db",
        "--out",
        html.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{}", text(&report));
    assert!(std::fs::read_to_string(&html).unwrap().contains("work"));
    let cache = home.join("k.json");
    let export = run(&[
        "export",
        "--db",
        "store/k.db",
        "--format",
        "kt",
        "--out",
        cache.to_str().unwrap(),
    ]);
    assert!(export.status.success(), "{}", text(&export));
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(cache["cache"].as_object().unwrap().len(), 3);
    let replay = run(&["tune", "--replay", "store/k.db", "--budget", "2"]);
    assert!(replay.status.success(), "{}", text(&replay));

    let tune = run(&["tune", &spec, "--db", "store/k.db", "--build-jobs", "1"]);
    assert!(!tune.status.success());
    let err = text(&tune);
    assert!(err.contains("store/k.db: cannot write the store"), "{err}");
    assert!(err.contains("read-only to this user"), "{err}");
    assert_eq!(err.matches("cannot write").count(), 1, "said once: {err}");
    let tune = run(&["tune", &spec, "--db", "store/new.db", "--build-jobs", "1"]);
    let err = text(&tune);
    assert!(
        err.contains("store/new.db: cannot write the store: the directory store is read-only"),
        "{err}"
    );
    let after = std::fs::read_dir(&store_dir).unwrap().count();
    assert_eq!(after, before, "nothing written beside the store");
    chmod(&store_dir, 0o755);
}

/// Runs `script` (sh) in a mount namespace of its own, with `ndtune` the binary; `None` where
/// this process may not make one (not root).
fn in_mount_namespace(dir: &Path, script: &str) -> Option<Output> {
    let probe = Command::new("unshare")
        .args(["--mount", "true"])
        .output()
        .ok()?;
    if !probe.status.success() {
        eprintln!("skipped: no mount namespace for this user (unshare --mount)");
        return None;
    }
    let program = ndtune_process();
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-ec", script])
        .arg(program.get_program())
        .current_dir(dir)
        .envs(program.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .output()
        .unwrap();
    Some(out)
}

#[test]
fn a_store_on_a_read_only_or_full_file_system_is_read_and_refused_for_tuning() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    std::fs::create_dir(dir.path().join("store")).unwrap();
    std::fs::create_dir(dir.path().join("mnt")).unwrap();
    let tuned = ndtune()
        .args(["tune", &spec, "--db", "store/k.db"])
        .args(["--strategy", "random", "--budget", "3", "--build-jobs", "1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(tuned.status.success(), "{}", text(&tuned));
    // `$0` is ndtune. Read-only: the store's directory bound read-only.
    let read_only = r#"
        mount --bind store mnt && mount -o remount,ro,bind mnt
        "$0" status --db mnt/k.db
        ! "$0" tune work.toml --db mnt/k.db --build-jobs 1
    "#;
    let Some(out) = in_mount_namespace(dir.path(), read_only) else {
        return;
    };
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains(": 3 results"), "{all}");
    assert!(
        all.contains(
            "mnt/k.db: cannot write the store: the file mnt/k.db is on a read-only file system"
        ),
        "{all}"
    );
    // Full: a small file system filled up after the store was copied in.
    let full = r#"
        mount -t tmpfs -o size=512k none mnt && cp store/k.db mnt/
        dd if=/dev/zero of=mnt/filler bs=4k 2>/dev/null || true
        "$0" status --db mnt/k.db
        "$0" export --db mnt/k.db --format t4 --out t4.json
        ! "$0" tune work.toml --db mnt/k.db --build-jobs 1
    "#;
    let out = in_mount_namespace(dir.path(), full).unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains(": 3 results"), "{all}");
    assert!(all.contains("wrote 3 records"), "{all}");
    assert!(
        all.contains("mnt/k.db: cannot write the store: the file system of mnt is full"),
        "{all}"
    );
}

#[test]
fn key_value_connection_strings_open_postgres_and_no_output_shows_the_password() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    server.create_database("cli_key_values").unwrap();
    let kv = |password: &str| {
        format!(
            "host=127.0.0.1 port={} dbname=cli_key_values user={USER} password={password}",
            server.port()
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let in_dir = |args: &[&str], db: &str| {
        ndtune()
            .args(args)
            .env("NDTUNE_DB", db)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let files = || std::fs::read_dir(dir.path()).unwrap().count();
    let before = files();
    let tune = in_dir(
        &[
            "tune",
            &spec,
            "--strategy",
            "random",
            "--budget",
            "2",
            "--build-jobs",
            "1",
        ],
        &kv(PASSWORD),
    );
    assert!(tune.status.success(), "{}", text(&tune));
    assert_eq!(files(), before, "no file made of the connection string");
    assert!(!text(&tune).contains(PASSWORD), "{}", text(&tune));
    let status = in_dir(&["status"], &kv(PASSWORD));
    let all = text(&status);
    assert!(status.status.success(), "{all}");
    assert!(all.contains(": 2 results"), "{all}");
    assert!(!all.contains(PASSWORD), "{all}");
    let status = in_dir(&["status", "--json"], &kv(PASSWORD));
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["campaigns"][0]["results"], 2, "{v}");
    let shown = v["store"].as_str().unwrap();
    assert!(shown.ends_with("password=***"), "{shown}");
    assert!(!text(&status).contains(PASSWORD), "{v}");
    let wrong = in_dir(&["status"], &kv("hunter2"));
    let all = text(&wrong);
    assert!(!wrong.status.success());
    assert!(all.contains("refused the credentials"), "{all}");
    assert!(!all.contains("hunter2"), "{all}");
    assert_eq!(
        all.matches("password authentication failed").count(),
        1,
        "{all}"
    );
    assert!(!all.contains("db error"), "{all}");
}

#[test]
fn a_tune_waiting_for_a_killed_tunes_claims_says_so_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let db = dir.path().join("waits.db");
    let db = db.to_str().unwrap();
    // A first tune killed with -9 once it holds claims, leased long enough to outlast the test.
    let mut first = tune_args(&spec, db);
    first.extend(["--lease", "600s"]);
    let (exit, _, _) = kill_campaign(
        dir.path(),
        &first,
        |procs| builders_stopped(procs) && claimed(db),
        &[libc::SIGKILL],
    );
    assert_eq!(exit.code(), Some(128 + libc::SIGKILL), "{exit:?}");
    // The next tune measures what is free, then waits for the dead one's claims: it says so,
    // and a SIGTERM ends it at once with its summary (kill_campaign checks that nothing of it
    // is left after 5 s, temporary files included).
    let waiting_err = dir.path().join(format!("tune-{}.err", libc::SIGTERM));
    let (exit, err, out) = kill_campaign(
        dir.path(),
        &tune_args(&spec, db),
        |_| std::fs::read_to_string(&waiting_err).is_ok_and(|e| e.contains("waiting for {")),
        &[libc::SIGTERM],
    );
    assert_eq!(exit.code(), Some(128 + libc::SIGTERM), "{exit:?} {err}");
    assert!(err.contains("holds it"), "{err}");
    assert!(err.contains("the claim lapses in"), "{err}");
    assert!(
        out.contains("stopped    ndtune was interrupted (SIGTERM)"),
        "{out}\n{err}"
    );
}

/// Runs a pool of the two halves of the CPU on [`work_spec`] with `--json`; `meanwhile` gets
/// the pool's marker while it runs. Returns the pool's exit status, JSON and error output.
fn pool_json(
    dir: &Path,
    db: &str,
    env: &[(&str, &Path)],
    meanwhile: impl FnOnce(&str),
) -> (std::process::ExitStatus, serde_json::Value, String) {
    let spec = work_spec(dir);
    let marker = format!("pool-{}-{}", std::process::id(), db.len());
    let err_path = dir.join("pool.err");
    let mut pool = ndtune_process();
    pool.args(tune_args(&spec, db))
        .args([
            "--device",
            "0:0/2,0:1/2",
            "--pool",
            "--lease",
            "2s",
            "--json",
        ])
        .env(MARK, &marker)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()));
    for (k, v) in env {
        match v.as_os_str().is_empty() {
            true => pool.env_remove(k),
            false => pool.env(k, v),
        };
    }
    let child = pool.spawn().unwrap();
    meanwhile(&marker);
    let out = child.wait_with_output().unwrap();
    let err = std::fs::read_to_string(&err_path).unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{err}", String::from_utf8_lossy(&out.stdout)));
    (out.status, v, err)
}

#[test]
fn a_pool_says_how_each_worker_ended_also_one_killed_with_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ends.db");
    let db = db.to_str().unwrap();
    let (status, v, err) = pool_json(dir.path(), db, &[], |marker| {
        let deadline = Instant::now() + Duration::from_secs(300);
        let victim = loop {
            assert!(Instant::now() < deadline, "the workers never claimed");
            let workers: Vec<Proc> = marked(marker)
                .into_iter()
                .filter(|p| p.cmdline.contains("__campaign"))
                .collect();
            if workers.len() == 2 && claimed(db) {
                break workers[0].pid;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // SAFETY: kill(2) of a worker process of the pool this test started.
        unsafe { libc::kill(victim as libc::pid_t, libc::SIGKILL) };
    });
    assert!(status.success(), "{err}");
    assert_eq!(
        v["devices"][0]["outcomes"]["measured"], CONFIGURATIONS,
        "{v}"
    );
    let workers = v["pool"]["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2, "{v}");
    let ends: Vec<(&str, bool)> = workers
        .iter()
        .map(|w| {
            (
                w["end"]["status"].as_str().unwrap(),
                w["end"]["success"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        ends.contains(&("killed by signal 9 (SIGKILL)", false)),
        "{v}"
    );
    assert!(ends.contains(&("exit status 0", true)), "{v}");
    assert_eq!(v["pool"]["measured_twice"], 0, "{v}");
}

#[test]
fn a_pool_whose_workers_cannot_start_shows_why_and_root_makes_nothing_in_another_users_home() {
    if !is_root() {
        return; // another user's home is one root can be given; a user cannot make one
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("someone");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    let db = dir.path().join("home.db");
    let db = db.to_str().unwrap();
    let (_, v, err) = pool_json(
        dir.path(),
        db,
        &[
            ("HOME", &home),
            ("XDG_CACHE_HOME", Path::new("")),
            ("NDTUNE_CACHE_DIR", Path::new("")),
            ("POCL_CACHE_DIR", Path::new("")),
        ],
        |_| {},
    );
    assert!(
        !home.join(".cache").exists(),
        "root made {}/.cache",
        home.display()
    );
    let workers = v["pool"]["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2, "{v}\n{err}");
    for w in workers {
        assert_eq!(w["end"]["success"], false, "{w}");
        let said = w["end"]["said"].to_string();
        assert!(said.contains("belongs to user 65534"), "{w}");
    }
    // The pool measured alone what its workers could not.
    assert_eq!(
        v["devices"][0]["outcomes"]["measured"], CONFIGURATIONS,
        "{v}"
    );
}
