//! What producers and workers are told: the layout of a schedule, how
//! durable a write must be before it counts, how to reach Redis.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::Error;

/// The shard count when none is set: the library, the worker binary and the
/// workbench all use this one.
pub const DEFAULT_SHARDS: u32 = 8;

/// The largest payload accepted when none is set: 4 MiB.
pub const DEFAULT_MAX_PAYLOAD: usize = 4 << 20;

/// When a write counts as done: the moment Redis applied it, or once it is
/// also on disk or on replicas. Chosen per client ([`Config::durability`]).
///
/// Every operation that changes the schedule (schedule, cancel, and the
/// worker's claims, acks, lease extensions and reaps) waits for the chosen
/// durability before it reports success. What is guaranteed:
///
/// | Mode | Success means | Lost by |
/// |---|---|---|
/// | `Async` | the master applied it | a power loss (the AOF's last `everysec` fsync, up to ~2 s back), a failover (what the replica had not received yet) |
/// | `Fsync` | it is in the master's AOF on disk: `WAITAOF 1 0` after the writes on Redis 7.2+; on older servers the client checks that the node runs `appendonly yes` with `appendfsync always` (so Redis replies only after the fsync) and refuses to start otherwise | losing the disk; a failover to a replica that had not received it |
/// | `Replicas(n)` | at least `n` replicas received it (`WAIT n`) | losing the master and those `n` replicas together; a power loss of all of them before their fsync |
///
/// A write that Redis applied but could not confirm within
/// [`Config::durability_timeout`] fails with [`Error::NotDurable`]: it
/// may or may not survive. Retrying is safe (every operation is
/// idempotent). A node that cannot give the chosen durability at all fails
/// every operation with [`Error::DurabilityUnavailable`].
///
/// # Examples
///
/// ```
/// use schedulers_redis::{Config, Durability};
///
/// let config = Config::default().durability(Durability::Replicas(1));
/// assert_eq!(config.durability_mode(), Durability::Replicas(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Success once the master applied the write (the default).
    #[default]
    Async,
    /// Success once the write is fsynced to the master's AOF.
    Fsync,
    /// Success once this many replicas received the write.
    Replicas(u32),
}

/// `async`, `fsync` or `replicas:N`, as on the worker's command line.
impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Durability::Async => f.write_str("async"),
            Durability::Fsync => f.write_str("fsync"),
            Durability::Replicas(n) => write!(f, "replicas:{n}"),
        }
    }
}

/// Parses what [`Display`](fmt::Display) writes.
///
/// # Errors
///
/// [`Error::InvalidConfig`] for anything else.
///
/// # Examples
///
/// ```
/// use schedulers_redis::Durability;
///
/// assert_eq!("replicas:2".parse::<Durability>()?, Durability::Replicas(2));
/// assert_eq!(Durability::Fsync.to_string(), "fsync");
/// assert!("always".parse::<Durability>().is_err());
/// # Ok::<(), schedulers_redis::Error>(())
/// ```
impl FromStr for Durability {
    type Err = Error;

    fn from_str(s: &str) -> Result<Durability, Error> {
        match s {
            "async" => Ok(Durability::Async),
            "fsync" => Ok(Durability::Fsync),
            _ => s
                .strip_prefix("replicas:")
                .and_then(|n| n.parse().ok())
                .map(Durability::Replicas)
                .ok_or(Error::InvalidConfig(
                    "durability must be async, fsync or replicas:N",
                )),
        }
    }
}

/// The certificates of a TLS connection (`rediss://`), feature `tls`.
#[cfg(feature = "tls")]
#[derive(Clone, Default)]
pub struct Tls {
    pub(crate) root_ca_pem: Option<Vec<u8>>,
    pub(crate) client_cert_pem: Option<(Vec<u8>, Vec<u8>)>,
}

#[cfg(feature = "tls")]
impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("root_ca", &self.root_ca_pem.is_some())
            .field("client_cert", &self.client_cert_pem.is_some())
            .finish()
    }
}

#[cfg(feature = "tls")]
impl Tls {
    /// Trusts the system's root certificates (the default for `rediss://`).
    pub fn system_roots() -> Tls {
        Tls::default()
    }

    /// Trusts only this CA certificate (PEM), as for a server whose
    /// certificate a private CA signed.
    pub fn root_ca(mut self, pem: impl Into<Vec<u8>>) -> Tls {
        self.root_ca_pem = Some(pem.into());
        self
    }

    /// Presents this client certificate and key (PEM), for servers that
    /// require mutual TLS (`tls-auth-clients yes`).
    pub fn client_cert(mut self, cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Tls {
        self.client_cert_pem = Some((cert_pem.into(), key_pem.into()));
        self
    }
}

/// Where the schedule lives, how it is laid out, and how the client talks to
/// Redis.
///
/// The **layout** (namespace, shard count, slice length, tombstone retention,
/// outcome window, and the storage format version) is recorded in Redis by
/// the first client that uses the namespace; a producer or worker whose
/// layout differs gets [`Error::LayoutMismatch`] when it starts, never a
/// silent split of the schedule. The rest (timeouts, durability, payload
/// limit, retries, TLS) is each client's own.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers_redis::{Config, Durability};
///
/// let config = Config::default()
///     .namespace("billing")
///     .shards(16)
///     .slice(Duration::from_secs(60))
///     .tombstone_ttl(Duration::from_secs(3600))
///     .durability(Durability::Fsync)
///     .max_payload(1 << 20);
/// assert_eq!(config.shard_count(), 16);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) namespace: String,
    pub(crate) shards: u32,
    pub(crate) slice_ms: i64,
    pub(crate) tombstone_ms: i64,
    pub(crate) window_ms: i64,
    pub(crate) io_timeout: Duration,
    pub(crate) durability: Durability,
    pub(crate) durability_timeout: Duration,
    pub(crate) max_payload: usize,
    pub(crate) retry_for: Duration,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<Tls>,
}

