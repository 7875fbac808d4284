//! Every connection to Redis is made here: opening, timeouts, reconnecting
//! after an error, sending scripts (by SHA, reloading them on `NOSCRIPT`),
//! pipelining, the wake-up subscription, and counting round trips.
//!
//! One place on purpose: a Cluster- or TLS-aware connection replaces
//! [`Endpoint`] and the two connection types without touching the scripts,
//! the client or the worker.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::{ErrorKind, ServerErrorKind, Value};

use super::DistError;

/// Round trips and commands sent, for [`Worker::stats`](super::Worker::stats)
/// and the load benchmark.
#[derive(Debug, Default)]
pub(crate) struct IoCounters {
    pub(crate) round_trips: AtomicU64,
    pub(crate) commands: AtomicU64,
}

/// Where Redis is and how to reach it; hands out connections.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    client: redis::Client,
    timeout: Duration,
    counters: Arc<IoCounters>,
}

impl Endpoint {
    /// Parses `url`; connects lazily.
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Endpoint, DistError> {
        Ok(Endpoint {
            client: redis::Client::open(url)?,
            timeout,
            counters: Arc::default(),
        })
    }

    /// A connection that opens on first use (and after an error).
    pub(crate) fn conn(&self) -> Conn {
        Conn {
            endpoint: self.clone(),
            con: None,
        }
    }

    /// The counters shared by every connection of this endpoint.
    pub(crate) fn counters(&self) -> &IoCounters {
        &self.counters
    }

    fn open(&self) -> Result<redis::Connection, DistError> {
        let con = self.client.get_connection_with_timeout(self.timeout)?;
        con.set_read_timeout(Some(self.timeout))?;
        con.set_write_timeout(Some(self.timeout))?;
        Ok(con)
    }

    /// Subscribes to `channels` on a connection of its own and reports what
    /// it hears to `on` until `on` returns false (`Ok`) or the connection
    /// fails (`Err`). `on` hears [`Heard::Subscribed`] once the subscription
    /// stands, then every message, and [`Heard::Quiet`] after each `wait`
    /// without one (so the caller can look at its stop flag).
    pub(crate) fn listen(
        &self,
        channels: &[String],
        wait: Duration,
        mut on: impl FnMut(Heard) -> bool,
    ) -> Result<(), DistError> {
        let mut con = self.open()?;
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

/// One script call: the script (to reload it on `NOSCRIPT`) and its
/// `EVALSHA` command.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) script: &'static redis::Script,
    pub(crate) cmd: redis::Cmd,
}

/// A connection that re-opens itself after an I/O error.
pub(crate) struct Conn {
    endpoint: Endpoint,
    con: Option<redis::Connection>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("connected", &self.con.is_some())
            .finish_non_exhaustive()
    }
}

impl Conn {
    /// Runs `f` (one round trip of `commands` commands) on the connection,
    /// opening it if needed; drops the connection after a connection-level
    /// error so the next call reconnects.
    fn with<T>(
        &mut self,
        commands: usize,
        f: impl FnOnce(&mut redis::Connection) -> Result<T, DistError>,
    ) -> Result<T, DistError> {
        if self.con.is_none() {
            self.con = Some(self.endpoint.open()?);
        }
        let con = self
            .con
            .as_mut()
            .ok_or_else(|| DistError::Protocol("no connection".into()))?;
        let c = self.endpoint.counters();
        c.round_trips.fetch_add(1, Ordering::Relaxed);
        c.commands.fetch_add(commands as u64, Ordering::Relaxed);
        let r = f(con);
        if let Err(e) = &r {
            if e.is_connection() {
                self.con = None;
            }
        }
        r
    }

    /// Sends one plain command.
    pub(crate) fn query<T: redis::FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
    ) -> Result<T, DistError> {
        self.with(1, |c| Ok(cmd.query(c)?))
    }

    /// Sends plain commands in one round trip.
    pub(crate) fn pipeline<T: redis::FromRedisValue>(
        &mut self,
        pipe: &redis::Pipeline,
    ) -> Result<T, DistError> {
        self.with(pipe.len(), |c| Ok(pipe.query(c)?))
    }

    /// Runs one script call.
    pub(crate) fn call(&mut self, call: &Call) -> Result<Value, DistError> {
        let mut r = self.calls(std::slice::from_ref(call))?;
        r.pop()
            .unwrap_or_else(|| Err(DistError::Protocol("empty reply".into())))
    }

    /// Runs script calls in one round trip (a pipeline); one result per
    /// call, in order. A call refused with `NOSCRIPT` (a restarted or
    /// flushed server) did not run: its script is loaded and the call sent
    /// again. The outer error is a failure of the connection, after which
    /// any subset of the calls may have run.
    pub(crate) fn calls(
        &mut self,
        calls: &[Call],
    ) -> Result<Vec<Result<Value, DistError>>, DistError> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for c in calls {
            pipe.add_command(c.cmd.clone());
        }
        pipe.ignore_errors();
        let replies: Vec<redis::RedisResult<Value>> = self.pipeline(&pipe)?;
        if replies.len() != calls.len() {
            return Err(DistError::Protocol(format!(
                "{} replies to {} calls",
                replies.len(),
                calls.len()
            )));
        }
        let mut out = Vec::with_capacity(calls.len());
        let mut loaded: Vec<&str> = Vec::new();
        for (call, reply) in calls.iter().zip(replies) {
            out.push(match reply {
                Ok(v) => Ok(v),
                Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                    let hash = call.script.get_hash();
                    if !loaded.contains(&hash) {
                        self.with(1, |c| Ok(call.script.prepare_invoke().load(c)?))?;
                        loaded.push(hash);
                    }
                    self.with(1, |c| Ok(call.cmd.query::<Value>(c)?))
                }
                Err(e) => Err(e.into()),
            });
        }
        Ok(out)
    }
}
