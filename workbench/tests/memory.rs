//! The memory figure is right: a reference subject that holds exactly N
//! bytes per pending timer (`ballast-N`) is reported at N ± 2 B (at 1e3,
//! where the two partly filled pages at either end are 8 B per timer,
//! ± 10 B), measured the way every subject is (a sweep, memory read in a
//! fresh child process of the `workbench` binary), at 1e3, 1e5 and 1e6
//! pending. The first version reported 16 B too little for every subject:
//! the runner's own 16-byte fire slots were freed between the two readings.
//!
//! One test in this file, so that nothing else runs in its process.

use std::path::PathBuf;

use workbench::record::Metric;
use workbench::runner::{RunContext, MEMORY_PROBE_EXE};
use workbench::spec::Workload;
use workbench::subjects;

const SWEEP: &str = r#"
    name = "memory-check"
    description = "memory per pending timer at 1e3, 1e5 and 1e6"
    seed = 21
    [sweep]
    sizes = [1000, 100000, 1000000]
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
    // Memory is read in a fresh child process of the binary, as in every
    // run of the workbench (in process, memory freed by earlier runs is
    // reused and hides the cost).
    MEMORY_PROBE_EXE
        .set(PathBuf::from(env!("CARGO_BIN_EXE_workbench")))
        .unwrap();
    for n in [16, 24, 56, 64, 128] {
        for (size, b) in measure(n) {
            // ± 2 B, plus the two partly filled 4 KiB pages at either end
            // spread over the timers (8 B at 1e3).
            let tolerance = 2.0 + 2.0 * 4096.0 / size as f64;
            assert!(
                (b - n as f64).abs() <= tolerance,
                "ballast-{n} @ {size}: {b} B/timer"
            );
        }
    }
}
