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
    /// A broken connection is re-opened by the next call.
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
}
