//! The Java originals as peers: `java.util.Timer`,
//! `ScheduledThreadPoolExecutor` (1 and 2 threads, `removeOnCancel` off and
//! on) and Netty's `HashedWheelTimer` (1 ms and 100 ms ticks), measured on
//! the same workloads, in the same run, by the same rules as our clones.
//!
//! # How
//!
//! The harness is a few Java files in `workbench/java/` (compiled into this
//! binary as text). On first use, [`harness`] finds a JDK (`JAVA_HOME/bin`,
//! else `PATH`) and the jars (`WORKBENCH_JAVA_LIBS`, else `/usr/share/java`:
//! Debian's `libhdrhistogram-java` and `libnetty-java`), writes the sources
//! into the cargo target directory (`target/java-peers/<hash>/`, never the
//! source tree) and compiles them there with `javac`, once per source
//! version. Each Java subject is then one child JVM
//! (`java peers.Harness <peer>`) that warms its peer up and serves runs:
//! [`JavaRunner::run`] writes the workload as one line of JSON (serde of
//! [`Workload`], the profile already applied) and reads back one line with
//! the workbench's own [`Measurement`]s. The harness draws every operation
//! with a bit-exact port of [`crate::spec::Rng`] in the same order as
//! [`crate::runner::timeline`], executes the timeline in real time on one
//! driver thread, and computes the same figures the same way (per-operation
//! costs less the measured cost of the timing loop; lateness and jitter in
//! HdrHistogram; memory per pending timer from the heap, after full
//! collections in sweeps and as heap growth without a collection in
//! timelines, where a collection would stall the run).
//!
//! # Skipping
//!
//! No JVM, no HdrHistogram jar, or (for the Netty peers) no Netty jar: the
//! subject's runner returns one clear line saying what is missing and which
//! Debian package provides it, and the suite skips it. Never a failure; the
//! CI test (`tests/java_peers.rs`) is the only place that insists.
//!
//! # Knobs (environment)
//!
//! - `JAVA_HOME`: the JDK to use (else `java`/`javac` on `PATH`).
//! - `WORKBENCH_JAVA_LIBS`: where `hdrhistogram.jar` and `netty-common.jar`
//!   are (default `/usr/share/java`).
//! - `WORKBENCH_JAVA_OPTS`: extra JVM flags (`-Xmx8g` for a full-size sweep
//!   to 1e7 timers on a small machine, `-XX:+UseParallelGC`, ...).
//! - `WORKBENCH_JAVA_WARMUP=rounds,timers`: the warm-up (default `3,50000`).
//! - `WORKBENCH_JAVA_VERBOSE`: pass the harness's progress lines to stderr.
//!
//! # Semantics
//!
//! The originals keep their own semantics (see [`ORIGINALS`] and
//! [`pairs`]): `Timer` counts in wall-clock milliseconds (so it can fire up
//! to 1 ms before a nanosecond deadline: the `early` count), cancels lazily
//! and dies on a throwing task; STPE without `removeOnCancel` keeps
//! cancelled tasks queued; Netty has no periodic API (the harness re-arms a
//! timeout from the task, as Netty users do, so a period shorter than the
//! tick runs once per tick). None has a reset: the harness cancels and, if
//! that stopped the timer, schedules anew.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;

use crate::record::{metric, Measurement, Results, SubjectKind};
use crate::runner::{RunContext, RunError, Runner};
use crate::spec::Workload;
use crate::subjects::Subject;

/// The harness sources, compiled into the binary so it runs from anywhere.
const SOURCES: &[(&str, &str)] = &[
    ("Dist.java", include_str!("../../java/Dist.java")),
    ("Harness.java", include_str!("../../java/Harness.java")),
    ("Json.java", include_str!("../../java/Json.java")),
    ("NettyPeer.java", include_str!("../../java/NettyPeer.java")),
    ("Peer.java", include_str!("../../java/Peer.java")),
    ("Timeline.java", include_str!("../../java/Timeline.java")),
];

/// A Java peer: its name in reports, whether it needs Netty, one line about it.
#[derive(Clone, Copy, Debug)]
pub struct JavaPeer {
    /// Short name (`jdk-timer`).
    pub name: &'static str,
    /// Needs Netty's jar.
    pub netty: bool,
    /// One line for the report.
    pub about: &'static str,
}

