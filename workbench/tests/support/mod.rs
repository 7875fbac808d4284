//! What the end-to-end tests of the peers share: the skip rule (a missing
//! server or runtime fails under CI), the figures of a run by metric, and
//! the tiny calendar workload.

#![allow(dead_code)] // each test crate uses its part

use std::collections::HashMap;

use workbench::record::{Measurement, Metric};

/// 30 schedules every second watched for 2 s: 60 instants.
pub(crate) const CALENDAR: &str = r#"
    name = "tiny-calendar"
    description = "30 cron schedules every second, 2 s"
    models = "a test"
    seed = 0
    [calendar]
    schedules = 30
    every = "1s"
    run_for = "2s"
    threads = 2
"#;

/// Says why (part of) a test does not run, or fails under CI (`CI` set),
/// where `scripts/test` installs what the tests need.
pub(crate) fn skip(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "under CI every server and runtime the tests need must be installed: {why}"
    );
    // The real stderr, so the skip shows in the test output.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("SKIPPED: {why}\n").as_bytes(),
    );
}

/// A run's figures without a size, by metric.
pub(crate) fn figures(ms: &[Measurement]) -> HashMap<Metric, f64> {
    ms.iter()
        .filter(|m| m.size.is_none())
        .map(|m| (m.metric, m.value))
        .collect()
}

/// One figure, or a panic naming what there is.
pub(crate) fn get(m: &HashMap<Metric, f64>, metric: Metric) -> f64 {
    *m.get(&metric)
        .unwrap_or_else(|| panic!("no {metric} in {m:?}"))
}
