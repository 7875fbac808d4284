//! Throwaway `redis-server`s for tests and benchmarks (feature
//! `test-util`): one server ([`LocalRedis`]), or a Redis Cluster of masters
//! and replicas on loopback ports ([`LocalCluster`]).

use std::fmt;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Why a [`LocalRedis`] or [`LocalCluster`] could not start, or a question
/// to one went unanswered.
#[derive(Debug)]
#[non_exhaustive]
pub enum LocalServerError {
    /// `redis-server` or `redis-cli` (named) is not installed, or
    /// `$REDIS_SERVER` names no file.
    NotInstalled(&'static str),
    /// A directory, a file, a port or a process could not be had.
    Io {
        /// What was wanted.
        what: &'static str,
        /// Why not.
        source: std::io::Error,
    },
    /// The server exited as it started. The message gives its exit status
    /// and the last lines of its log (a setting it refused, say), or, when
    /// it wrote no log, asks whether the disk that holds its directory is
    /// full.
    Exited(String),
    /// The server or Cluster did not come up as asked: another server
    /// answers on the port, fewer than 3 masters, the Cluster did not form
    /// or become healthy, no master serves a slot.
    Setup(String),
    /// A node answered with an error, or not at all.
    Redis(redis::RedisError),
}

impl fmt::Display for LocalServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocalServerError::NotInstalled(what) => write!(f, "{what} is not installed"),
            LocalServerError::Io { what, source } => write!(f, "{what}: {source}"),
            LocalServerError::Exited(why) => write!(f, "the local redis-server stopped: {why}"),
            LocalServerError::Setup(why) => f.write_str(why),
            LocalServerError::Redis(e) => write!(f, "redis: {e}"),
        }
    }
}

impl std::error::Error for LocalServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LocalServerError::Io { source, .. } => Some(source),
            LocalServerError::Redis(e) => Some(e),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for LocalServerError {
    fn from(e: redis::RedisError) -> Self {
        LocalServerError::Redis(e)
    }
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> LocalServerError {
    move |source| LocalServerError::Io { what, source }
}

/// A `redis-server` child process on a free loopback port, with AOF on
/// (`appendfsync everysec`), RDB snapshots off, `noeviction`, and its data in
/// a fresh temporary directory. Killed, and its directory removed, on drop.
/// For tests and benchmarks (feature `test-util`).
///
/// The binary is `$REDIS_SERVER` if set, else `redis-server` from `PATH`
/// (or `/usr/bin`, `/usr/sbin`).
///
/// # Examples
///
/// ```no_run
/// use schedulers_redis::LocalRedis;
///
/// let mut redis = LocalRedis::start()?;
/// println!("up at {}", redis.url());
/// redis.restart()?; // SIGKILL, then start again on the same port and data
/// # Ok::<(), schedulers_redis::LocalServerError>(())
/// ```
#[derive(Debug)]
pub struct LocalRedis {
    child: Option<Child>,
    port: u16,
    tls_port: Option<u16>,
    dir: PathBuf,
    binary: PathBuf,
    settings: LocalRedisBuilder,
}

/// Settings of a [`LocalRedis`] before it starts.
///
/// # Examples
///
/// ```no_run
/// use schedulers_redis::LocalRedis;
///
/// let redis = LocalRedis::builder()
///     .appendfsync_always(true)
///     .set("aof-timestamp-enabled", "yes")
///     .start()?;
/// # Ok::<(), schedulers_redis::LocalServerError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct LocalRedisBuilder {
    always: bool,
    settings: Vec<(String, String)>,
    tls: Option<[PathBuf; 3]>,
}

impl LocalRedisBuilder {
    /// `appendfsync always` instead of `everysec`: every acked write is on
    /// disk before Redis replies.
    pub fn appendfsync_always(mut self, always: bool) -> Self {
        self.always = always;
        self
    }

