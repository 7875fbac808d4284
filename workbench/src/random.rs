//! The workbench's seeded random numbers and the duration distributions
//! drawn from them.
//!
//! Every random choice of a workload (arrival gaps, delays, which timers are
//! cancelled and when, the order of a sweep's cancels) comes from an [`Rng`]
//! seeded by the workload's `seed` and a stream number, so a seed means the
//! same operations on every run and every subject. The Java harness
//! (`workbench/java/Dist.java`) is a bit-exact port: [`golden`] lists draws
//! that both sides must reproduce, checked by this module's tests (Rust) and
//! by `tests/java_peers.rs` (Java).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::spec::{Dur, SpecError};

/// The workbench's random numbers: SplitMix64, fixed forever so that a seed
/// means the same operations in every version of every dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`, with a `stream` number to draw independent
    /// sequences from one seed.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// A random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        self.shuffle(n, |i, j| v.swap(i, j));
        v
    }

    /// Shuffles `n` items kept anywhere (Fisher–Yates): `swap(i, j)`
    /// exchanges items `i` and `j`.
    pub fn shuffle(&mut self, n: usize, mut swap: impl FnMut(usize, usize)) {
        for i in (1..n).rev() {
            swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// A probability distribution of durations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Dist {
    /// Always `value`.
    Fixed {
        /// The duration.
        value: Dur,
    },
    /// Uniform over `min..=max`.
    Uniform {
        /// Lower bound.
        min: Dur,
        /// Upper bound.
        max: Dur,
    },
    /// Exponential with the given mean (memoryless gaps).
    Exponential {
        /// The mean.
        mean: Dur,
    },
    /// Log-normal: `median * exp(sigma * N(0,1))` (heavy right tail).
    Lognormal {
        /// The median.
        median: Dur,
        /// Standard deviation of the logarithm.
        sigma: f64,
    },
}

impl Dist {
    /// Draws one duration, in nanoseconds.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let ns = match *self {
            Dist::Fixed { value } => value.nanos() as f64,
            Dist::Uniform { min, max } => {
                let (a, b) = (min.nanos() as f64, max.nanos() as f64);
                a + (b - a) * rng.unit()
            }
            Dist::Exponential { mean } => -(mean.nanos() as f64) * (1.0 - rng.unit()).ln(),
            Dist::Lognormal { median, sigma } => {
                median.nanos() as f64 * (sigma * rng.normal()).exp()
            }
        };
        if ns.is_finite() && ns > 0.0 {
            ns.min(u64::MAX as f64 / 2.0) as u64
        } else {
            0
        }
    }

    /// The largest value it can take, or a high quantile for unbounded ones
    /// (mean × 20, median × e^(5σ)); used to bound how long a run waits.
    pub fn bound(&self) -> u64 {
        match *self {
            Dist::Fixed { value } => value.nanos(),
            Dist::Uniform { max, .. } => max.nanos(),
            Dist::Exponential { mean } => mean.nanos().saturating_mul(20),
            Dist::Lognormal { median, sigma } => {
                (median.nanos() as f64 * (5.0 * sigma).exp()) as u64
            }
        }
    }

    pub(crate) fn scaled(self, f: f64) -> Dist {
        match self {
            Dist::Fixed { value } => Dist::Fixed {
                value: value.scaled(f),
            },
            Dist::Uniform { min, max } => Dist::Uniform {
                min: min.scaled(f),
                max: max.scaled(f),
            },
            Dist::Exponential { mean } => Dist::Exponential {
                mean: mean.scaled(f),
            },
            Dist::Lognormal { median, sigma } => Dist::Lognormal {
                median: median.scaled(f),
                sigma,
            },
        }
    }

    pub(crate) fn check(&self, field: &str) -> Result<(), SpecError> {
        match *self {
            Dist::Uniform { min, max } if min > max => Err(SpecError::field(
                format!("{field}.min"),
                "must not exceed max",
            )),
            Dist::Exponential { mean } if mean.0.is_zero() => Err(SpecError::field(
                format!("{field}.mean"),
                "must be above zero",
            )),
            Dist::Lognormal { sigma, .. } if !(sigma.is_finite() && sigma >= 0.0) => Err(
                SpecError::field(format!("{field}.sigma"), "must be a finite number >= 0"),
            ),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Fixed { value } => write!(f, "{value}"),
            Dist::Uniform { min, max } => write!(f, "uniform {min}–{max}"),
            Dist::Exponential { mean } => write!(f, "exponential, mean {mean}"),
            Dist::Lognormal { median, sigma } => {
                write!(f, "log-normal, median {median}, σ {sigma}")
            }
        }
    }
}

