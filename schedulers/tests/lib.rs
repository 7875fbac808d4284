//! Integration tests, built as one binary.

// Test helpers are `pub` so the suite macro can reach them from any module.
#![allow(unreachable_pub)]

mod conformance;
mod heap_timer;
mod hierarchical;
mod ported_kafka;
mod ported_jdk_timer;
mod ported_jsr166;
mod smoke;
mod thread_pool;
#[cfg(feature = "redis")]
mod distributed;
