//! Every connection to Redis is made here: opening (plain or TLS), finding
//! out whether the server is one node or a Cluster, routing each command to
//! the master of its slot, pipelining, following `MOVED` and `ASK`,
//! re-sending scripts a node does not know (`NOSCRIPT`), waiting for the
//! chosen durability, checking the recorded layout, the wake-up
//! subscription, and counting round trips.
//!
//! # One node or a Cluster
//!
//! The first connection asks the node for `CLUSTER SLOTS`. A standalone
//! server answers that cluster support is disabled: every command goes to
//! it. A Cluster node answers with the masters of every slot range: a
//! command then goes to the master of the slot of its routing key (a shard's
//! hash-tagged prefix, so every key a script touches is in that slot), one
//! connection per master, opened when first needed.
//!
//! A batch of commands (the worker pipelines one script call per shard) is
//! split by master: every master gets one pipeline, all are written before
//! any reply is read, so a batch costs one round trip however many masters
//! it spans. Each command gets its own result:
//!
//! - `MOVED` (the slot has a new master: a failover, a resharding) refreshes
//!   the slot map and sends the command again to the new master; `ASK` (a
//!   slot being migrated) sends it once to the named node after `ASKING`;
//!   `READONLY` (the node became a replica) refreshes and sends again. Each
//!   of these means the command did not run, so sending it again is safe.
//! - `NOSCRIPT` (a restarted, flushed or newly promoted node) sends the same
//!   call as `EVAL` with the source, which also caches the script there.
//! - A node that cannot be reached fails only the commands routed to it:
//!   its connection is dropped, the slot map is refreshed on the next call
//!   (from any node that answers, the seed first), and the caller retries
//!   with backoff. The other masters' commands go on. A node that accepts
//!   the connection but does not answer (a paused process, a one-way
//!   partition) holds up the replies of the round trip for up to the I/O
//!   timeout, since the pipelines are read one after the other.
//!
//! The `redis` crate's own synchronous `ClusterConnection` was not used: its
//! pipelines return `MOVED` and `ASK` as values without following them, it
//! cannot send `WAIT`/`WAITAOF` on the connection of a write (they have no
//! key, so it routes them to a random node), it refuses `TIME` in a
//! pipeline, and one unreachable node fails a whole pipeline. The routing
//! here is small (a CRC16 of the hash tag and a sorted slot map) and every
//! connection is still a `redis::Connection`.
//!
//! # Durability
//!
//! With [`Durability::Fsync`] or [`Durability::Replicas`], every pipeline
//! that holds a write ends with `WAITAOF 1 0 <timeout>` (Redis 7.2 and later)
//! or `WAIT <n> <timeout>`, on the same connection and in the same round
//! trip; the writes of a pipeline whose wait falls short fail with
//! [`Error::NotDurable`]. On a server without `WAITAOF`, `Fsync` is
//! accepted only if the node runs `appendonly yes` with `appendfsync always`
//! (checked with `CONFIG GET` when a connection opens): Redis then fsyncs
//! the AOF before it sends any reply.
//!
//! # The layout
//!
//! Before its first command, every endpoint reads (and, the first time,
//! records) the layout of its namespace at `{tw:<ns>:layout}`; a different
//! one fails every call with [`Error::LayoutMismatch`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, ErrorKind, ServerErrorKind, Value};

use crate::{Config, Durability, Error};

/// Round trips and commands sent, for [`Worker::stats`](crate::Worker::stats)
/// and the load benchmark.
#[derive(Debug, Default)]
pub(crate) struct IoCounters {
    pub(crate) round_trips: AtomicU64,
    pub(crate) commands: AtomicU64,
}

/// A script's source and SHA1, for `EVALSHA` and the `EVAL` fallback.
#[derive(Debug)]
pub(crate) struct ScriptSrc {
    pub(crate) sha: String,
    pub(crate) source: String,
}

impl ScriptSrc {
    pub(crate) fn new(source: String) -> ScriptSrc {
        ScriptSrc {
            sha: redis::Script::new(&source).get_hash().to_owned(),
            source,
        }
    }
}

/// One command of a batch.
#[derive(Debug)]
pub(crate) struct Req {
    /// A key (or a hash-tagged prefix) whose slot picks the node; `None`
    /// for a command any node may answer.
    pub(crate) route: Option<Arc<str>>,
    /// The command (`EVALSHA sha …` for a script).
    pub(crate) cmd: redis::Cmd,
    /// The script, for a script call.
    pub(crate) script: Option<&'static ScriptSrc>,
    /// It changes data, so it waits for the durability.
    pub(crate) write: bool,
}

impl Req {
    /// A plain command that reads.
    pub(crate) fn read(route: Option<Arc<str>>, cmd: redis::Cmd) -> Req {
        Req {
            route,
            cmd,
            script: None,
            write: false,
        }
    }

    /// The same call as `EVAL` with the script's source.
    fn as_eval(&self) -> Option<redis::Cmd> {
        let script = self.script?;
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(&script.source);
        for a in self.cmd.args_iter().skip(2) {
            if let redis::Arg::Simple(b) = a {
                cmd.arg(b);
            }
        }
        Some(cmd)
    }
}

/// One request's reply, and why its durability fell short if it did.
pub(crate) type Applied = (Result<Value, Error>, Option<String>);