    /// Any other setting, as `--<name> <value>` on the command line.
    pub fn set(mut self, name: &str, value: &str) -> Self {
        self.settings.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Also listens for TLS on a second port ([`LocalRedis::tls_url`]) with
    /// this certificate, key and CA (PEM files); clients need no
    /// certificate of their own.
    pub fn tls(mut self, cert: &Path, key: &Path, ca: &Path) -> Self {
        self.tls = Some([cert.to_owned(), key.to_owned(), ca.to_owned()]);
        self
    }

    /// Starts the server and waits (up to 10 s) until it answers.
    ///
    /// # Errors
    ///
    /// [`LocalServerError::NotInstalled`] without `redis-server`;
    /// [`LocalServerError::Io`] if it cannot be started;
    /// [`LocalServerError::Exited`] (with its log) if it exits as it starts;
    /// [`LocalServerError::Redis`] if it does not answer.
    pub fn start(self) -> Result<LocalRedis, LocalServerError> {
        static N: AtomicU32 = AtomicU32::new(0);
        let binary = find_redis_server().ok_or(LocalServerError::NotInstalled("redis-server"))?;
        // The port is free when probed but another process may take it
        // before the server binds it: then the server exits, and we retry.
        let mut last = LocalServerError::Setup("cannot start redis-server".into());
        for _ in 0..5 {
            let port = free_port()?;
            let tls_port = match self.tls {
                Some(_) => Some(free_port()?),
                None => None,
            };
            let dir = std::env::temp_dir().join(format!(
                "schedulers-redis-{}-{}-{port}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).map_err(io("cannot create a temp dir"))?;
            let mut me = LocalRedis {
                child: None,
                port,
                tls_port,
                dir,
                binary: binary.clone(),
                settings: self.clone(),
            };
            match me.spawn() {
                Ok(()) => return Ok(me),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// Finds the `redis-server` binary: `$REDIS_SERVER` if set (and `None` if
/// that is not a file), else the first `redis-server` on `PATH`, `/usr/bin`,
/// `/usr/sbin` or `/usr/local/bin`. Tests call it to skip, or to fail under
/// CI, where no server is installed (feature `test-util`).
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

/// `redis-cli`, found beside `redis-server` or on `PATH`.
fn find_redis_cli() -> Option<PathBuf> {
    let beside = find_redis_server().and_then(|s| s.parent().map(|d| d.join("redis-cli")));
    let path = std::env::var_os("PATH").unwrap_or_default();
    beside
        .into_iter()
        .chain(std::env::split_paths(&path).map(|d| d.join("redis-cli")))
        .chain([PathBuf::from("/usr/bin/redis-cli")])
        .find(|p| p.is_file())
}

impl LocalRedis {
    /// Starts a server with the default settings and waits (up to 10 s)
    /// until it answers.
    ///
    /// # Errors
    ///
    /// [`LocalServerError::NotInstalled`] without `redis-server`;
    /// [`LocalServerError::Io`] if it cannot be started;
    /// [`LocalServerError::Exited`] (with its log) if it exits as it starts;
    /// [`LocalServerError::Redis`] if it does not answer.
    pub fn start() -> Result<LocalRedis, LocalServerError> {
        LocalRedis::builder().start()
    }

    /// Like [`start`](Self::start), with `appendfsync always` when `always`
    /// is true: every acked write is on disk before Redis replies, even if
    /// Redis was postponing writes behind a slow fsync.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with_fsync(always: bool) -> Result<LocalRedis, LocalServerError> {
        LocalRedis::builder().appendfsync_always(always).start()
    }

    /// Settings for a server to start.
    pub fn builder() -> LocalRedisBuilder {
        LocalRedisBuilder::default()
    }

    fn spawn(&mut self) -> Result<(), LocalServerError> {
        let s = &self.settings;
        let mut cmd = Command::new(&self.binary);
        cmd.args([
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
            if s.always { "always" } else { "everysec" },
            "--maxmemory-policy",
            "noeviction",
        ])
        .args(["--protected-mode", "no", "--daemonize", "no"]);
        if let (Some([cert, key, ca]), Some(port)) = (&s.tls, self.tls_port) {
            cmd.args(["--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
                .arg("--tls-cert-file")
                .arg(cert)
                .arg("--tls-key-file")
                .arg(key)
                .arg("--tls-ca-cert-file")
                .arg(ca);
        }
        for (k, v) in &s.settings {
            cmd.arg(format!("--{k}")).arg(v);
        }
        // The log goes to standard output; a configuration it refuses, to
        // standard error: both into `redis.log`, kept across restarts.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("redis.log"))
            .map_err(io("cannot create redis.log in the temp dir"))?;
        let child = cmd
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io("cannot open redis.log"))?)
            .stderr(log)
            .spawn()
            .map_err(io("cannot start redis-server"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        let client = redis::Client::open(self.url())?;
        let want = std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    self.child = None;
                    let log = self.log_tail(5);
                    return Err(LocalServerError::Exited(if log.is_empty() {
                        // Nothing written: a full disk takes the log too.
                        format!(
                            "it exited at start ({status}) with an empty log; is the disk that holds {} full?",
                            self.dir.display()
                        )
                    } else {
                        format!("it exited at start ({status}); its log ends with:\n{log}")
                    }));
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
                    return Err(LocalServerError::Setup(format!(
                        "another redis-server answers on port {}",
                        self.port
                    )));
                }
                // Up, with a password set (`requirepass`): it cannot be
                // asked for its directory; the child is alive, so it is ours.
                Err(e) if e.code() == Some("NOAUTH") => return Ok(()),
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

    /// The last `lines` lines of the server's log, for an error message.
    fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// `rediss://127.0.0.1:<tls port>/` if the server listens for TLS.
    pub fn tls_url(&self) -> Option<String> {
        self.tls_port.map(|p| format!("rediss://127.0.0.1:{p}/"))
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data directory (holds the AOF and `redis.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server with SIGKILL (no shutdown save) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again after [`kill`](Self::kill), on the same port
    /// and directory: it reloads its AOF (and, in a Cluster, its
    /// `nodes.conf`).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_again(&mut self) -> Result<(), LocalServerError> {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        // Wait until the port is free again.
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.spawn()
    }

    /// Kills the server with SIGKILL and starts it again on the same port
    /// and directory: it reloads the AOF.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn restart(&mut self) -> Result<(), LocalServerError> {
        self.start_again()
    }
}

fn free_port() -> Result<u16, LocalServerError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(io("no free port"))?;
    let port = l.local_addr().map_err(io("no free port"))?.port();
    Ok(port)
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster on loopback ports: `masters` masters with `replicas`
/// replicas each, every node a [`LocalRedis`] with `cluster-enabled yes`
/// and a node timeout of one second, joined with `redis-cli --cluster
/// create`. Killed on drop. For tests and benchmarks (feature
/// `test-util`).
///
/// # Examples
///
/// ```no_run
/// use schedulers_redis::LocalCluster;
///
/// let cluster = LocalCluster::start(3, 1)?;
/// println!("seed node {}", cluster.url());
/// # Ok::<(), schedulers_redis::LocalServerError>(())
/// ```
#[derive(Debug)]
pub struct LocalCluster {
    nodes: Vec<LocalRedis>,
}

/// What `CLUSTER NODES` says of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    /// Its node id.
    pub id: String,
    /// The id of its master, for a replica.
    pub master_id: Option<String>,
    /// Its client port.
    pub port: u16,
    /// Whether it is a master now.
    pub master: bool,
    /// Whether the Cluster sees it as failed.
    pub failed: bool,
    /// The slot ranges it serves (masters).
    pub slots: Vec<(u16, u16)>,
}

impl LocalCluster {
    /// Starts the nodes, creates the Cluster and waits (up to 30 s) until
    /// every node sees it as `ok` and every replica is in sync.
    ///
    /// # Errors
    ///
    /// [`LocalServerError::NotInstalled`] if `redis-server` or `redis-cli`
    /// is missing; [`LocalServerError::Setup`] if `masters` is under 3 (the
    /// least Redis accepts) or the Cluster does not form; as
    /// [`LocalRedis::start`] for each node.
    pub fn start(masters: usize, replicas: usize) -> Result<LocalCluster, LocalServerError> {
        LocalCluster::start_with(masters, replicas, LocalRedis::builder())
    }

    /// As [`start`](Self::start), each node with the settings of `node`
    /// (plus the Cluster's own).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with(
        masters: usize,
        replicas: usize,
        node: LocalRedisBuilder,
    ) -> Result<LocalCluster, LocalServerError> {
        if masters < 3 {
            return Err(LocalServerError::Setup(format!(
                "a Redis Cluster needs at least 3 masters, not {masters}"
            )));
        }
        let cli = find_redis_cli().ok_or(LocalServerError::NotInstalled("redis-cli"))?;
        let mut last = LocalServerError::Setup("the cluster did not form".into());
        // The bus ports are probed free, then taken by the servers: retry
        // the rare race with another process.
        for _ in 0..3 {
            let mut nodes = Vec::new();
            for _ in 0..masters * (1 + replicas) {
                let bus = free_port()?;
                nodes.push(
                    node.clone()
                        .set("cluster-enabled", "yes")
                        .set("cluster-config-file", "nodes.conf")
                        .set("cluster-node-timeout", "1000")
                        .set("cluster-port", &bus.to_string())
                        .start()?,
                );
            }
            let me = LocalCluster { nodes };
            match me.create(&cli, replicas) {
                Ok(()) => return Ok(me),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn create(&self, cli: &Path, replicas: usize) -> Result<(), LocalServerError> {
        let out = Command::new(cli)
            .args(["--cluster", "create"])
            .args(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .map_err(io("cannot run redis-cli"))?;
        if !out.status.success() {
            return Err(LocalServerError::Setup(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        self.wait_ok(Duration::from_secs(30))
    }

    /// Waits until every running node sees the Cluster as `ok`, every slot
    /// has a master that answers, and every replica's link to its master is
    /// up.
    ///
    /// # Errors
    ///
    /// [`LocalServerError::Setup`] if that does not happen within
    /// `timeout`.
    pub fn wait_ok(&self, timeout: Duration) -> Result<(), LocalServerError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.healthy() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(LocalServerError::Setup(format!(
                    "the cluster did not become ok in {timeout:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn healthy(&self) -> bool {
        self.nodes.iter().filter(|n| n.child.is_some()).all(|n| {
            let Ok(mut con) = redis::Client::open(n.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
            else {
                return false;
            };
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut con)
                .unwrap_or_default();
            let repl: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut con)
                .unwrap_or_default();
            info.contains("cluster_state:ok")
                && info.contains("cluster_slots_assigned:16384")
                && info.contains("cluster_slots_ok:16384")
                && (!repl.contains("role:slave") || repl.contains("master_link_status:up"))
        })
    }

    /// The URL of the first node that is running (the seed clients start
    /// from).
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .find(|n| n.child.is_some())
            .unwrap_or(&self.nodes[0])
            .url()
    }

    /// Every node, masters and replicas, in the order they were started.
    pub fn nodes(&self) -> &[LocalRedis] {
        &self.nodes
    }

    /// The node listening on `port`.
    pub fn node_mut(&mut self, port: u16) -> Option<&mut LocalRedis> {
        self.nodes.iter_mut().find(|n| n.port == port)
    }

    /// What the Cluster says of its nodes now, asked of the first node that
    /// answers.
    ///
    /// # Errors
    ///
    /// [`LocalServerError::Redis`] if no node answers,
    /// [`LocalServerError::Setup`] if none runs.
    pub fn topology(&self) -> Result<Vec<ClusterNode>, LocalServerError> {
        let mut last = None;
        for n in self.nodes.iter().filter(|n| n.child.is_some()) {
            let r = redis::Client::open(n.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
                .and_then(|mut c| redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut c));
            match r {
                Ok(text) => return Ok(parse_nodes(&text)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or(
            LocalServerError::Setup("no node of the cluster runs".into()),
            LocalServerError::Redis,
        ))
    }

    /// The ports of the replicas of the node on `port`.
    ///
    /// # Errors
    ///
    /// As [`topology`](Self::topology).
    pub fn replicas_of(&self, port: u16) -> Result<Vec<u16>, LocalServerError> {
        let nodes = self.topology()?;
        let id = nodes.iter().find(|n| n.port == port).map(|n| n.id.clone());
        Ok(nodes
            .iter()
            .filter(|n| n.master_id.is_some() && n.master_id == id)
            .map(|n| n.port)
            .collect())
    }

    /// The port of the master serving `slot` now.
    ///
    /// # Errors
    ///
    /// As [`topology`](Self::topology); [`LocalServerError::Setup`] if no
    /// master serves it.
    pub fn master_of(&self, slot: u16) -> Result<u16, LocalServerError> {
        self.topology()?
            .into_iter()
            .find(|n| n.master && !n.failed && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b))
            .map(|n| n.port)
            .ok_or_else(|| LocalServerError::Setup(format!("no master serves slot {slot}")))
    }
}

/// Parses `CLUSTER NODES`: `<id> <ip:port@bus> <flags> <master> … <slots>`.
fn parse_nodes(text: &str) -> Vec<ClusterNode> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let addr = f.get(1)?.split('@').next()?;
            let port = addr.rsplit_once(':')?.1.parse().ok()?;
            let flags = f.get(2)?;
            let slots = f
                .iter()
                .skip(8)
                .filter(|s| !s.starts_with('['))
                .filter_map(|s| match s.split_once('-') {
                    Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                    None => s.parse().ok().map(|x| (x, x)),
                })
                .collect();
            let master_id = f.get(3).filter(|m| **m != "-").map(|m| (*m).to_owned());
            Some(ClusterNode {
                id: (*f.first()?).to_owned(),
                master_id,
                port,
                master: flags.contains("master"),
                failed: flags.contains("fail") && !flags.contains("fail?"),
                slots,
            })
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::parse_nodes;

    #[test]
    fn cluster_nodes_are_parsed() {
        let text = "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n\
                    b2 127.0.0.1:7001@17001 slave a1 0 1 1 connected\n\
                    c3 127.0.0.1:7002@17002 master,fail - 1 1 2 disconnected 5461-10922 12000\n";
        let n = parse_nodes(text);
        assert_eq!(n.len(), 3);
        assert_eq!((n[0].port, n[0].master, n[0].failed), (7000, true, false));
        assert_eq!(n[0].slots, [(0, 5460)]);
        assert!(!n[1].master);
        assert_eq!(n[1].master_id.as_deref(), Some("a1"));
        assert_eq!(n[0].master_id, None);
        assert!(n[2].failed);
        assert_eq!(n[2].slots, [(5461, 10922), (12000, 12000)]);
    }
}