/// Every Java peer, in report order.
pub const PEERS: &[JavaPeer] = &[
    JavaPeer { name: "jdk-timer", netty: false, about: "JDK java.util.Timer: one thread, binary heap, ms wall clock, lazy cancel (child JVM)" },
    JavaPeer { name: "jdk-stpe-1", netty: false, about: "JDK ScheduledThreadPoolExecutor, 1 thread, removeOnCancel off (the default) (child JVM)" },
    JavaPeer { name: "jdk-stpe-1-roc", netty: false, about: "JDK ScheduledThreadPoolExecutor, 1 thread, removeOnCancel on (child JVM)" },
    JavaPeer { name: "jdk-stpe-2", netty: false, about: "JDK ScheduledThreadPoolExecutor, 2 threads, removeOnCancel off (child JVM)" },
    JavaPeer { name: "jdk-stpe-2-roc", netty: false, about: "JDK ScheduledThreadPoolExecutor, 2 threads, removeOnCancel on (child JVM)" },
    JavaPeer { name: "netty-1ms", netty: true, about: "Netty 4.1 HashedWheelTimer, 1 ms tick, 512 slots (child JVM)" },
    JavaPeer { name: "netty-100ms", netty: true, about: "Netty 4.1 HashedWheelTimer, 100 ms tick (Netty's default), 512 slots (child JVM)" },
];

/// The Java subjects, for [`crate::peers::all`]. Cheap: nothing is looked
/// up or started until the suite asks a subject for its runner.
pub fn subjects() -> Vec<Subject> {
    PEERS
        .iter()
        .map(|p| {
            let peer = *p;
            Subject {
                name: peer.name,
                kind: SubjectKind::Peer,
                about: peer.about,
                runner: Arc::new(move || {
                    JavaRunner::start(peer).map(|r| Box::new(r) as Box<dyn Runner>)
                }),
                timers: None,
            }
        })
        .collect()
}

/// A JDK and the jars the harness needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// The `java` launcher.
    pub java: PathBuf,
    /// The `javac` compiler.
    pub javac: PathBuf,
    /// HdrHistogram's jar (Debian `libhdrhistogram-java`).
    pub hdrhistogram: PathBuf,
    /// Netty's common jar (Debian `libnetty-java`), if installed.
    pub netty: Option<PathBuf>,
}

impl Toolchain {
    /// Finds a JDK and the jars.
    ///
    /// # Errors
    ///
    /// One line naming what is missing and the Debian package that
    /// provides it. A missing Netty jar is not an error here (only the
    /// Netty peers need it).
    pub fn locate() -> Result<Toolchain, String> {
        let java = find_tool("java").ok_or(
            "no JVM: `java` is not in JAVA_HOME/bin or on PATH (install default-jdk-headless)",
        )?;
        let javac = find_tool("javac").ok_or("no JDK compiler: `javac` is not in JAVA_HOME/bin or on PATH (install default-jdk-headless)")?;
        let libs = std::env::var_os("WORKBENCH_JAVA_LIBS")
            .map_or_else(|| PathBuf::from("/usr/share/java"), PathBuf::from);
        let hdrhistogram = libs.join("hdrhistogram.jar");
        if !hdrhistogram.is_file() {
            return Err(format!(
                "no HdrHistogram jar: {} is missing (install libhdrhistogram-java)",
                hdrhistogram.display()
            ));
        }
        let netty = Some(libs.join("netty-common.jar")).filter(|p| p.is_file());
        Ok(Toolchain {
            java,
            javac,
            hdrhistogram,
            netty,
        })
    }
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("JAVA_HOME").map(|h| PathBuf::from(h).join("bin").join(name));
    let path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name));
    home.into_iter().chain(path).find(|p| p.is_file())
}

/// The compiled harness: how to start it.
#[derive(Clone, Debug)]
pub struct Harness {
    /// The JDK and jars it was compiled against.
    pub toolchain: Toolchain,
    /// Where the classes are (inside the cargo target directory).
    pub classes: PathBuf,
}

