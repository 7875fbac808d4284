//! The crate's error type.

use std::fmt;

/// Why an operation of the scheduler failed.
///
/// A plain enum, unlike the opaque `schedulers::Error` of the in-process
/// schedulers: the causes are few and callers branch on them (an id already
/// taken is business as usual for an idempotent producer, a lost connection
/// is not).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedulers_redis::{Config, Error, Job, RedisScheduler};
///
/// let sched = RedisScheduler::connect("redis://127.0.0.1:6379/", Config::default())?;
/// let job = Job::new("invoice-17", "send")?.after(Duration::from_secs(60));
/// match sched.schedule(&job) {
///     Ok(due) => println!("due at {due} ms"),
///     Err(Error::AlreadyScheduled(id)) => println!("{id} is already pending"),
///     Err(e) => return Err(e),
/// }
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Talking to Redis failed (connection refused or dropped, timeout, or a
    /// server error such as OOM under `maxmemory`). The operation may or may
    /// not have been applied; every operation is safe to retry (a retried
    /// schedule that had been applied reports [`Error::AlreadyScheduled`]).
    /// A broken connection is re-opened by the next call; a producer retries
    /// for [`Config::retry_for`](crate::Config::retry_for) first.
    Redis(redis::RedisError),
    /// A payload could not be serialised or deserialised.
    Payload(serde_json::Error),
    /// A job with this id is pending, running or dead-lettered: the id is the
    /// idempotency key, so the second schedule is refused.
    AlreadyScheduled(String),
    /// The id belongs to a job that finished or was cancelled less than the
    /// tombstone time-to-live ago; it cannot be reused until then.
    Tombstoned(String),
    /// A job id is empty or longer than [`MAX_ID_LEN`](crate::MAX_ID_LEN) bytes, or a
    /// kind is empty.
    InvalidId(String),
    /// A fixed-rate job was given a period of zero.
    ZeroPeriod,
    /// A calendar was refused: [`MissedRuns::Delay`](crate::calendar::MissedRuns::Delay)
    /// on a calendar job (whose grid is the wall clock's and cannot move),
    /// or, converted with `?`, a bad cron expression or unknown zone from
    /// [`Calendar::parse_in`](crate::calendar::Calendar::parse_in). A worker
    /// that cannot read a stored calendar back (its tz database lacks the
    /// zone) fails the run with this error's text.
    Calendar(schedulers::calendar::CalendarError),
    /// A job's schedule does not hold together; the message says how: a
    /// missed-run or panic policy on a one-shot job, a calendar job given
    /// another first due time than its next fire, a time zone without an
    /// IANA name.
    InvalidSchedule(&'static str),
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
    /// A payload is larger than [`Config::max_payload`](crate::Config::max_payload).
    PayloadTooLarge {
        /// The job id.
        id: String,
        /// The payload's size in bytes (JSON).
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Redis applied a write but did not confirm the chosen
    /// [`Durability`](crate::Durability) in time (a replica missing, an fsync
    /// slower than the timeout): the write may be lost by a power loss or a
    /// failover. Retrying is safe.
    NotDurable(String),
    /// A Redis node cannot give the chosen durability at all (no `WAITAOF`
    /// and not `appendfsync always`, or its configuration cannot be read).
    DurabilityUnavailable(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Redis(e) => write!(f, "redis: {e}"),
            Error::Payload(e) => write!(f, "payload: {e}"),
            Error::AlreadyScheduled(id) => write!(f, "job {id:?} is already scheduled"),
            Error::Tombstoned(id) => {
                write!(
                    f,
                    "job {id:?} finished or was cancelled recently; its id is still reserved"
                )
            }
            Error::InvalidId(why) => write!(f, "invalid job id or kind: {why}"),
            Error::ZeroPeriod => f.write_str("the period of a fixed-rate job must not be zero"),
            Error::Calendar(e) => write!(f, "calendar: {e}"),
            Error::InvalidSchedule(why) => write!(f, "invalid schedule: {why}"),
            Error::DelayOverflow => {
                f.write_str("the due time does not fit in i64 milliseconds")
            }
            Error::InvalidConfig(why) => write!(f, "invalid configuration: {why}"),
            Error::Protocol(why) => write!(f, "unexpected reply from redis: {why}"),
            Error::Shutdown => f.write_str("the worker is shut down"),
            Error::LayoutMismatch {
                namespace,
                recorded,
                configured,
            } => write!(
                f,
                "namespace {namespace:?} is laid out as `{recorded}` in Redis, this client as `{configured}`"
            ),
            Error::PayloadTooLarge { id, bytes, limit } => write!(
                f,
                "the payload of job {id:?} is {bytes} bytes, more than the limit of {limit}"
            ),
            Error::NotDurable(why) => write!(f, "write applied but not confirmed durable: {why}"),
            Error::DurabilityUnavailable(why) => {
                write!(f, "the chosen durability is not available: {why}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(e) => Some(e),
            Error::Payload(e) => Some(e),
            Error::Calendar(e) => Some(e),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        Error::Redis(e)
    }
}

impl From<schedulers::calendar::CalendarError> for Error {
    fn from(e: schedulers::calendar::CalendarError) -> Self {
        Error::Calendar(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Payload(e)
    }
}

impl Error {
    /// True when the connection to Redis is unusable and must be re-opened.
    pub(crate) fn is_connection(&self) -> bool {
        match self {
            Error::Redis(e) => e.is_io_error() || e.is_connection_dropped() || e.is_timeout(),
            _ => false,
        }
    }

    /// True when the same call may succeed later: the connection failed, the
    /// server is loading or failing over, or a write was not confirmed
    /// durable. Every operation is idempotent, so such calls are retried.
    pub(crate) fn is_transient(&self) -> bool {
        use redis::{ErrorKind, ServerErrorKind as S};
        match self {
            Error::NotDurable(_) => true,
            Error::Redis(e) => {
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
