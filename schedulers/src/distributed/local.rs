//! A throwaway `redis-server` for tests, examples and benchmarks.

// This module supervises a real server process: it must wait in real time
// for the server to answer. No scheduling decision is made here.
#![allow(clippy::disallowed_methods)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::DistError;

/// A `redis-server` child process on a free loopback port, with AOF on
/// (`appendfsync everysec`), RDB snapshots off, `noeviction`, and its data in
/// a fresh temporary directory. Killed, and its directory removed, on drop.
///
/// The binary is `$REDIS_SERVER` if set, else `redis-server` from `PATH`
/// (or `/usr/bin`, `/usr/sbin`).
///
/// # Examples
///
/// ```no_run
/// use schedulers::distributed::LocalRedis;
///
/// let mut redis = LocalRedis::start()?;
/// println!("up at {}", redis.url());
/// redis.restart()?; // SIGKILL, then start again on the same port and data
/// # Ok::<(), schedulers::distributed::DistError>(())
/// ```
#[derive(Debug)]
pub struct LocalRedis {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    binary: PathBuf,
    fsync: &'static str,
}

/// Finds the `redis-server` binary: `$REDIS_SERVER` if set (and `None` if
/// that is not a file), else the first `redis-server` on `PATH`, `/usr/bin`,
/// `/usr/sbin` or `/usr/local/bin`.
pub fn find_redis_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("REDIS_SERVER") {
        // An explicit choice is honoured: no fallback to another binary.
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([
            PathBuf::from("/usr/bin"),
            PathBuf::from("/usr/sbin"),
            PathBuf::from("/usr/local/bin"),
        ])
        .map(|d| d.join("redis-server"))
        .find(|p| p.is_file())
}

impl LocalRedis {
    /// Starts a server and waits (up to 10 s) until it answers.
    ///
    /// # Errors
    ///
    /// [`DistError::InvalidConfig`] if no `redis-server` is installed or it
    /// cannot be started; [`DistError::Redis`] if it does not answer.
    pub fn start() -> Result<LocalRedis, DistError> {
        LocalRedis::start_with_fsync(false)
    }

    /// Like [`start`](Self::start), with `appendfsync always` when `always`
    /// is true: every acked write is on disk before Redis replies, even if
    /// Redis was postponing writes behind a slow fsync.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with_fsync(always: bool) -> Result<LocalRedis, DistError> {
        static N: AtomicU32 = AtomicU32::new(0);
        let binary =
            find_redis_server().ok_or(DistError::InvalidConfig("redis-server is not installed"))?;
        let fsync = if always { "always" } else { "everysec" };
        // The port is free when probed but another process may take it
        // before the server binds it: then the server exits, and we retry.
        let mut last = DistError::InvalidConfig("cannot start redis-server");
        for _ in 0..5 {
            let port = free_port()?;
            let dir = std::env::temp_dir().join(format!(
                "schedulers-redis-{}-{}-{port}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir)
                .map_err(|_| DistError::InvalidConfig("cannot create a temp dir"))?;
            let mut me = LocalRedis {
                child: None,
                port,
                dir,
                binary: binary.clone(),
                fsync,
            };
            match me.spawn() {
                Ok(()) => return Ok(me),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn spawn(&mut self) -> Result<(), DistError> {
        let child = Command::new(&self.binary)
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                self.fsync,
                "--maxmemory-policy",
                "noeviction",
            ])
            .args([
                "--protected-mode",
                "no",
                "--daemonize",
                "no",
                "--logfile",
                "redis.log",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|_| DistError::InvalidConfig("cannot start redis-server"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        let client = redis::Client::open(self.url())?;
        let want = std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(_)) = c.try_wait() {
                    self.child = None;
                    return Err(DistError::InvalidConfig(
                        "redis-server exited at start (port taken?)",
                    ));
                }
            }
            let r = client
                .get_connection_with_timeout(Duration::from_millis(500))
                .and_then(|mut c| {
                    redis::cmd("CONFIG")
                        .arg("GET")
                        .arg("dir")
                        .query::<Vec<String>>(&mut c)
                });
            match r {
                // Make sure the server answering is ours, not another one
                // that holds the port.
                Ok(v) if v.get(1).map(PathBuf::from).as_ref() == Some(&want) => return Ok(()),
                Ok(_) => {
                    self.kill();
                    return Err(DistError::InvalidConfig(
                        "another redis-server answers on the port",
                    ));
                }
                // Not up yet, or loading the AOF (LOADING): keep waiting.
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => {
                    self.kill();
                    return Err(e.into());
                }
            }
        }
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data directory (holds the AOF and `redis.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills the server with SIGKILL (no shutdown save) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills the server with SIGKILL and starts it again on the same port
    /// and directory: it reloads the AOF.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn restart(&mut self) -> Result<(), DistError> {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        // Wait until the port is free again.
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.spawn()
    }
}

fn free_port() -> Result<u16, DistError> {
    let l =
        TcpListener::bind("127.0.0.1:0").map_err(|_| DistError::InvalidConfig("no free port"))?;
    let port = l
        .local_addr()
        .map_err(|_| DistError::InvalidConfig("no free port"))?
        .port();
    Ok(port)
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