impl Harness {
    fn classpath(&self) -> OsString {
        let mut parts = vec![self.classes.clone(), self.toolchain.hdrhistogram.clone()];
        parts.extend(self.toolchain.netty.clone());
        std::env::join_paths(parts).unwrap_or_default()
    }
}

/// Finds the toolchain and compiles the harness, once per process (and once
/// per source version on disk).
///
/// # Errors
///
/// One line: what is missing, or javac's complaint.
pub fn harness() -> Result<&'static Harness, String> {
    static HARNESS: OnceLock<Result<Harness, String>> = OnceLock::new();
    HARNESS
        .get_or_init(|| Toolchain::locate().and_then(compile))
        .as_ref()
        .map_err(Clone::clone)
}

/// FNV-1a: a stable hash for the build directory's name.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for &b in *p {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h = (h ^ 0xff).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The cargo target directory this binary was built in (the ancestor of the
/// executable holding cargo's `CACHEDIR.TAG`), else `CARGO_TARGET_DIR`, else
/// the system's temporary directory.
fn build_root() -> PathBuf {
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .skip(1)
            .find(|d| d.join("CACHEDIR.TAG").is_file())
            .map(Path::to_path_buf)
    });
    from_exe
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(std::env::temp_dir)
        .join("java-peers")
}

fn compile(toolchain: Toolchain) -> Result<Harness, String> {
    let sources: Vec<&(&str, &str)> = SOURCES
        .iter()
        .filter(|(f, _)| toolchain.netty.is_some() || *f != "NettyPeer.java")
        .collect();
    let mut key: Vec<&[u8]> = sources
        .iter()
        .flat_map(|(f, t)| [f.as_bytes(), t.as_bytes()])
        .collect();
    let javac = toolchain.javac.to_string_lossy().into_owned();
    key.push(javac.as_bytes());
    let dir = build_root().join(format!("{:016x}", fnv(&key)));
    let classes = dir.join("classes");
    let stamp = dir.join("ok");
    if stamp.is_file() {
        return Ok(Harness { toolchain, classes });
    }
    // Build beside, then rename into place: concurrent builds (parallel
    // tests) never see half a directory.
    let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let src = tmp.join("src");
    std::fs::create_dir_all(&src).map_err(|e| format!("cannot create {}: {e}", src.display()))?;
    let mut files = Vec::new();
    for (name, text) in &sources {
        let p = src.join(name);
        std::fs::write(&p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        files.push(p);
    }
    let mut cp = vec![toolchain.hdrhistogram.clone()];
    cp.extend(toolchain.netty.clone());
    let out = Command::new(&toolchain.javac)
        .arg("-encoding")
        .arg("UTF-8")
        .arg("-nowarn")
        .arg("-d")
        .arg(tmp.join("classes"))
        .arg("-cp")
        .arg(std::env::join_paths(cp).unwrap_or_default())
        .args(&files)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", toolchain.javac.display()))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "javac failed on the harness: {}",
            err.lines().take(5).collect::<Vec<_>>().join(" | ")
        ));
    }
    std::fs::write(tmp.join("ok"), b"")
        .map_err(|e| format!("cannot write in {}: {e}", tmp.display()))?;
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another process finished first; use its build.
        let _ = std::fs::remove_dir_all(&tmp);
        if !stamp.is_file() {
            return Err(format!(
                "cannot move the compiled harness into {}",
                dir.display()
            ));
        }
    }
    Ok(Harness { toolchain, classes })
}

/// One line of the harness's stdout.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Env(serde_json::Map<String, serde_json::Value>),
    Peer {
        #[serde(default)]
        semantics: Option<String>,
        #[serde(default)]
        skipped: Option<String>,
    },
    Ready,
    Result {
        workload: String,
        measurements: Vec<Measurement>,
    },
    Error {
        message: String,
    },
}

/// How long a run may take before the child is declared hung.
const RUN_LIMIT: Duration = Duration::from_secs(1800);
/// How long start-up (JVM, warm-up) may take.
const START_LIMIT: Duration = Duration::from_secs(300);