/// Draws that pin the generator and the distributions down: the same
/// numbers in Rust and in the Java harness, on every platform (integers and
/// the bits of the `f64`s, so nothing depends on printing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Golden {
    /// `Rng::new(42, 7)`: four raw 64-bit draws.
    pub raw: Vec<u64>,
    /// Then three `unit()` draws, as `f64::to_bits`.
    pub unit_bits: Vec<u64>,
    /// Then three `below(1000)`.
    pub below: Vec<u64>,
    /// Then `permutation(10)`.
    pub permutation: Vec<usize>,
    /// `Rng::new(4, 1)`: five draws of each shipped distribution, ns:
    /// fixed 1 ms, uniform 10–30 s, exponential mean 12 s, log-normal
    /// median 50 ms σ 0.7.
    pub samples: Vec<u64>,
}

/// The draws of [`Golden`], computed by this implementation.
pub fn golden() -> Golden {
    let mut r = Rng::new(42, 7);
    let raw = (0..4).map(|_| r.next_u64()).collect();
    let unit_bits = (0..3).map(|_| r.unit().to_bits()).collect();
    let below = (0..3).map(|_| r.below(1000)).collect();
    let permutation = r.permutation(10);
    let ms = |x: u64| Dur(std::time::Duration::from_millis(x));
    let dists = [
        Dist::Fixed { value: ms(1) },
        Dist::Uniform {
            min: ms(10_000),
            max: ms(30_000),
        },
        Dist::Exponential { mean: ms(12_000) },
        Dist::Lognormal {
            median: ms(50),
            sigma: 0.7,
        },
    ];
    let mut r = Rng::new(4, 1);
    let samples = dists
        .iter()
        .flat_map(|d| (0..5).map(|_| d.sample(&mut r)).collect::<Vec<_>>())
        .collect();
    Golden {
        raw,
        unit_bits,
        below,
        permutation,
        samples,
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use std::time::Duration;

    #[test]
    fn distributions_have_the_right_centre() {
        let mut rng = Rng::new(1, 0);
        let n = 20_000;
        let mean =
            |d: Dist, rng: &mut Rng| (0..n).map(|_| d.sample(rng) as f64).sum::<f64>() / n as f64;
        let ms = |x: u64| Dur(Duration::from_millis(x));
        let e = mean(Dist::Exponential { mean: ms(10) }, &mut rng);
        assert!((e / 1e7 - 1.0).abs() < 0.05, "{e}");
        let u = mean(
            Dist::Uniform {
                min: ms(10),
                max: ms(30),
            },
            &mut rng,
        );
        assert!((u / 2e7 - 1.0).abs() < 0.02, "{u}");
        let mut v: Vec<u64> = (0..n)
            .map(|_| {
                Dist::Lognormal {
                    median: ms(10),
                    sigma: 1.0,
                }
                .sample(&mut rng)
            })
            .collect();
        v.sort_unstable();
        assert!((v[n / 2] as f64 / 1e7 - 1.0).abs() < 0.05);
        // Same seed, same numbers.
        assert_eq!(Rng::new(9, 3).next_u64(), Rng::new(9, 3).next_u64());
        assert_ne!(Rng::new(9, 3).next_u64(), Rng::new(9, 4).next_u64());
    }

    /// The golden vector, as first drawn: a change here changes every
    /// workload's operations and breaks the Java harness's agreement.
    #[test]
    fn the_generator_draws_the_golden_vector() {
        let g = golden();
        assert_eq!(g, GOLDEN.clone(), "{}", serde_json::to_string(&g).unwrap());
    }

    static GOLDEN: std::sync::LazyLock<Golden> =
        std::sync::LazyLock::new(|| serde_json::from_str(GOLDEN_JSON).unwrap());

    const GOLDEN_JSON: &str = r#"{"raw": [2147854776517379192, 8802375653095001525, 14534806688539265593, 8526610226691505237], "unit_bits": [4593816075935808180, 4605043486238387464, 4601307507759319262], "below": [149, 549, 932], "permutation": [6, 4, 2, 1, 8, 5, 3, 0, 9, 7], "samples": [1000000, 1000000, 1000000, 1000000, 1000000, 20165406820, 11094207170, 19223615352, 15575128920, 25656046503, 503232363, 7488123351, 3445094172, 7084436304, 12300783528, 69724042, 90596915, 21332775, 56918382, 180480087]}"#;
}