/// The layout check of an endpoint.
#[derive(Debug)]
struct LayoutCheck {
    namespace: String,
    key: Arc<str>,
    value: String,
    done: AtomicBool,
}

#[derive(Debug)]
struct Inner {
    /// The node given by the URL, with its TLS and credentials: every other
    /// node's connection copies it with another host and port.
    seed: ConnectionInfo,
    timeout: Duration,
    durability: Durability,
    durability_timeout_ms: u64,
    layout: LayoutCheck,
    counters: IoCounters,
    /// Every node of the last slot map (`host:port`), to find the Cluster
    /// again when the seed is down.
    known: Mutex<Vec<(String, u16)>>,
}

/// Where Redis is and how to reach it; hands out connections. Cheap to
/// clone.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    inner: Arc<Inner>,
}

/// The layout key of a namespace. It carries the namespace in its hash tag,
/// like the shards' keys, so one ACL key pattern `{tw:<ns>:*` covers all.
pub(crate) fn layout_key(namespace: &str) -> String {
    format!("{{tw:{namespace}:layout}}")
}

/// Records the layout on first use and returns the recorded one.
const LAYOUT_SCRIPT: &str = r#"
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
"#;

fn layout_script() -> &'static ScriptSrc {
    static S: std::sync::OnceLock<ScriptSrc> = std::sync::OnceLock::new();
    S.get_or_init(|| ScriptSrc::new(LAYOUT_SCRIPT.to_owned()))
}

fn invalid_url(e: redis::RedisError) -> Error {
    if e.to_string().contains("TLS") {
        Error::InvalidConfig("rediss:// URLs need the `tls` feature of schedulers-redis")
    } else {
        Error::Redis(e)
    }
}

impl Endpoint {
    /// Parses `url` (`redis://` or, with the `tls` feature,
    /// `rediss://`); connects lazily.
    pub(crate) fn new(url: &str, config: &Config) -> Result<Endpoint, Error> {
        let seed = Self::seed_info(url, config)?;
        let ns = config.namespace.clone();
        Ok(Endpoint {
            inner: Arc::new(Inner {
                seed,
                timeout: config.io_timeout,
                durability: config.durability,
                durability_timeout_ms: u64::try_from(config.durability_timeout.as_millis())
                    .unwrap_or(u64::MAX),
                layout: LayoutCheck {
                    key: layout_key(&ns).into(),
                    namespace: ns,
                    value: config.layout(),
                    done: AtomicBool::new(false),
                },
                counters: IoCounters::default(),
                known: Mutex::new(Vec::new()),
            }),
        })
    }