/// One Java peer in its own JVM, serving runs.
#[derive(Debug)]
pub struct JavaRunner {
    peer: JavaPeer,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// What the harness reported about the JVM (versions, GC).
    pub env: serde_json::Map<String, serde_json::Value>,
    /// How the original's semantics differ from our contract.
    pub semantics: String,
}

impl JavaRunner {
    /// Compiles the harness if needed, starts a JVM for `peer` and waits
    /// until it has warmed up.
    ///
    /// # Errors
    ///
    /// One line: why this peer cannot run here (no JVM, a missing jar, the
    /// JVM failed to start).
    pub fn start(peer: JavaPeer) -> Result<JavaRunner, String> {
        let (rounds, timers) = warmup();
        JavaRunner::start_with_warmup(peer, rounds, timers)
    }

    /// As [`JavaRunner::start`], with a given warm-up: `rounds` rounds of
    /// `timers` timers scheduled, reset and cancelled, a tenth of them fired.
    ///
    /// # Errors
    ///
    /// As [`JavaRunner::start`].
    pub fn start_with_warmup(
        peer: JavaPeer,
        rounds: u32,
        timers: u32,
    ) -> Result<JavaRunner, String> {
        let h = harness()?;
        if peer.netty && h.toolchain.netty.is_none() {
            return Err("no Netty jar: netty-common.jar is missing (install libnetty-java)".into());
        }
        let mut cmd = Command::new(&h.toolchain.java);
        if let Some(opts) = std::env::var_os("WORKBENCH_JAVA_OPTS") {
            cmd.args(opts.to_string_lossy().split_whitespace());
        }
        let mut child = cmd
            .arg("-cp")
            .arg(h.classpath())
            .arg("peers.Harness")
            .arg(peer.name)
            .arg(rounds.to_string())
            .arg(timers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", h.toolchain.java.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout from the JVM")?;
        let stderr = child.stderr.take().ok_or("no stderr from the JVM")?;
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("{}-out", peer.name))
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let t = tail.clone();
        let verbose = std::env::var_os("WORKBENCH_JAVA_VERBOSE").is_some();
        std::thread::Builder::new()
            .name(format!("{}-err", peer.name))
            .spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if verbose {
                        eprintln!("{line}");
                    }
                    let mut q = t.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if q.len() == 20 {
                        q.pop_front();
                    }
                    q.push_back(line);
                }
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        let stdin = child.stdin.take();
        let mut r = JavaRunner {
            peer,
            child,
            stdin,
            lines,
            stderr: tail,
            env: Default::default(),
            semantics: String::new(),
        };
        loop {
            match r.next_line(START_LIMIT).map_err(|e| e.0)? {
                Line::Env(env) => r.env = env,
                Line::Peer {
                    skipped: Some(why), ..
                } => return Err(why),
                Line::Peer { semantics, .. } => r.semantics = semantics.unwrap_or_default(),
                Line::Ready => return Ok(r),
                Line::Error { message } => return Err(message),
                Line::Result { .. } => {
                    return Err("the harness answered before it was asked".into())
                }
            }
        }
    }

    fn stderr_tail(&self) -> String {
        let q = self
            .stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        q.iter()
            .rev()
            .take(3)
            .rev()
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ")
    }

    fn next_line(&mut self, limit: Duration) -> Result<Line, RunError> {
        let line = match self.lines.recv_timeout(limit) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                return Err(RunError(format!(
                    "{}: no answer from the JVM within {} s; killed it",
                    self.peer.name,
                    limit.as_secs()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(RunError(format!(
                    "{}: the JVM exited ({status}): {}",
                    self.peer.name,
                    self.stderr_tail()
                )));
            }
        };
        serde_json::from_str(&line).map_err(|e| {
            RunError(format!(
                "{}: unreadable line from the harness ({e}): {line}",
                self.peer.name
            ))
        })
    }
}

