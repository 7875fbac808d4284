//! The workloads shipped in `workbench/workloads/`, compiled in so the
//! binary runs from anywhere; `--spec FILE` adds a user's own.

use crate::spec::{SpecError, Workload};

/// (file name, TOML text) of every shipped spec, in the suite's order.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "ack-timeout.toml",
        include_str!("../workloads/ack-timeout.toml"),
    ),
    (
        "ack-batch.toml",
        include_str!("../workloads/ack-batch.toml"),
    ),
    (
        "fire-lateness.toml",
        include_str!("../workloads/fire-lateness.toml"),
    ),
    ("burst.toml", include_str!("../workloads/burst.toml")),
    (
        "keepalive.toml",
        include_str!("../workloads/keepalive.toml"),
    ),
    (
        "periodic-fixed-rate.toml",
        include_str!("../workloads/periodic-fixed-rate.toml"),
    ),
    (
        "periodic-fixed-delay.toml",
        include_str!("../workloads/periodic-fixed-delay.toml"),
    ),
    ("scale.toml", include_str!("../workloads/scale.toml")),
    (
        "contention.toml",
        include_str!("../workloads/contention.toml"),
    ),
    ("idle.toml", include_str!("../workloads/idle.toml")),
    (
        "distributed.toml",
        include_str!("../workloads/distributed.toml"),
    ),
    ("calendar.toml", include_str!("../workloads/calendar.toml")),
];

/// Parses every shipped spec.
///
/// # Errors
///
/// The first [`SpecError`], naming the file and the field.
pub fn shipped() -> Result<Vec<Workload>, SpecError> {
    SHIPPED
        .iter()
        .map(|(file, text)| {
            Workload::parse(text).map_err(|mut e| {
                e.source = Some(format!("workbench/workloads/{file}"));
                e
            })
        })
        .collect()
}

#[cfg(test)]
mod test {
    #[test]
    fn every_shipped_spec_parses_and_is_named_after_its_file() {
        let all = super::shipped().unwrap();
        for (w, (file, _)) in all.iter().zip(super::SHIPPED) {
            assert_eq!(format!("{}.toml", w.name), *file);
            assert!(!w.description.is_empty() && !w.models.is_empty());
            let q = w.quick();
            q.check().unwrap();
        }
    }
}
