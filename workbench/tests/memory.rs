//! The memory figure is right: a reference subject that holds exactly N
//! bytes per pending timer (`ballast-N`) is reported at N ± 2 B, measured
//! the way every subject is (a sweep, memory read in a fresh child process
//! of the `workbench` binary) and in process. The first version reported
//! 16 B too little for every subject: the runner's own 16-byte fire slots
//! were freed between the two readings.
//!
//! One test per file: an in-process reading must not see other tests'
//! allocations.

use std::path::PathBuf;

use workbench::record::Metric;
use workbench::runner::{RunContext, MEMORY_PROBE_EXE};
use workbench::spec::Workload;
use workbench::subjects;

const SWEEP: &str = r#"
    name = "memory-check"
    description = "memory per pending timer at 1e5 and 1e6"
    seed = 21
    [sweep]
    sizes = [100000, 1000000]
    delay = { dist = "uniform", min = "1h", max = "2h" }
"#;

#[test]
fn a_subject_holding_n_bytes_per_timer_is_reported_at_n() {
    let w = Workload::parse(SWEEP).unwrap();
    let ctx = RunContext::quiet(0.0);
    let measure = |n: usize| {
        let s = subjects::find(&format!("ballast-{n}")).unwrap();
        let mut r = (s.runner)().unwrap();
        r.run(&w, &ctx)
            .unwrap()
            .into_iter()
            .filter(|m| m.metric == Metric::Memory)
            .map(|m| (m.size.unwrap(), m.value))
            .collect::<Vec<_>>()
    };
    // In process first (no probe binary set yet), then in fresh children.
    for n in [24, 64] {
        for (size, b) in measure(n) {
            assert!(
                (b - n as f64).abs() <= 2.0,
                "in process, ballast-{n} @ {size}: {b} B/timer"
            );
        }
    }
    MEMORY_PROBE_EXE
        .set(PathBuf::from(env!("CARGO_BIN_EXE_workbench")))
        .unwrap();
    for n in [16, 56, 128] {
        for (size, b) in measure(n) {
            assert!(
                (b - n as f64).abs() <= 2.0,
                "child, ballast-{n} @ {size}: {b} B/timer"
            );
        }
    }
}