/// Warm-up size: `WORKBENCH_JAVA_WARMUP=rounds,timers`, default 3 rounds of
/// 50 000 timers (schedule, reset, cancel; a tenth of them fired).
fn warmup() -> (u32, u32) {
    std::env::var("WORKBENCH_JAVA_WARMUP")
        .ok()
        .and_then(|v| {
            let (a, b) = v.split_once(',')?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .unwrap_or((3, 50_000))
}

impl Runner for JavaRunner {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        let text = serde_json::to_string(workload)
            .map_err(|e| RunError(format!("cannot encode the workload: {e}")))?;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| RunError("the JVM's stdin is closed".into()))?;
        writeln!(stdin, "{text}")
            .and_then(|()| stdin.flush())
            .map_err(|e| {
                RunError(format!(
                    "{}: cannot write to the JVM ({e}): {}",
                    self.peer.name,
                    self.stderr_tail()
                ))
            })?;
        ctx.progress.set_length(1);
        ctx.progress.set_position(0);
        let r = match self.next_line(RUN_LIMIT)? {
            Line::Result {
                workload: w,
                measurements,
            } if w == workload.name => Ok(measurements),
            Line::Result { workload: w, .. } => Err(RunError(format!(
                "{}: asked for {}, got {w}",
                self.peer.name, workload.name
            ))),
            Line::Error { message } => Err(RunError(message)),
            other => Err(RunError(format!(
                "{}: unexpected line from the harness: {other:?}",
                self.peer.name
            ))),
        };
        ctx.progress.set_position(1);
        r
    }
}

impl Drop for JavaRunner {
    fn drop(&mut self) {
        // End of stdin ends the harness; give it a moment, then make sure.
        drop(self.stdin.take());
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            let _ = self.lines.recv_timeout(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------------ pairing

/// One of our algorithms and the Java original it clones.
#[derive(Clone, Copy, Debug)]
pub struct Original {
    /// Our type, as in the crate docs.
    pub ours: &'static str,
    /// Subject names that are this algorithm; failing those, the algorithm
    /// whose description names the type ([`Original::ours`]).
    pub names: &'static [&'static str],
    /// The Java peers it is compared with; with several, the best one per
    /// figure (`None`: the best of every Java peer).
    pub originals: Option<&'static [&'static str]>,
    /// The semantic differences we chose, one sentence each.
    pub differences: &'static [&'static str],
}

/// Each algorithm of the `schedulers` crate with its original.
pub const ORIGINALS: &[Original] = &[
    Original {
        ours: "HeapTimer",
        names: &["heap", "heap-timer", "heap_timer"],
        originals: Some(&["jdk-timer"]),
        differences: &[
            "monotonic nanosecond deadlines, not wall-clock milliseconds: never fires before its deadline (Timer can, by up to 1 ms: the `early` count)",
            "equal deadlines run in submission order (Timer's heap does not)",
            "fixed-delay counts from the end of a run (Timer: from its start)",
            "a panicking task is reported on its handle and the timer lives on (a throwing TimerTask kills the Timer)",
            "lazy cancel with a bounded automatic purge (Timer keeps cancelled tasks until they reach the head or purge())",
            "native reset (move); Timer needs cancel + a new TimerTask",
        ],
    },
    Original {
        ours: "ScheduledThreadPool",
        names: &["thread-pool", "stpe", "pool", "scheduled-thread-pool", "thread_pool"],
        originals: Some(&["jdk-stpe-1", "jdk-stpe-1-roc", "jdk-stpe-2", "jdk-stpe-2-roc"]),
        differences: &[
            "cancel stays lazy by default (as the JDK's removeOnCancel=false) but the queue is purged automatically once dead entries outnumber live ones; the JDK keeps them until they reach the head or purge() runs",
            "remove_on_cancel and purge() work as in the JDK; after shutdown a cancel removes its entry at once",
            "native reset (move); the JDK needs cancel + a new schedule",
            "delays are checked (typed error on overflow), not clamped; shutdown_now's tasks report being abandoned instead of blocking forever",
            "same ordering (deadline, then submission sequence), leader/follower queue, fixed-rate catch-up and fixed-delay from the end of a run",
        ],
    },
    Original {
        ours: "HashedWheelTimer",
        names: &["hashed-wheel", "hashed", "wheel", "hashed_wheel"],
        originals: Some(&["netty-1ms", "netty-100ms"]),
        differences: &[
            "periodic tasks, reset and typed results are native (Netty has one-shot timeouts only; its users re-arm from the task, as the harness does)",
            "deadlines round up to the tick, so never early; timers of one tick run in submission order, even after a reset",
            "a default tick of 1 ms and a larger wheel (Netty: 100 ms, 512 slots); ticks down to 1 µs (Netty raises anything under 1 ms to 1 ms)",
            "a panicking task is reported on its handle (Netty logs it); shutdown keeps pending one-shots by default (Netty's stop returns them unrun)",
        ],
    },
    Original {
        ours: "HierarchicalWheelTimer",
        names: &["hierarchical", "hier", "hierarchical-wheel", "kafka"],
        originals: None,
        differences: &[
            "Kafka's SystemTimer has no Java peer here (it is not a general scheduler: no periodic tasks, no return values): each figure is compared with the best Java peer",
            "never early, at most one tick late (Kafka may run a task up to a tick early); a bucket expires at its earliest timer",
            "no polling reaper: the driver blocks until the earliest bucket and a submit into an earlier one wakes it",
            "periodic tasks, reset, typed errors, ties in submission order within a tick, panics reported on the handle",
        ],
    },
];

