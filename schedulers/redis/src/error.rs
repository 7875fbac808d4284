//! The error type of the distributed scheduler.

use std::fmt;

/// Why an operation of the distributed scheduler failed.
///
/// Unlike [`crate::Error`], this one is a plain enum: the causes are few and
/// callers branch on them (an id already taken is business as usual for an
/// idempotent producer, a lost connection is not).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedulers::distributed::{Config, DistError, Job, RedisScheduler};
///
/// let sched = RedisScheduler::connect("redis://127.0.0.1:6379/", Config::default())?;
/// let job = Job::new("invoice-17", "send")?.after(Duration::from_secs(60));
/// match sched.schedule(&job) {
///     Ok(due) => println!("due at {due} ms"),
///     Err(DistError::AlreadyScheduled(id)) => println!("{id} is already pending"),
///     Err(e) => return Err(e),
/// }
/// # Ok::<(), DistError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DistError {
    /// Talking to Redis failed (connection refused or dropped, timeout, or a
    /// server error such as OOM under `maxmemory`). The operation may or may
    /// not have been applied; every operation is safe to retry (a retried
    /// schedule that had been applied reports [`DistError::AlreadyScheduled`]).
    /// A broken connection is re-opened by the next call; a producer retries
    /// for [`Config::retry_for`](super::Config::retry_for) first.
    Redis(redis::RedisError),
    /// A payload could not be serialised or deserialised.
    Payload(serde_json::Error),
    /// A job with this id is pending, running or dead-lettered: the id is the
    /// idempotency key, so the second schedule is refused.
    AlreadyScheduled(String),
    /// The id belongs to a job that finished or was cancelled less than the
    /// tombstone time-to-live ago; it cannot be reused until then.
    Tombstoned(String),
    /// A job id is empty or longer than [`MAX_ID_LEN`](super::MAX_ID_LEN) bytes, or a
    /// kind is empty.
    InvalidId(String),
    /// A fixed-rate job was given a period of zero.
    ZeroPeriod,
    /// A delay or time does not fit in milliseconds since the epoch (i64).
    DelayOverflow,
    /// A configuration value is out of range; the message says which.
    InvalidConfig(&'static str),
    /// Redis answered something the scripts never return (a different
    /// version of the scripts, or keys written by something else).
    Protocol(String),
    /// The worker was shut down and takes no new work.
    Shutdown,
    /// The namespace was laid out differently by the client that used it
    /// first (another shard count, slice, tombstone retention, outcome
    /// window or format version): using it would split the schedule.
    LayoutMismatch {
        /// The namespace.
        namespace: String,
        /// The layout recorded in Redis.
        recorded: String,
        /// This client's layout.
        configured: String,
    },
    /// A payload is larger than [`Config::max_payload`](super::Config::max_payload).
    PayloadTooLarge {
        /// The job id.
        id: String,
        /// The payload's size in bytes (JSON).
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Redis applied a write but did not confirm the chosen
    /// [`Durability`](super::Durability) in time (a replica missing, an fsync
    /// slower than the timeout): the write may be lost by a power loss or a
    /// failover. Retrying is safe.
    NotDurable(String),
    /// A Redis node cannot give the chosen durability at all (no `WAITAOF`
    /// and not `appendfsync always`, or its configuration cannot be read).
    DurabilityUnavailable(String),
    /// A throwaway server of [`LocalRedis`](super::LocalRedis) exited as it
    /// started. The message gives its exit status and the last lines of its
    /// log (a setting it refused, say), or, when it wrote no log, asks
    /// whether the disk that holds its directory is full.
    LocalServer(String),
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Redis(e) => write!(f, "redis: {e}"),
            DistError::Payload(e) => write!(f, "payload: {e}"),
            DistError::AlreadyScheduled(id) => write!(f, "job {id:?} is already scheduled"),
            DistError::Tombstoned(id) => {
                write!(
                    f,
                    "job {id:?} finished or was cancelled recently; its id is still reserved"
                )
            }
            DistError::InvalidId(why) => write!(f, "invalid job id or kind: {why}"),
            DistError::ZeroPeriod => f.write_str("the period of a fixed-rate job must not be zero"),
            DistError::DelayOverflow => {
                f.write_str("the due time does not fit in i64 milliseconds")
            }
            DistError::InvalidConfig(why) => write!(f, "invalid configuration: {why}"),
            DistError::Protocol(why) => write!(f, "unexpected reply from redis: {why}"),
            DistError::Shutdown => f.write_str("the worker is shut down"),
            DistError::LayoutMismatch {
                namespace,
                recorded,
                configured,
            } => write!(
                f,
                "namespace {namespace:?} is laid out as `{recorded}` in Redis, this client as `{configured}`"
            ),
            DistError::PayloadTooLarge { id, bytes, limit } => write!(
                f,
                "the payload of job {id:?} is {bytes} bytes, more than the limit of {limit}"
            ),
            DistError::NotDurable(why) => write!(f, "write applied but not confirmed durable: {why}"),
            DistError::DurabilityUnavailable(why) => {
                write!(f, "the chosen durability is not available: {why}")
            }
            DistError::LocalServer(why) => write!(f, "the local redis-server stopped: {why}"),
        }
    }
}

impl std::error::Error for DistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DistError::Redis(e) => Some(e),
            DistError::Payload(e) => Some(e),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for DistError {
    fn from(e: redis::RedisError) -> Self {
        DistError::Redis(e)
    }
}

impl From<serde_json::Error> for DistError {
    fn from(e: serde_json::Error) -> Self {
        DistError::Payload(e)
    }
}

impl DistError {
    /// True when the connection to Redis is unusable and must be re-opened.
    pub(crate) fn is_connection(&self) -> bool {
        match self {
            DistError::Redis(e) => e.is_io_error() || e.is_connection_dropped() || e.is_timeout(),
            _ => false,
        }
    }

    /// True when the same call may succeed later: the connection failed, the
    /// server is loading or failing over, or a write was not confirmed
    /// durable. Every operation is idempotent, so such calls are retried.
    pub(crate) fn is_transient(&self) -> bool {
        use redis::{ErrorKind, ServerErrorKind as S};
        match self {
            DistError::NotDurable(_) => true,
            DistError::Redis(e) => {
                self.is_connection()
                    || matches!(
                        e.kind(),
                        ErrorKind::Server(
                            S::TryAgain
                                | S::ClusterDown
                                | S::MasterDown
                                | S::BusyLoading
                                | S::ReadOnly
                                | S::Moved
                                | S::Ask
                        )
                    )
            }
            _ => false,
        }
    }
}
