//! Criterion benches live in `benches/`.