/// The figures the pairing table shows, in order.
pub const PAIRED_METRICS: &[&str] = &[
    metric::SCHEDULE,
    metric::CANCEL,
    metric::RESET,
    "lateness_p50",
    "lateness_p99",
    "jitter_p99",
    metric::MEMORY,
    metric::CPU,
];

/// One row of the pairing table: our algorithm against its original on one
/// (workload, metric, size).
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// Our type (`HeapTimer`).
    pub ours: &'static str,
    /// Our subject's name in the results.
    pub subject: String,
    /// The Java peer compared with (the best one, when several).
    pub original: String,
    /// The workload.
    pub workload: String,
    /// The metric.
    pub metric: String,
    /// The pending count, for sweeps.
    pub size: Option<u64>,
    /// Unit of both values.
    pub unit: String,
    /// Ours.
    pub value: f64,
    /// The original's.
    pub original_value: f64,
    /// `value / original_value`: below 1 is better for costs and lateness.
    pub ratio: f64,
}

/// Pairs each algorithm with its original on every workload and every
/// metric of [`PAIRED_METRICS`] both have (sweeps: the largest common size).
/// Where an algorithm has several originals, the best of them per figure.
pub fn pairs(results: &Results) -> Vec<Pair> {
    let mut out = Vec::new();
    let all_java: Vec<&str> = PEERS.iter().map(|p| p.name).collect();
    for o in ORIGINALS {
        let algorithms = || {
            results
                .subjects
                .iter()
                .filter(|s| s.kind == SubjectKind::Algorithm)
        };
        // By its usual short names, else by its type name in the subject's description.
        let by_name = o
            .names
            .iter()
            .find_map(|n| algorithms().find(|s| s.name == *n));
        let Some(subject) = by_name.or_else(|| {
            algorithms().find(|s| {
                s.about
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == o.ours)
            })
        }) else {
            continue;
        };
        let subject = subject.name.as_str();
        let candidates: &[&str] = o.originals.unwrap_or(&all_java);
        for w in &results.workloads {
            for m in PAIRED_METRICS {
                let size = results
                    .records
                    .iter()
                    .filter(|r| r.workload == w.name && r.metric == *m && r.scheduler == *subject)
                    .filter_map(|r| r.size)
                    .filter(|s| {
                        candidates
                            .iter()
                            .any(|c| results.get(c, &w.name, m, Some(*s)).is_some())
                    })
                    .max();
                let Some(mine) = results.get(subject, &w.name, m, size) else {
                    continue;
                };
                let lower = metric::lower_is_better(m);
                let best = candidates
                    .iter()
                    .filter_map(|c| results.get(c, &w.name, m, size).map(|r| (*c, r.value)))
                    .filter(|(_, v)| v.is_finite())
                    .reduce(|a, b| {
                        if (b.1 < a.1) == lower && b.1 != a.1 {
                            b
                        } else {
                            a
                        }
                    });
                let Some((orig, ov)) = best else { continue };
                let ratio = if ov.abs() > f64::EPSILON {
                    mine.value / ov
                } else {
                    f64::NAN
                };
                out.push(Pair {
                    ours: o.ours,
                    subject: subject.to_owned(),
                    original: orig.to_owned(),
                    workload: w.name.clone(),
                    metric: (*m).to_owned(),
                    size,
                    unit: mine.unit.clone(),
                    value: mine.value,
                    original_value: ov,
                    ratio,
                });
            }
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The report's section on the originals: per algorithm, a table of its
/// figures against its original's with the ratio, and the semantic
/// differences we chose. An HTML `<section>` for the report page (tables
/// carry `data-table`, ratios the page's `best`/`worse` classes); empty when
/// the results hold no pair (no Java peer ran, or no paired algorithm).
pub fn originals_html(results: &Results) -> String {
    let pairs = pairs(results);
    if pairs.is_empty() {
        return String::new();
    }
    let mut h = String::from(
        "<section id=\"originals\">\n<h2>Against the Java originals</h2>\n<p>Each algorithm beside the Java original it clones, measured in the same run on the same workloads. Ratio = ours / original: below 1 means ours is cheaper, faster or less late (for fires/s, above 1 is better). Where an algorithm has several originals, each figure is compared with the best of them.</p>\n",
    );
    for o in ORIGINALS {
        let rows: Vec<&Pair> = pairs.iter().filter(|p| p.ours == o.ours).collect();
        let Some(first) = rows.first() else { continue };
        let with = match o.originals {
            Some(list) => list.join(", "),
            None => "the best Java peer per figure".to_owned(),
        };
        h.push_str(&format!(
            "<h3>{} ({}) vs {}</h3>\n",
            esc(o.ours),
            esc(&first.subject),
            esc(&with)
        ));
        h.push_str(&format!(
            "<table data-table=\"originals-{}\"><thead><tr><th>workload</th><th>metric</th><th>ours</th><th>original</th><th>peer</th><th>ratio</th></tr></thead><tbody>\n",
            esc(&first.subject)
        ));
        for p in rows {
            let metric = match p.size {
                Some(n) => format!("{} @ {}", p.metric, crate::spec::format_count(n)),
                None => p.metric.clone(),
            };
            let better = if metric::lower_is_better(&p.metric) {
                p.ratio < 1.0
            } else {
                p.ratio > 1.0
            };
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{} {}</td><td>{}</td><td class=\"{}\">{}×</td></tr>\n",
                esc(&p.workload),
                esc(&metric),
                fmt_value(p.value),
                esc(&p.unit),
                fmt_value(p.original_value),
                esc(&p.unit),
                esc(&p.original),
                if better { "best" } else { "worse" },
                fmt_ratio(p.ratio)
            ));
        }
        h.push_str("</tbody></table>\n<p>Semantic differences we chose:</p>\n<ul>\n");
        for d in o.differences {
            h.push_str(&format!("<li>{}</li>\n", esc(d)));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</section>\n");
    h
}

/// Two significant digits below 1 (0.0046 stays visible), else two decimals.
fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        "–".to_owned()
    } else if r < 1.0 && r > 0.0 {
        let digits = (1 - r.log10().floor() as i32).max(2) as usize;
        format!("{r:.digits$}")
    } else {
        format!("{r:.2}")
    }
}

fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        "–".to_owned()
    } else if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::record::{Record, FORMAT};
    use serde_json::json;

    // Built through serde so that fields added later with defaults do not
    // break these tests.
    fn rec(s: &str, w: &str, m: &str, v: f64, size: Option<u64>) -> Record {
        serde_json::from_value(json!({
            "scheduler": s, "workload": w, "metric": m, "value": v, "unit": "ns/op", "size": size,
            "samples": [v], "spread": 0.0, "seed": 1, "env": env(),
        }))
        .unwrap()
    }

    fn env() -> serde_json::Value {
        json!({"cpu": "", "cores": 1, "rustc": "", "commit": "", "date": "", "os": "", "profile": "quick"})
    }

    fn results(records: Vec<Record>) -> Results {
        let subj = |n: &str, kind: &str| json!({"name": n, "kind": kind, "about": if n == "wh" { "HashedWheelTimer: Netty clone" } else { "" }});
        let wl = |n: &str| json!({"name": n, "description": "", "models": "", "seed": 1, "summary": [], "sweep": false});
        serde_json::from_value(json!({
            "format": FORMAT, "run_id": "t", "env": env(), "repeats": 1, "wall_seconds": 1.0,
            "subjects": [
                subj("heap", "algorithm"), subj("stpe", "algorithm"), subj("hierarchical", "algorithm"),
                subj("wh", "algorithm"), subj("jdk-timer", "peer"), subj("jdk-stpe-1", "peer"), subj("jdk-stpe-2-roc", "peer"),
                subj("netty-1ms", "peer"),
            ],
            "workloads": [wl("burst"), wl("scale")],
            "records": records,
            "notes": [],
        }))
        .unwrap()
    }

    #[test]
    fn pairs_each_algorithm_with_its_original_and_the_best_of_several() {
        let r = results(vec![
            rec("heap", "burst", "schedule", 50.0, None),
            rec("jdk-timer", "burst", "schedule", 200.0, None),
            rec("stpe", "burst", "schedule", 90.0, None),
            rec("jdk-stpe-1", "burst", "schedule", 300.0, None),
            rec("jdk-stpe-2-roc", "burst", "schedule", 180.0, None),
            // Sweeps pair at the largest size both have.
            rec("heap", "scale", "cancel", 30.0, Some(1000)),
            rec("heap", "scale", "cancel", 60.0, Some(100_000)),
            rec("heap", "scale", "cancel", 90.0, Some(1_000_000)),
            rec("jdk-timer", "scale", "cancel", 20.0, Some(1000)),
            rec("jdk-timer", "scale", "cancel", 120.0, Some(100_000)),
            // The hierarchical wheel meets the best Java peer of all.
            rec("hierarchical", "burst", "schedule", 60.0, None),
            rec("wh", "burst", "schedule", 80.0, None),
            rec("netty-1ms", "burst", "schedule", 40.0, None),
        ]);
        let p = pairs(&r);
        let find = |ours: &str, w: &str, m: &str| {
            p.iter()
                .find(|x| x.ours == ours && x.workload == w && x.metric == m)
                .cloned()
        };
        let heap = find("HeapTimer", "burst", "schedule").unwrap();
        assert_eq!((heap.original.as_str(), heap.ratio), ("jdk-timer", 0.25));
        let stpe = find("ScheduledThreadPool", "burst", "schedule").unwrap();
        assert_eq!(
            (stpe.original.as_str(), stpe.ratio),
            ("jdk-stpe-2-roc", 0.5)
        );
        let sweep = find("HeapTimer", "scale", "cancel").unwrap();
        assert_eq!((sweep.size, sweep.ratio), (Some(100_000), 0.5));
        let hier = find("HierarchicalWheelTimer", "burst", "schedule").unwrap();
        assert_eq!(
            (hier.original.as_str(), hier.original_value),
            ("netty-1ms", 40.0)
        );
        assert!(
            find("HashedWheelTimer", "scale", "cancel").is_none(),
            "no figure of the wheel there"
        );
        // Found by the type name in its description; its Netty peer did better.
        let wheel = find("HashedWheelTimer", "burst", "schedule").unwrap();
        assert_eq!(
            (wheel.subject.as_str(), wheel.original.as_str(), wheel.ratio),
            ("wh", "netty-1ms", 2.0)
        );

        let html = originals_html(&r);
        assert!(
            html.contains("<h3>HeapTimer (heap) vs jdk-timer</h3>"),
            "{html}"
        );
        assert!(html.contains("0.25×") && html.contains("Semantic differences"));
        assert_eq!(
            (
                fmt_ratio(0.0046),
                fmt_ratio(0.25),
                fmt_ratio(3.456),
                fmt_ratio(f64::NAN)
            ),
            ("0.0046".into(), "0.25".into(), "3.46".into(), "–".into())
        );
        assert_eq!(
            originals_html(&results(vec![rec("heap", "burst", "schedule", 1.0, None)])),
            ""
        );
    }

    #[test]
    fn the_harness_sources_are_all_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("java");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".java"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = SOURCES.iter().map(|(f, _)| (*f).to_owned()).collect();
        assert_eq!(
            on_disk, embedded,
            "add every file of workbench/java/ to SOURCES"
        );
    }
}