impl Default for Config {
    /// Namespace `default`, [`DEFAULT_SHARDS`] shards, one-minute slices,
    /// tombstones kept one day, outcomes kept one minute, 5 s
    /// connect/read/write timeout, [`Durability::Async`] with a 2 s timeout,
    /// payloads up to [`DEFAULT_MAX_PAYLOAD`], producer calls retried for 10 s.
    fn default() -> Self {
        Config {
            namespace: "default".into(),
            shards: DEFAULT_SHARDS,
            slice_ms: 60_000,
            tombstone_ms: 86_400_000,
            window_ms: 60_000,
            io_timeout: Duration::from_secs(5),
            durability: Durability::Async,
            durability_timeout: Duration::from_secs(2),
            max_payload: DEFAULT_MAX_PAYLOAD,
            retry_for: Duration::from_secs(10),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Config {
    /// Sets the namespace (part of every key; separate namespaces are
    /// separate schedules). Part of the layout.
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = ns.into();
        self
    }

    /// Sets the number of shards (each is one hash tag, so one Cluster slot,
    /// and the unit of parallelism of one Redis core). Part of the layout.
    pub fn shards(mut self, n: u32) -> Self {
        self.shards = n;
        self
    }

    /// Sets the length of a time slice (whole milliseconds). Part of the
    /// layout.
    pub fn slice(mut self, d: Duration) -> Self {
        self.slice_ms = ms(d);
        self
    }

    /// Sets how long the id of a finished or cancelled job stays reserved
    /// (re-scheduling it is refused meanwhile): at least this long, at most
    /// an eighth longer, since tombstones are kept in time buckets that
    /// expire whole. Part of the layout. Default one day.
    pub fn tombstone_ttl(mut self, d: Duration) -> Self {
        self.tombstone_ms = ms(d);
        self
    }

    /// Sets how long the outcome of an ack, a failure or a cancel is kept so
    /// that repeating the call (after a lost reply) returns the original
    /// outcome: at least this long, at most twice. Part of the layout.
    /// Default one minute.
    pub fn outcome_window(mut self, d: Duration) -> Self {
        self.window_ms = ms(d);
        self
    }

    /// Sets the connect, read and write timeout of every connection.
    pub fn io_timeout(mut self, d: Duration) -> Self {
        self.io_timeout = d;
        self
    }

    /// Sets when a write counts as done (see [`Durability`]).
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// Sets how long a write waits for its durability (`WAIT`/`WAITAOF`
    /// timeout) before it fails with [`Error::NotDurable`].
    pub fn durability_timeout(mut self, d: Duration) -> Self {
        self.durability_timeout = d;
        self
    }

    /// Sets the largest payload a job may carry, in bytes of JSON; a larger
    /// one is refused with [`Error::PayloadTooLarge`] (the payload
    /// travels with every claim of the job).
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// Sets how long a producer call keeps retrying after a connection
    /// failure (a restart of Redis, a failover) before it reports the error.
    /// Every call is idempotent, so a retry never duplicates a job. Zero
    /// reports the first failure.
    pub fn retry_for(mut self, d: Duration) -> Self {
        self.retry_for = d;
        self
    }

    /// Sets the certificates for `rediss://` URLs (feature `tls`).
    /// Without it a `rediss://` connection trusts the system's roots.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The number of shards.
    pub fn shard_count(&self) -> u32 {
        self.shards
    }

    /// The durability chosen.
    pub fn durability_mode(&self) -> Durability {
        self.durability
    }

    /// The layout as recorded in Redis: one line, compared byte for byte.
    pub(crate) fn layout(&self) -> String {
        format!(
            "v={} shards={} slice_ms={} tombstone_ms={} outcome_ms={}",
            FORMAT_VERSION, self.shards, self.slice_ms, self.tombstone_ms, self.window_ms
        )
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.namespace.is_empty() || self.namespace.contains(['{', '}']) {
            return Err(Error::InvalidConfig(
                "namespace must be non-empty and free of braces",
            ));
        }
        if self.shards == 0 {
            return Err(Error::InvalidConfig("shards must be at least 1"));
        }
        if self.slice_ms < 1 {
            return Err(Error::InvalidConfig("slice must be at least 1 ms"));
        }
        if self.tombstone_ms < 1 {
            return Err(Error::InvalidConfig("tombstone ttl must be at least 1 ms"));
        }
        if self.window_ms < 1 {
            return Err(Error::InvalidConfig("outcome window must be at least 1 ms"));
        }
        if self.io_timeout.is_zero() {
            return Err(Error::InvalidConfig("io timeout must not be zero"));
        }
        if self.durability == Durability::Replicas(0) {
            return Err(Error::InvalidConfig(
                "Durability::Replicas wants at least one replica (use Async for none)",
            ));
        }
        if self.durability_timeout.is_zero() && self.durability != Durability::Async {
            return Err(Error::InvalidConfig("durability timeout must not be zero"));
        }
        if self.max_payload == 0 {
            return Err(Error::InvalidConfig("max payload must be at least 1 byte"));
        }
        Ok(())
    }
}

/// The version of the storage format (keys, records, scripts). 2: tombstones
/// as fingerprints in time-bucketed sets, records carry the fingerprint and
/// the schedule token, outcomes logged for idempotent repeats. 3: records
/// carry a fire's first claim and the schedule beyond the period (calendar,
/// missed-run and panic policies).
pub(crate) const FORMAT_VERSION: u32 = 3;