    #[cfg(feature = "tls")]
    fn seed_info(url: &str, config: &Config) -> Result<ConnectionInfo, Error> {
        use redis::IntoConnectionInfo;
        let info = url.into_connection_info().map_err(invalid_url)?;
        match (&info.addr(), &config.tls) {
            (ConnectionAddr::TcpTls { .. }, Some(tls)) => {
                // One crypto provider for the process (ring); if another
                // part of the program installed one, that one is used.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let certs = redis::TlsCertificates {
                    client_tls: tls
                        .client_cert_pem
                        .as_ref()
                        .map(|(c, k)| redis::ClientTlsConfig {
                            client_cert: c.clone(),
                            client_key: k.clone(),
                        }),
                    root_cert: tls.root_ca_pem.clone(),
                };
                let client = redis::Client::build_with_tls(info, certs)?;
                Ok(client.get_connection_info().clone())
            }
            (ConnectionAddr::TcpTls { .. }, None) => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                Ok(info)
            }
            _ => Ok(info),
        }
    }

    #[cfg(not(feature = "tls"))]
    fn seed_info(url: &str, _config: &Config) -> Result<ConnectionInfo, Error> {
        use redis::IntoConnectionInfo;
        let info = url.into_connection_info().map_err(invalid_url)?;
        if matches!(info.addr(), ConnectionAddr::TcpTls { .. }) {
            return Err(Error::InvalidConfig(
                "rediss:// URLs need the `tls` feature of schedulers-redis",
            ));
        }
        Ok(info)
    }

    /// A connection that opens on first use (and after an error).
    pub(crate) fn conn(&self) -> Conn {
        Conn {
            ep: self.clone(),
            mode: Mode::Closed,
        }
    }

    /// The counters shared by every connection of this endpoint.
    pub(crate) fn counters(&self) -> &IoCounters {
        &self.inner.counters
    }

    /// The seed's address as `(host, port)`, if it is a TCP address.
    fn seed_addr(&self) -> Option<(String, u16)> {
        match self.inner.seed.addr() {
            ConnectionAddr::Tcp(h, p) => Some((h.clone(), *p)),
            ConnectionAddr::TcpTls { host, port, .. } => Some((host.clone(), *port)),
            _ => None,
        }
    }

    /// The connection info of another node: the seed's, with its address.
    fn info_for(&self, host: &str, port: u16) -> ConnectionInfo {
        let addr = match self.inner.seed.addr() {
            ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => ConnectionAddr::TcpTls {
                host: host.to_owned(),
                port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => ConnectionAddr::Tcp(host.to_owned(), port),
        };
        self.inner.seed.clone().set_addr(addr)
    }

    /// Opens a connection to `info` with the timeouts.
    fn open_raw(&self, info: ConnectionInfo) -> Result<redis::Connection, Error> {
        let client = redis::Client::open(info)?;
        let con = client.get_connection_with_timeout(self.inner.timeout)?;
        con.set_read_timeout(Some(self.inner.timeout))?;
        con.set_write_timeout(Some(self.inner.timeout))?;
        Ok(con)
    }

    /// Opens a node connection and learns what its durability needs.
    fn open_node(&self, info: ConnectionInfo) -> Result<Node, Error> {
        let mut con = self.open_raw(info)?;
        let wait = match self.inner.durability {
            Durability::Async => None,
            Durability::Replicas(n) => Some(
                redis::cmd("WAIT")
                    .arg(n)
                    .arg(self.inner.durability_timeout_ms)
                    .clone(),
            ),
            Durability::Fsync => {
                let info: Value = redis::cmd("COMMAND")
                    .arg("INFO")
                    .arg("WAITAOF")
                    .query(&mut con)?;
                let has_waitaof =
                    matches!(&info, Value::Array(a) if a.iter().any(|v| *v != Value::Nil));
                if has_waitaof {
                    Some(
                        redis::cmd("WAITAOF")
                            .arg(1)
                            .arg(0)
                            .arg(self.inner.durability_timeout_ms)
                            .clone(),
                    )
                } else {
                    check_always_fsync(&mut con)?;
                    None
                }
            }
        };
        Ok(Node { con, wait })
    }

    /// Subscribes to `channels` on a connection of its own and reports what
    /// it hears to `on` until `on` returns false (`Ok`) or the connection
    /// fails (`Err`). `on` hears [`Heard::Subscribed`] once the subscription
    /// stands, then every message, and [`Heard::Quiet`] after each `wait`
    /// without one (so the caller can look at its stop flag).
    ///
    /// On a Cluster, a `PUBLISH` reaches the subscribers of every node, so
    /// the subscription is made on the seed, or on the first known node that
    /// answers.
    pub(crate) fn listen(
        &self,
        channels: &[String],
        wait: Duration,
        mut on: impl FnMut(Heard) -> bool,
    ) -> Result<(), Error> {
        let mut con = match self.open_raw(self.inner.seed.clone()) {
            Ok(c) => c,
            Err(first) => {
                let known = self.known();
                known
                    .iter()
                    .find_map(|(h, p)| self.open_raw(self.info_for(h, *p)).ok())
                    .ok_or(first)?
            }
        };
        con.set_read_timeout(Some(wait))?;
        // The subscription lasts as long as `pubsub` (its drop unsubscribes).
        let mut pubsub = con.as_pubsub();
        pubsub.subscribe(channels)?;
        if !on(Heard::Subscribed) {
            return Ok(());
        }
        loop {
            let heard = match pubsub.get_message() {
                Ok(msg) => Heard::Message {
                    channel: msg.get_channel_name().to_owned(),
                    payload: msg.get_payload::<String>().unwrap_or_default(),
                },
                Err(e) if e.is_timeout() => Heard::Quiet,
                Err(e) => return Err(e.into()),
            };
            if !on(heard) {
                return Ok(());
            }
        }
    }

    fn known(&self) -> Vec<(String, u16)> {
        self.inner
            .known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// `Fsync` on a server without `WAITAOF`: only `appendfsync always` makes a
/// reply mean "on disk".
fn check_always_fsync(con: &mut redis::Connection) -> Result<(), Error> {
    let get = |con: &mut redis::Connection, name: &str| -> Result<String, Error> {
        let v: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query(con)
            .map_err(|e| {
                Error::DurabilityUnavailable(format!(
                    "the server has no WAITAOF (Redis < 7.2) and its AOF settings cannot be read ({e})"
                ))
            })?;
        Ok(v.get(1).cloned().unwrap_or_default())
    };
    let aof = get(con, "appendonly")?;
    let fsync = get(con, "appendfsync")?;
    if aof == "yes" && fsync == "always" {
        Ok(())
    } else {
        Err(Error::DurabilityUnavailable(format!(
            "the server has no WAITAOF (Redis < 7.2) and runs appendonly {aof}, appendfsync {fsync}: \
             Fsync needs appendonly yes with appendfsync always there"
        )))
    }
}

/// What a subscription heard.
#[derive(Debug)]
pub(crate) enum Heard {
    /// The subscription is in place: messages from now on arrive.
    Subscribed,
    /// A message.
    Message {
        /// Its channel.
        channel: String,
        /// Its text.
        payload: String,
    },
    /// Nothing within the wait.
    Quiet,
}

/// An open connection to one node.
struct Node {
    con: redis::Connection,
    /// The command that waits for the durability after writes, if any.
    wait: Option<redis::Cmd>,
}

/// A node's `(host, port)`.
type Addr = (String, u16);

/// A range of slots and its master.
#[derive(Debug, Clone)]
struct SlotRange {
    start: u16,
    end: u16,
    master: (String, u16),
}

enum Mode {
    Closed,
    Single(Box<Node>),
    Cluster(Box<Cluster>),
}

struct Cluster {
    slots: Vec<SlotRange>,
    nodes: BTreeMap<(String, u16), Node>,
    /// The slot map may be out of date (a node failed): refresh it first.
    stale: bool,
}

impl Cluster {
    fn master_of(&self, slot: u16) -> Option<&(String, u16)> {
        let i = self.slots.partition_point(|r| r.end < slot);
        self.slots
            .get(i)
            .filter(|r| r.start <= slot)
            .map(|r| &r.master)
    }
}

/// A connection that opens itself on first use and after errors: to one
/// node, or to every master of a Cluster.
pub(crate) struct Conn {
    ep: Endpoint,
    mode: Mode,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match &self.mode {
            Mode::Closed => "closed",
            Mode::Single(_) => "single",
            Mode::Cluster(_) => "cluster",
        };
        f.debug_struct("Conn")
            .field("mode", &mode)
            .finish_non_exhaustive()
    }
}

/// Where a command goes in one pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// The master of its slot (or the single node).
    Slot,
    /// This node (from `MOVED`), or this node after `ASKING` (from `ASK`).
    Node { asking: bool },
}

