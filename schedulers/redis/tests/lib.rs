//! Tests of the scheduler against a real `redis-server`, built as one
//! binary.
//!
//! Each single-node test starts its own server (free loopback port, AOF on,
//! temp dir, killed at the end) and, for the fault tests, worker processes
//! of the `schedulers-redis-worker` binary. The fault scenarios run a second
//! time on a Redis Cluster of 3 masters with a replica each, started once
//! per test binary by `schedulers-redis-worker cluster` (which kills it when
//! this process exits, however it exits). Workers append every event to a
//! history file (times from Redis `TIME`); [`support::check`] decides each test from
//! the histories. Without `redis-server` the tests print why and pass, except
//! under CI (`CI` set), where they fail.
//!
//! They wait in real time, with generous bounds: every decision they check
//! was made on Redis's clock and recorded in the histories.

// The helpers in `support` are `pub` for every test module.
#![allow(unreachable_pub)]

// The scenario macro first: modules see macros defined before them.
#[macro_use]
mod support;

mod api;
mod calendar;
mod checker;
mod cluster;
mod faults;
mod figures;
mod layout;
mod power_loss;
mod tls;
