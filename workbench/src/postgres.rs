//! Throwaway PostgreSQL servers for the Quartz cluster's measurements and
//! tests ([`LocalPostgres`]), as [`schedulers_redis::LocalRedis`] is
//! for Redis: a fresh data directory from `initdb` per server, a free
//! loopback port, no Unix socket, trust authentication for the `postgres`
//! role, PostgreSQL's defaults otherwise (`fsync` and synchronous commits
//! on). PostgreSQL refuses to run as root, so when the workbench is root the
//! server runs as the `postgres` user the Debian package creates.

// This module supervises a real server process: it waits in real time for
// it to come up and go down. No scheduling decision is made here.
#![allow(clippy::disallowed_methods)]

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Why a server could not be started or asked.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// `initdb` or `postgres` is not installed.
    #[error(
        "PostgreSQL is not installed: no initdb and postgres in WORKBENCH_PG_BIN, /usr/lib/postgresql/*/bin \
         or on PATH (Debian: apt-get install postgresql)"
    )]
    NotInstalled,
    /// The workbench is root and there is no `postgres` user to run it as.
    #[error("running as root and there is no `postgres` user to run PostgreSQL as (the Debian package creates it)")]
    NoUser,
    /// A command could not run or failed.
    #[error("{what}: {detail}")]
    Failed {
        /// What was attempted.
        what: String,
        /// Its error, or the tail of its output.
        detail: String,
    },
}

fn failed(what: impl Into<String>, detail: impl ToString) -> PgError {
    PgError::Failed {
        what: what.into(),
        detail: detail.to_string(),
    }
}

/// A `postgres` server child process on a free loopback port with its data
/// in a fresh temporary directory; stopped (fast shutdown), and the
/// directory removed, on drop.
///
/// # Examples
///
/// ```no_run
/// use workbench::postgres::LocalPostgres;
///
/// let pg = LocalPostgres::start()?;
/// assert_eq!(pg.query("SELECT 1 + 1")?, "2");
/// println!("{} (postmaster {})", pg.jdbc_url(), pg.pid());
/// # Ok::<(), workbench::postgres::PgError>(())
/// ```
#[derive(Debug)]
pub struct LocalPostgres {
    child: Child,
    port: u16,
    dir: PathBuf,
    bin: PathBuf,
}

/// The directory holding `initdb` and `postgres`: `WORKBENCH_PG_BIN`, else
/// the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout), else
/// the directory of `initdb` on `PATH`.
pub fn find_binaries() -> Option<PathBuf> {
    let ok = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(d) = std::env::var_os("WORKBENCH_PG_BIN") {
        let d = PathBuf::from(d);
        return ok(&d).then_some(d);
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, d)| ok(d))
        .collect();
    debian.sort();
    let path = std::env::var_os("PATH").unwrap_or_default();
    debian.pop().map(|(_, d)| d).or_else(|| {
        std::env::split_paths(&path)
            .map(|d| d.join("initdb"))
            .filter_map(|p| p.canonicalize().ok())
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .find(|d| ok(d))
    })
}

/// The user and group the server runs as: `postgres` when this process is
/// root, else nobody in particular (this process's own).
fn server_user() -> Result<Option<(u32, u32)>, PgError> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse::<u32>().ok());
    if euid != Some(0) {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"postgres"))
        .and_then(|f| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))
        .map(Some)
        .ok_or(PgError::NoUser)
}

fn free_port() -> Result<u16, PgError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| failed("finding a free port", e))?;
    Ok(l.local_addr()
        .map_err(|e| failed("finding a free port", e))?
        .port())
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

impl LocalPostgres {
    /// `initdb`s a fresh data directory and starts a server on it.
    ///
    /// # Errors
    ///
    /// [`PgError`]: PostgreSQL is not installed, there is no user to run it
    /// as, or `initdb` or the server failed (with the tail of its log).
    pub fn start() -> Result<LocalPostgres, PgError> {
        static N: AtomicU32 = AtomicU32::new(0);
        let bin = find_binaries().ok_or(PgError::NotInstalled)?;
        let user = server_user()?;
        let dir = std::env::temp_dir().join(format!(
            "workbench-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| failed(format!("creating {}", dir.display()), e))?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| failed(format!("handing {} to postgres", dir.display()), e))?;
        }
        let cwd = dir.clone();
        let as_server = |program: &Path| {
            let mut c = Command::new(program);
            c.current_dir(&cwd).env_remove("PGDATA");
            if let Some((uid, gid)) = user {
                c.uid(uid).gid(gid);
            }
            c
        };
        let data = dir.join("data");
        let out = as_server(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-instructions",
            ])
            .output()
            .map_err(|e| failed("running initdb", e))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(failed(
                "initdb",
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        let log_path = dir.join("server.log");
        // The port is free when probed but another process may take it
        // before the server binds it: then the server exits, and we retry.
        let mut last = failed("starting postgres", "no attempt");
        for _ in 0..5 {
            let port = free_port()?;
            let log = File::create(&log_path).map_err(|e| failed("creating the server log", e))?;
            let err = log
                .try_clone()
                .map_err(|e| failed("creating the server log", e))?;
            let mut child = as_server(&bin.join("postgres"))
                .arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string()])
                .args(["-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "unix_socket_directories="])
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(err)
                .spawn()
                .map_err(|e| failed("starting postgres", e))?;
            match wait_ready(&mut child, &dir, Duration::from_secs(60)) {
                Ok(()) => {
                    return Ok(LocalPostgres {
                        child,
                        port,
                        dir,
                        bin,
                    })
                }
                Err(e) => {
                    last = e;
                    stop(&mut child);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The postmaster's process id: its children are the server's other
    /// processes (backends, writer, checkpointer…).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The JDBC URL of the `postgres` database as the `postgres` role.
    pub fn jdbc_url(&self) -> String {
        format!(
            "jdbc:postgresql://127.0.0.1:{}/postgres?user=postgres",
            self.port
        )
    }

    /// Runs one SQL statement with `psql` and returns its unaligned output
    /// (rows on lines, columns split by `|`), trimmed.
    ///
    /// # Errors
    ///
    /// `psql` is missing or the statement failed (psql's message).
    pub fn query(&self, sql: &str) -> Result<String, PgError> {
        let psql = [self.bin.join("psql"), PathBuf::from("/usr/bin/psql")]
            .into_iter()
            .find(|p| p.is_file())
            .ok_or_else(|| failed("querying the server", "psql is not installed"))?;
        let out = Command::new(psql)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args([
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .map_err(|e| failed("running psql", e))?;
        if !out.status.success() {
            return Err(failed(
                format!("psql -c {sql:?}"),
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }
}

/// Waits until the server in `dir` says it is ready (the last line of
/// `postmaster.pid`), or it exits.
fn wait_ready(child: &mut Child, dir: &Path, limit: Duration) -> Result<(), PgError> {
    let deadline = Instant::now() + limit;
    let pidfile = dir.join("data/postmaster.pid");
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(failed(
                format!("postgres exited ({status})"),
                tail(&dir.join("server.log")),
            ));
        }
        let text = std::fs::read_to_string(&pidfile).unwrap_or_default();
        if text.lines().nth(7).is_some_and(|l| l.trim() == "ready") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(failed(
                format!("postgres not ready within {} s", limit.as_secs()),
                tail(&dir.join("server.log")),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fast shutdown (SIGINT: sessions end, no checkpoint wait), SIGKILL after
/// 10 s.
fn stop(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        stop(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