/// One node's pipeline of a pass, written and not yet read: its node, its
/// commands, and whether a durability wait follows them.
type Written = (Option<Addr>, Vec<Pending>, bool);

/// Requests whose first pass is written and not yet read (see
/// [`Conn::send`]).
pub(crate) struct InFlight {
    written: Vec<Written>,
    out: Vec<Option<Result<Value, Error>>>,
    refresh: bool,
}

/// One command's state across passes.
struct Pending {
    idx: usize,
    via: Via,
    target: Option<(String, u16)>,
    eval: bool,
}

/// The CRC16 (XMODEM) Redis Cluster hashes keys with.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The Cluster slot of a key: of its hash tag (the first non-empty `{…}`)
/// if it has one.
pub(crate) fn slot_of(key: &str) -> u16 {
    let b = key.as_bytes();
    let tagged = b.iter().position(|&c| c == b'{').and_then(|open| {
        let rest = &b[open + 1..];
        rest.iter()
            .position(|&c| c == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(b)) % 16384
}

/// Asks a node for `CLUSTER SLOTS`. The outer error is a failed
/// connection; the inner one the node's refusal (not a Cluster node, no
/// permission).
fn cluster_slots(con: &mut redis::Connection) -> Result<Result<Value, redis::RedisError>, Error> {
    match redis::cmd("CLUSTER").arg("SLOTS").query::<Value>(con) {
        Ok(v) => Ok(match server_error(&v) {
            Some(e) => Err(e),
            None => Ok(v),
        }),
        Err(e) if matches!(e.kind(), ErrorKind::Server(_)) || e.code().is_some() => Ok(Err(e)),
        Err(e) => Err(e.into()),
    }
}

fn server_error(v: &Value) -> Option<redis::RedisError> {
    match v {
        Value::ServerError(e) => Some(e.clone().into()),
        _ => None,
    }
}

/// The `host:port` in the details of a `MOVED`/`ASK` error (`<slot>
/// <host>:<port>`).
fn redirect_target(e: &redis::RedisError) -> Option<(String, u16)> {
    let detail = e.detail()?;
    let addr = detail.split_whitespace().nth(1)?;
    let (host, port) = addr.rsplit_once(':')?;
    Some((host.to_owned(), port.parse().ok()?))
}

fn kind_of(e: &redis::RedisError) -> Option<ServerErrorKind> {
    match e.kind() {
        ErrorKind::Server(k) => Some(k),
        _ => None,
    }
}

/// Parses `CLUSTER SLOTS`.
fn parse_slots(v: &Value, seed_host: &str) -> Result<Vec<SlotRange>, Error> {
    let bad = || Error::Protocol("malformed CLUSTER SLOTS reply".into());
    let Value::Array(ranges) = v else {
        return Err(bad());
    };
    let mut out = Vec::new();
    for r in ranges {
        let Value::Array(r) = r else {
            return Err(bad());
        };
        let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
            (r.first(), r.get(1), r.get(2))
        else {
            return Err(bad());
        };
        let host = match master.first() {
            Some(Value::BulkString(h)) if !h.is_empty() => String::from_utf8_lossy(h).into_owned(),
            _ => seed_host.to_owned(),
        };
        let Some(Value::Int(port)) = master.get(1) else {
            return Err(bad());
        };
        out.push(SlotRange {
            start: u16::try_from(*start).map_err(|_| bad())?,
            end: u16::try_from(*end).map_err(|_| bad())?,
            master: (host, u16::try_from(*port).map_err(|_| bad())?),
        });
    }
    out.sort_by_key(|r| r.start);
    Ok(out)
}

impl Conn {
    /// Opens the connection if needed: finds out what the server is, and
    /// checks the layout once per endpoint.
    fn ensure(&mut self) -> Result<(), Error> {
        let stale = matches!(&self.mode, Mode::Cluster(c) if c.stale);
        if matches!(self.mode, Mode::Closed) {
            self.discover()?;
        } else if stale {
            self.refresh()?;
        }
        let ep = self.ep.clone();
        let layout = &ep.inner.layout;
        if !layout.done.load(Ordering::Acquire) {
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(&layout_script().sha)
                .arg(1)
                .arg(&*layout.key)
                .arg(&layout.value);
            let req = Req {
                route: Some(layout.key.clone()),
                cmd,
                script: Some(layout_script()),
                write: true,
            };
            let reqs = std::slice::from_ref(&req);
            let sent = self.write_first(reqs);
            let recorded = self
                .recv_applied(reqs, sent)?
                .pop()
                .map_or_else(|| Err(Error::Protocol("no reply".into())), |(r, _)| r)?;
            let recorded: String =
                redis::from_redis_value(recorded).map_err(redis::RedisError::from)?;
            if recorded != layout.value {
                return Err(Error::LayoutMismatch {
                    namespace: layout.namespace.clone(),
                    recorded,
                    configured: layout.value.clone(),
                });
            }
            layout.done.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Connects to the seed (or, if it is down, a node of the last known
    /// slot map) and asks whether it is a Cluster node.
    fn discover(&mut self) -> Result<(), Error> {
        let ep = self.ep.clone();
        let mut candidates: Vec<Option<(String, u16)>> = vec![None];
        candidates.extend(ep.known().into_iter().map(Some));
        let mut last = None;
        for addr in candidates {
            let info = match &addr {
                None => ep.inner.seed.clone(),
                Some((h, p)) => ep.info_for(h, *p),
            };
            let attempt = ep.open_node(info).and_then(|mut node| {
                let reply = cluster_slots(&mut node.con)?;
                Ok((node, reply))
            });
            let (node, reply) = match attempt {
                Ok(x) => x,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            return match reply {
                // A standalone server; or a user not allowed CLUSTER SLOTS,
                // which works as long as the server is not a Cluster node
                // (one would answer MOVED, reported as such).
                Err(e)
                    if e.to_string().contains("cluster support disabled")
                        || kind_of(&e) == Some(ServerErrorKind::NoPerm) =>
                {
                    self.mode = Mode::Single(Box::new(node));
                    Ok(())
                }
                Err(e) => Err(e.into()),
                Ok(reply) => {
                    let here = addr.clone().or_else(|| ep.seed_addr());
                    let host = here.as_ref().map(|a| a.0.clone()).unwrap_or_default();
                    let slots = parse_slots(&reply, &host)?;
                    let mut nodes = BTreeMap::new();
                    if let Some(a) = here {
                        nodes.insert(a, node);
                    }
                    self.set_known(&slots);
                    self.mode = Mode::Cluster(Box::new(Cluster {
                        slots,
                        nodes,
                        stale: false,
                    }));
                    Ok(())
                }
            };
        }
        Err(last.unwrap_or_else(|| Error::Protocol("no node to connect to".into())))
    }

    fn set_known(&self, slots: &[SlotRange]) {
        let mut known: Vec<(String, u16)> = slots.iter().map(|r| r.master.clone()).collect();
        known.sort();
        known.dedup();
        *self
            .ep
            .inner
            .known
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = known;
    }

    /// Reads the slot map again from any node that answers: the open ones,
    /// then the seed, then every node known.
    fn refresh(&mut self) -> Result<(), Error> {
        let ep = self.ep.clone();
        let Mode::Cluster(c) = &mut self.mode else {
            return Ok(());
        };
        let mut last = None;
        let mut found = None;
        let open: Vec<(String, u16)> = c.nodes.keys().cloned().collect();
        for addr in &open {
            let Some(node) = c.nodes.get_mut(addr) else {
                continue;
            };
            match cluster_slots(&mut node.con) {
                Ok(Ok(v)) => {
                    found = Some(parse_slots(&v, &addr.0)?);
                    break;
                }
                Ok(Err(e)) => last = Some(e.into()),
                Err(e) => {
                    c.nodes.remove(addr);
                    last = Some(e);
                }
            }
        }
        if found.is_none() {
            let mut candidates: Vec<(String, u16)> = ep.seed_addr().into_iter().collect();
            candidates.extend(ep.known());
            for (h, p) in candidates {
                if c.nodes.contains_key(&(h.clone(), p)) {
                    continue;
                }
                let attempt = ep.open_node(ep.info_for(&h, p)).and_then(|mut node| {
                    let v = cluster_slots(&mut node.con)??;
                    Ok((node, parse_slots(&v, &h)?))
                });
                match attempt {
                    Ok((node, slots)) => {
                        c.nodes.insert((h, p), node);
                        found = Some(slots);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
        }
        match found {
            Some(slots) => {
                // Connections to nodes that no longer master a slot are
                // closed (a demoted master would answer READONLY or MOVED).
                c.nodes
                    .retain(|addr, _| slots.iter().any(|r| &r.master == addr));
                c.slots = slots;
                c.stale = false;
                let slots = c.slots.clone();
                self.set_known(&slots);
                Ok(())
            }
            None => Err(last.unwrap_or_else(|| {
                Error::Protocol("no Cluster node answered CLUSTER SLOTS".into())
            })),
        }
    }

    /// Sends one plain command to any node (or the one of `route`) and
    /// converts the reply.
    pub(crate) fn query<T: redis::FromRedisValue>(
        &mut self,
        route: Option<Arc<str>>,
        cmd: redis::Cmd,
    ) -> Result<T, Error> {
        let v = self.call(&Req::read(route, cmd))?;
        Ok(redis::from_redis_value(v).map_err(redis::RedisError::from)?)
    }

    /// Runs one request.
    pub(crate) fn call(&mut self, req: &Req) -> Result<Value, Error> {
        self.run(std::slice::from_ref(req))?
            .pop()
            .unwrap_or_else(|| Err(Error::Protocol("empty reply".into())))
    }

    /// Runs requests in one round trip per pass (a pipeline per node, all
    /// written before any is read); one result per request, in order. The
    /// outer error means nothing could be sent (no node reachable, or the
    /// layout differs), or every request failed on a broken connection; a
    /// per-request connection error means that request may or may not have
    /// run.
    pub(crate) fn run(&mut self, reqs: &[Req]) -> Result<Vec<Result<Value, Error>>, Error> {
        let sent = self.send(reqs)?;
        self.recv(reqs, sent)
    }

    /// As [`run`](Self::run), but a write that was applied and not
    /// confirmed durable keeps its reply, beside why its durability fell
    /// short (for the worker's reaper, whose reaps happened on the master
    /// whatever their durability, and must be reported).
    pub(crate) fn run_applied(&mut self, reqs: &[Req]) -> Result<Vec<Applied>, Error> {
        let sent = self.send(reqs)?;
        self.recv_applied(reqs, sent)
    }

    /// The first half of [`run`](Self::run): writes the requests' first
    /// pass and returns without reading, so the caller works while Redis
    /// does. Until [`recv`](Self::recv) reads it, send nothing else on
    /// this connection: its replies would be read as this pass's.
    pub(crate) fn send(&mut self, reqs: &[Req]) -> Result<InFlight, Error> {
        if reqs.is_empty() {
            return Ok(InFlight {
                written: Vec::new(),
                out: Vec::new(),
                refresh: false,
            });
        }
        if let Err(e) = self.ensure() {
            if e.is_connection() {
                self.mode = Mode::Closed;
            }
            return Err(e);
        }
        Ok(self.write_first(reqs))
    }

    /// Writes the first pass of `reqs`, on a connection known to be open.
    fn write_first(&mut self, reqs: &[Req]) -> InFlight {
        let mut out: Vec<Option<Result<Value, Error>>> = reqs.iter().map(|_| None).collect();
        let pending = (0..reqs.len())
            .map(|idx| Pending {
                idx,
                via: Via::Slot,
                target: None,
                eval: false,
            })
            .collect();
        let (written, refresh) = self.write_pass(reqs, pending, &mut out);
        InFlight {
            written,
            out,
            refresh,
        }
    }

    /// The second half of [`run`](Self::run): reads what [`send`](Self::send)
    /// wrote for `reqs`, and makes the passes that follow (redirects, script
    /// loads) at once.
    pub(crate) fn recv(
        &mut self,
        reqs: &[Req],
        sent: InFlight,
    ) -> Result<Vec<Result<Value, Error>>, Error> {
        Ok(self
            .recv_applied(reqs, sent)?
            .into_iter()
            .map(|(r, shortfall)| match (r, shortfall) {
                (Ok(_), Some(why)) => Err(Error::NotDurable(why)),
                (r, _) => r,
            })
            .collect())
    }

    fn recv_applied(&mut self, reqs: &[Req], sent: InFlight) -> Result<Vec<Applied>, Error> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let InFlight {
            mut written,
            mut out,
            mut refresh,
        } = sent;
        let mut shortfall: Vec<Option<String>> = reqs.iter().map(|_| None).collect();
        // A redirect or a script fallback sends a command again; a few passes
        // settle any real situation, more means the Cluster is in flux.
        let mut passes = 0;
        let pending = loop {
            let (again, r) = self.read_pass(reqs, written, &mut out, &mut shortfall);
            passes += 1;
            if refresh || r {
                if let Mode::Cluster(c) = &mut self.mode {
                    c.stale = true;
                }
                if !again.is_empty() {
                    // Best effort: a failed refresh leaves the map stale and
                    // the commands go where they went before.
                    let _ = self.refresh();
                }
            }
            if again.is_empty() || passes == 5 {
                break again;
            }
            (written, refresh) = self.write_pass(reqs, again, &mut out);
        };
        for p in pending {
            out[p.idx] = Some(Err(Error::Protocol(
                "still redirected after 5 attempts: the Cluster is reconfiguring".into(),
            )));
        }
        let out: Vec<Applied> = out
            .into_iter()
            .zip(shortfall)
            .map(|(r, sf)| {
                (
                    r.unwrap_or_else(|| Err(Error::Protocol("no reply".into()))),
                    sf,
                )
            })
            .collect();
        // A batch that failed whole on broken connections is reported as one
        // failure, as a single connection's pipeline would be.
        if out
            .iter()
            .all(|r| matches!(r, (Err(e), _) if e.is_connection()))
        {
            if let Some((Err(e), _)) = out.into_iter().next() {
                return Err(e);
            }
            return Err(Error::Protocol("empty batch".into()));
        }
        Ok(out)
    }

    /// Writes one pass: groups the pending commands by node and writes
    /// every group's pipeline. Returns what was written, and whether the
    /// slot map should be refreshed.
    fn write_pass(
        &mut self,
        reqs: &[Req],
        pending: Vec<Pending>,
        out: &mut [Option<Result<Value, Error>>],
    ) -> (Vec<Written>, bool) {
        let ep = self.ep.clone();
        let mut refresh = false;
        // Group by node.
        let mut groups: BTreeMap<Option<(String, u16)>, Vec<Pending>> = BTreeMap::new();
        for p in pending {
            let node = match (&self.mode, &p.target) {
                (Mode::Cluster(_), Some(t)) => Some(t.clone()),
                (Mode::Cluster(c), None) => {
                    let slot = match &reqs[p.idx].route {
                        Some(r) => slot_of(r),
                        None => c.slots.first().map_or(0, |r| r.start),
                    };
                    match c.master_of(slot) {
                        Some(m) => Some(m.clone()),
                        None => {
                            out[p.idx] = Some(Err(Error::Redis(redis::RedisError::from((
                                ErrorKind::Server(ServerErrorKind::ClusterDown),
                                "no master serves the slot",
                                slot.to_string(),
                            )))));
                            refresh = true;
                            continue;
                        }
                    }
                }
                _ => None,
            };
            groups.entry(node).or_default().push(p);
        }
        // Write every group's pipeline.
        let mut sent: Vec<Written> = Vec::new();
        for (node_addr, items) in groups {
            let node = match self.node(&ep, node_addr.as_ref()) {
                Ok(n) => n,
                Err(e) => {
                    let msg = e.to_string();
                    for p in items {
                        out[p.idx] = Some(Err(clone_error(&e, &msg)));
                    }
                    refresh = true;
                    continue;
                }
            };
            let mut bytes = Vec::new();
            let mut writes = false;
            for p in &items {
                if p.via == (Via::Node { asking: true }) {
                    bytes.extend(redis::cmd("ASKING").get_packed_command());
                }
                let r = &reqs[p.idx];
                match (p.eval, r.as_eval()) {
                    (true, Some(c)) => bytes.extend(c.get_packed_command()),
                    _ => bytes.extend(r.cmd.get_packed_command()),
                }
                writes |= r.write;
            }
            let wait = writes && node.wait.is_some();
            if wait {
                if let Some(w) = &node.wait {
                    bytes.extend(w.get_packed_command());
                }
            }
            let c = ep.counters();
            c.round_trips.fetch_add(1, Ordering::Relaxed);
            c.commands.fetch_add(items.len() as u64, Ordering::Relaxed);
            match node.con.send_packed_command(&bytes) {
                Ok(()) => sent.push((node_addr, items, wait)),
                Err(e) => {
                    let e = Error::from(e);
                    let msg = e.to_string();
                    for p in items {
                        out[p.idx] = Some(Err(clone_error(&e, &msg)));
                    }
                    self.drop_node(node_addr.as_ref());
                    refresh = true;
                }
            }
        }
        (sent, refresh)
    }

    /// Reads one pass's replies. Returns the commands to send again, and
    /// whether the slot map should be refreshed.
    fn read_pass(
        &mut self,
        reqs: &[Req],
        sent: Vec<Written>,
        out: &mut [Option<Result<Value, Error>>],
        shortfall: &mut [Option<String>],
    ) -> (Vec<Pending>, bool) {
        let mut again = Vec::new();
        let mut refresh = false;
        // Read every reply.
        for (node_addr, items, wait) in sent {
            let node = match self.node_if_open(node_addr.as_ref()) {
                Some(n) => n,
                None => continue,
            };
            let mut broken: Option<Error> = None;
            let mut got: Vec<(Pending, Result<Value, Error>)> = Vec::with_capacity(items.len());
            for p in items {
                if let Some(e) = &broken {
                    let msg = e.to_string();
                    got.push((p, Err(clone_error(e, &msg))));
                    continue;
                }
                let mut read = || -> Result<Value, redis::RedisError> {
                    if p.via == (Via::Node { asking: true }) {
                        node.con.recv_response()?;
                    }
                    node.con.recv_response()
                };
                match read() {
                    Ok(v) => got.push((p, Ok(v))),
                    Err(e) => {
                        let e = Error::from(e);
                        let msg = e.to_string();
                        got.push((p, Err(clone_error(&e, &msg))));
                        broken = Some(e);
                    }
                }
            }
            // The durability verdict for the writes of this pipeline.
            let mut not_durable: Option<String> = None;
            if wait && broken.is_none() {
                match node.con.recv_response() {
                    Ok(v) => not_durable = durability_shortfall(&v, self.ep.inner.durability),
                    Err(e) => {
                        let e = Error::from(e);
                        not_durable = Some(format!("no answer to the durability wait: {e}"));
                        broken = Some(e);
                    }
                }
            }
            if broken.is_some() {
                self.drop_node(node_addr.as_ref());
                refresh = true;
            }
            for (mut p, r) in got {
                let r = match r {
                    Err(e) => Err(e),
                    Ok(v) => match server_error(&v) {
                        None => Ok(v),
                        Some(e) => {
                            match kind_of(&e) {
                                Some(ServerErrorKind::NoScript)
                                    if !p.eval && reqs[p.idx].script.is_some() =>
                                {
                                    p.eval = true;
                                    again.push(p);
                                    continue;
                                }
                                Some(ServerErrorKind::Moved)
                                    if matches!(self.mode, Mode::Single(_)) =>
                                {
                                    out[p.idx] = Some(Err(Error::Protocol(format!(
                                        "the server is a Cluster node but refused CLUSTER SLOTS to this user \
                                         (grant +cluster|slots): {e}"
                                    ))));
                                    continue;
                                }
                                Some(ServerErrorKind::Moved) => {
                                    p.target = redirect_target(&e);
                                    p.via = Via::Node { asking: false };
                                    refresh = true;
                                    again.push(p);
                                    continue;
                                }
                                Some(ServerErrorKind::Ask) => {
                                    p.target = redirect_target(&e);
                                    p.via = Via::Node { asking: true };
                                    again.push(p);
                                    continue;
                                }
                                Some(ServerErrorKind::ReadOnly)
                                    if matches!(self.mode, Mode::Cluster(_)) =>
                                {
                                    // A demoted master: the write did not run.
                                    p.target = None;
                                    p.via = Via::Slot;
                                    refresh = true;
                                    again.push(p);
                                    continue;
                                }
                                Some(
                                    ServerErrorKind::ClusterDown
                                    | ServerErrorKind::TryAgain
                                    | ServerErrorKind::MasterDown,
                                ) => {
                                    refresh = true;
                                }
                                _ => {}
                            }
                            Err(Error::Redis(e))
                        }
                    },
                };
                if r.is_ok() && reqs[p.idx].write {
                    shortfall[p.idx] = not_durable.clone();
                }
                out[p.idx] = Some(r);
            }
        }
        (again, refresh)
    }

    /// The open connection to `addr` (the single node for `None`), opening
    /// it if needed.
    fn node(&mut self, ep: &Endpoint, addr: Option<&(String, u16)>) -> Result<&mut Node, Error> {
        match (&mut self.mode, addr) {
            (Mode::Single(n), _) => Ok(n),
            (Mode::Cluster(c), Some(a)) => {
                if !c.nodes.contains_key(a) {
                    let node = ep.open_node(ep.info_for(&a.0, a.1))?;
                    c.nodes.insert(a.clone(), node);
                }
                c.nodes
                    .get_mut(a)
                    .ok_or_else(|| Error::Protocol("node vanished".into()))
            }
            _ => Err(Error::Protocol("not connected".into())),
        }
    }

    fn node_if_open(&mut self, addr: Option<&(String, u16)>) -> Option<&mut Node> {
        match (&mut self.mode, addr) {
            (Mode::Single(n), _) => Some(n),
            (Mode::Cluster(c), Some(a)) => c.nodes.get_mut(a),
            _ => None,
        }
    }

    fn drop_node(&mut self, addr: Option<&(String, u16)>) {
        match (&mut self.mode, addr) {
            (Mode::Cluster(c), Some(a)) => {
                c.nodes.remove(a);
                c.stale = true;
            }
            _ => self.mode = Mode::Closed,
        }
    }
}

/// A copy of an error for each of several requests (a `RedisError` is not
/// `Clone` when it holds an I/O error).
pub(crate) fn clone_error(e: &Error, msg: &str) -> Error {
    match e {
        Error::Redis(r) if r.is_io_error() || r.is_connection_dropped() => {
            Error::Redis(redis::RedisError::from(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                msg.to_owned(),
            )))
        }
        Error::Redis(r) if r.is_timeout() => Error::Redis(redis::RedisError::from(
            std::io::Error::new(std::io::ErrorKind::TimedOut, msg.to_owned()),
        )),
        Error::Redis(r) => Error::Redis(redis::RedisError::from((
            r.kind(),
            "redis error",
            msg.to_owned(),
        ))),
        Error::DurabilityUnavailable(s) => Error::DurabilityUnavailable(s.clone()),
        Error::NotDurable(s) => Error::NotDurable(s.clone()),
        Error::LayoutMismatch {
            namespace,
            recorded,
            configured,
        } => Error::LayoutMismatch {
            namespace: namespace.clone(),
            recorded: recorded.clone(),
            configured: configured.clone(),
        },
        _ => Error::Protocol(msg.to_owned()),
    }
}

/// Why the reply to `WAIT`/`WAITAOF` falls short of `d`, if it does.
fn durability_shortfall(v: &Value, d: Durability) -> Option<String> {
    match (d, v) {
        (Durability::Replicas(n), Value::Int(got)) => (*got < i64::from(n))
            .then(|| format!("{got} of {n} replicas acknowledged within the timeout")),
        (Durability::Fsync, Value::Array(a)) => match a.first() {
            Some(Value::Int(local)) if *local >= 1 => None,
            _ => Some("the local AOF fsync was not confirmed within the timeout".into()),
        },
        (_, Value::ServerError(e)) => Some(format!("the durability wait failed: {e}")),
        _ => Some(format!("unexpected reply to the durability wait: {v:?}")),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn crc16_and_slots_match_redis() {
        // The reference value of CRC16/XMODEM, and slots Redis's own
        // `CLUSTER KEYSLOT` gives (the cluster tests check more live).
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot_of("foo"), 12182);
        assert_eq!(
            slot_of("{user1000}.following"),
            slot_of("{user1000}.followers")
        );
        assert_eq!(slot_of("foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
        assert_eq!(slot_of("{tw:ns:3}:idx"), slot_of("{tw:ns:3}:s:42"));
    }

    #[test]
    fn durability_replies_are_judged() {
        assert!(durability_shortfall(&Value::Int(1), Durability::Replicas(1)).is_none());
        assert!(durability_shortfall(&Value::Int(0), Durability::Replicas(1)).is_some());
        let ok = Value::Array(vec![Value::Int(1), Value::Int(0)]);
        assert!(durability_shortfall(&ok, Durability::Fsync).is_none());
        let short = Value::Array(vec![Value::Int(0), Value::Int(0)]);
        assert!(durability_shortfall(&short, Durability::Fsync).is_some());
    }
}
