//! Integration tests, built as one binary.

// Test helpers are `pub` so the suite macro can reach them from any module.
#![allow(unreachable_pub)]

mod async_handles;
mod builders;
mod conformance;
#[cfg(all(feature = "rayon", feature = "tokio"))]
mod executors;
mod hashed_wheel;
mod heap_timer;
mod hierarchical;
mod ported_jdk_timer;
mod ported_jsr166;
mod ported_kafka;
mod ported_netty;
mod smoke;
mod thread_pool;
