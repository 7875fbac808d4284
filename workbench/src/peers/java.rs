//! The Java originals as peers: `java.util.Timer`,
//! `ScheduledThreadPoolExecutor` (1 and 2 threads, `removeOnCancel` off and
//! on), Netty's `HashedWheelTimer` (1 ms and 100 ms ticks) and Quartz in
//! memory (`quartz`: `RAMJobStore`, 2 pool threads; also on the `calendar`
//! workload), measured on the same workloads, in the same run, by the same
//! rules as our clones. The Quartz cluster on PostgreSQL runs the same
//! classes from [`super::quartz`].
//!
//! # How
//!
//! The harness is a few Java files in `workbench/java/` (compiled into this
//! binary as text). On first use, [`harness`] finds a JDK (`JAVA_HOME/bin`,
//! else `PATH`) and the jars (`WORKBENCH_JAVA_LIBS`, else `/usr/share/java`:
//! Debian's `libhdrhistogram-java`, `libnetty-java`, `libquartz2-java` with
//! `libslf4j-java` and `libc3p0-java`, and `libpostgresql-jdbc-java`),
//! writes the sources
//! into the cargo target directory (`target/java-peers/<hash>/`, never the
//! source tree) and compiles them there with `javac`, once per source
//! version. Each Java subject is then one child JVM
//! (`java peers.Harness <peer>`), started when the suite reaches it and
//! stopped when it is done (one JVM at a time), that warms its peer up and
//! serves runs:
//! [`JavaRunner::run`] writes the workload as one line of JSON (serde of
//! [`Workload`], the profile already applied) and reads back one line with
//! the workbench's own [`Measurement`]s. The harness draws every operation
//! with a bit-exact port of [`crate::spec::Rng`] in the same order as
//! [`crate::runner::timeline`], executes the timeline in real time on one
//! driver thread, and computes the same figures the same way (per-call
//! costs less the measured cost of the timing loop, batch costs of loops;
//! lateness from the deadline the peer's API was given, and |jitter|, in
//! HdrHistogram; whole-process CPU in ns from every thread's
//! `/proc/self/task/N/schedstat`; memory per pending timer from the heap
//! after full collections). A contention workload runs P Java threads
//! sharing the peer, the loop of [`crate::runner::contention`]
//! (`Contention.java`).
//!
//! # Skipping
//!
//! No JVM, no HdrHistogram jar, or (for the Netty peers) no Netty jar, (for
//! Quartz) no Quartz or slf4j jar: the subject's runner returns one clear
//! line saying what is missing and which Debian package provides it, and
//! the suite skips it. Never a failure; the
//! CI test (`tests/java_peers.rs`) is the only place that insists.
//!
//! # Knobs (environment)
//!
//! - `JAVA_HOME`: the JDK to use (else `java`/`javac` on `PATH`).
//! - `WORKBENCH_JAVA_LIBS`: where `hdrhistogram.jar` and `netty-common.jar`
//!   are (default `/usr/share/java`).
//! - `WORKBENCH_JAVA_OPTS`: extra JVM flags after the defaults
//!   ([`JVM_OPTS`]: G1, `-Xms2g -Xmx6g`), e.g. `-Xmx8g` for a full-size
//!   sweep to 1e7 timers.
//! - `WORKBENCH_JAVA_WARMUP=rounds,timers`: the warm-up (default `3,50000`).
//! - `WORKBENCH_JAVA_VERBOSE`: pass the harness's progress lines to stderr.
//!
//! # Semantics
//!
//! The originals keep their own semantics (see
//! [`crate::report::originals::ORIGINALS`] and
//! [`crate::report::originals::pairs`]): `Timer` counts in wall-clock milliseconds (so it can fire up
//! to 1 ms before a nanosecond deadline: the `early` count), cancels lazily
//! and dies on a throwing task; STPE without `removeOnCancel` keeps
//! cancelled tasks queued; Netty has no periodic API (the harness re-arms a
//! timeout from the task, as Netty users do, so a period shorter than the
//! tick runs once per tick). None has a reset: the harness cancels and, if
//! that stopped the timer, schedules anew. Quartz counts in wall-clock
//! milliseconds too and fires a trigger once it is within 2 ms of its time
//! (so up to about 3 ms early); its reset is `rescheduleJob`.
//!
//! A calendar workload gets one line back with the run's fires
//! ([`crate::calendar::CalendarRun`]) instead of figures; the figures are
//! computed here as for every other subject ([`crate::calendar::figures`]).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;

use crate::record::{Measurement, SubjectKind};
use crate::runner::{RunContext, RunError, Runner};
use crate::runner::{Subject, Unavailable};
use crate::spec::Workload;
use crate::spec::WorkloadKind;

/// The harness sources, compiled into the binary so it runs from anywhere.
const SOURCES: &[(&str, &str)] = &[
    (
        "Contention.java",
        include_str!("../../java/Contention.java"),
    ),
    ("Dist.java", include_str!("../../java/Dist.java")),
    ("Harness.java", include_str!("../../java/Harness.java")),
    ("Json.java", include_str!("../../java/Json.java")),
    ("NettyPeer.java", include_str!("../../java/NettyPeer.java")),
    ("Peer.java", include_str!("../../java/Peer.java")),
    (
        "QuartzCalendar.java",
        include_str!("../../java/QuartzCalendar.java"),
    ),
    (
        "QuartzCalibrate.java",
        include_str!("../../java/QuartzCalibrate.java"),
    ),
    (
        "QuartzCluster.java",
        include_str!("../../java/QuartzCluster.java"),
    ),
    (
        "QuartzPeer.java",
        include_str!("../../java/QuartzPeer.java"),
    ),
    ("Timeline.java", include_str!("../../java/Timeline.java")),
];

/// The library a Java peer needs beyond the JDK and HdrHistogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lib {
    /// The JDK alone.
    Jdk,
    /// Netty's `netty-common.jar`.
    Netty,
    /// Quartz with slf4j ([`Toolchain::quartz`]).
    Quartz,
}

/// A Java peer: its name in reports, the library it needs, one line about it.
#[derive(Clone, Copy, Debug)]
pub struct JavaPeer {
    /// Short name (`jdk-timer`).
    pub name: &'static str,
    /// What it needs beyond the JDK.
    pub lib: Lib,
    /// One line for the report.
    pub about: &'static str,
}

/// Every Java peer, in report order.
pub const PEERS: &[JavaPeer] = &[
    JavaPeer { name: "jdk-timer", lib: Lib::Jdk, about: "JDK java.util.Timer: one thread, binary heap, ms wall clock, lazy cancel (child JVM)" },
    JavaPeer { name: "jdk-stpe-1", lib: Lib::Jdk, about: "JDK ScheduledThreadPoolExecutor, 1 thread, removeOnCancel off (the default) (child JVM)" },
    JavaPeer { name: "jdk-stpe-1-roc", lib: Lib::Jdk, about: "JDK ScheduledThreadPoolExecutor, 1 thread, removeOnCancel on (child JVM)" },
    JavaPeer { name: "jdk-stpe-2", lib: Lib::Jdk, about: "JDK ScheduledThreadPoolExecutor, 2 threads, removeOnCancel off (child JVM)" },
    JavaPeer { name: "jdk-stpe-2-roc", lib: Lib::Jdk, about: "JDK ScheduledThreadPoolExecutor, 2 threads, removeOnCancel on (child JVM)" },
    JavaPeer { name: "netty-1ms", lib: Lib::Netty, about: "Netty 4.1 HashedWheelTimer, 1 ms tick, 512 buckets (child JVM)" },
    JavaPeer { name: "netty-100ms", lib: Lib::Netty, about: "Netty 4.1 HashedWheelTimer, 100 ms tick (Netty's default), 512 buckets (child JVM)" },
    JavaPeer { name: "quartz", lib: Lib::Quartz, about: QUARTZ_ABOUT },
];

/// The Quartz peer's line: how it is set up and what its defaults mean for
/// its figures.
const QUARTZ_ABOUT: &str = "Quartz 2.3.2 in memory as its users run it: StdSchedulerFactory with Quartz's shipped defaults \
     (RAMJobStore, one trigger acquired at a time, misfire threshold 60 s), SimpleThreadPool of 2 threads; a JobDetail and a \
     SimpleTrigger (calendar: a CronTrigger) per timer; unscheduleJob cancels, rescheduleJob resets. Deadlines are wall-clock ms \
     and a trigger fires once within 2 ms of its time: up to ~3 ms early, counted as early; a run over 60 s late is a misfire \
     (child JVM)";

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
                workloads: match peer.lib {
                    Lib::Quartz => &[
                        WorkloadKind::Timeline,
                        WorkloadKind::Sweep,
                        WorkloadKind::Calendar,
                    ],
                    Lib::Jdk | Lib::Netty => &[
                        WorkloadKind::Timeline,
                        WorkloadKind::Sweep,
                        WorkloadKind::Contention,
                    ],
                },
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
    /// Quartz and the slf4j API and binding it logs through, or what is
    /// missing.
    pub quartz: Result<Vec<PathBuf>, Unavailable>,
    /// The Quartz cluster's JDBC pool (c3p0, Quartz's default) and the
    /// PostgreSQL driver, or what is missing.
    pub jdbc: Result<Vec<PathBuf>, Unavailable>,
}

impl Toolchain {
    /// Finds a JDK and the jars.
    ///
    /// # Errors
    ///
    /// One line naming what is missing and the Debian package that
    /// provides it. A missing Netty jar is not an error here (only the
    /// Netty peers need it).
    pub fn locate() -> Result<Toolchain, Unavailable> {
        let java = find_tool("java").ok_or(
            "no JVM: `java` is not in JAVA_HOME/bin or on PATH (install default-jdk-headless)",
        )?;
        let javac = find_tool("javac").ok_or("no JDK compiler: `javac` is not in JAVA_HOME/bin or on PATH (install default-jdk-headless)")?;
        let libs = std::env::var_os("WORKBENCH_JAVA_LIBS")
            .map_or_else(|| PathBuf::from("/usr/share/java"), PathBuf::from);
        let hdrhistogram = libs.join("hdrhistogram.jar");
        if !hdrhistogram.is_file() {
            return Err(Unavailable(format!(
                "no HdrHistogram jar: {} is missing (install libhdrhistogram-java)",
                hdrhistogram.display()
            )));
        }
        let netty = Some(libs.join("netty-common.jar")).filter(|p| p.is_file());
        let jars = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(jar, package)| {
                    let p = libs.join(jar);
                    p.is_file().then_some(p).ok_or_else(|| {
                        Unavailable(format!(
                            "no {jar}: {} is missing (install {package})",
                            libs.join(jar).display()
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Toolchain {
            java,
            javac,
            hdrhistogram,
            netty,
            quartz: jars(&[
                ("quartz2.jar", "libquartz2-java"),
                ("slf4j-api.jar", "libslf4j-java"),
                ("slf4j-simple.jar", "libslf4j-java"),
            ]),
            jdbc: jars(&[
                ("c3p0.jar", "libc3p0-java"),
                ("postgresql.jar", "libpostgresql-jdbc-java"),
            ]),
        })
    }

    /// The jars beside the compiled classes: HdrHistogram, then every
    /// optional library that is installed.
    fn jars(&self) -> Vec<PathBuf> {
        let mut v = vec![self.hdrhistogram.clone()];
        v.extend(self.netty.clone());
        for jars in [&self.quartz, &self.jdbc].into_iter().flatten() {
            v.extend(jars.iter().cloned());
        }
        v
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
    /// The classes and every jar, as `java -cp` takes them.
    pub fn classpath(&self) -> OsString {
        let mut parts = vec![self.classes.clone()];
        parts.extend(self.toolchain.jars());
        std::env::join_paths(parts).unwrap_or_default()
    }
}

/// Finds the toolchain and compiles the harness, once per process (and once
/// per source version on disk).
///
/// # Errors
///
/// One line: what is missing, or javac's complaint.
pub fn harness() -> Result<&'static Harness, Unavailable> {
    static HARNESS: OnceLock<Result<Harness, Unavailable>> = OnceLock::new();
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

fn compile(toolchain: Toolchain) -> Result<Harness, Unavailable> {
    // The classes of an optional library that is not installed are left out.
    let sources: Vec<&(&str, &str)> = SOURCES
        .iter()
        .filter(|(f, _)| toolchain.netty.is_some() || *f != "NettyPeer.java")
        .filter(|(f, _)| toolchain.quartz.is_ok() || !f.starts_with("Quartz"))
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
    let cp = toolchain.jars();
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
        return Err(Unavailable(format!(
            "javac failed on the harness: {}",
            err.lines().take(5).collect::<Vec<_>>().join(" | ")
        )));
    }
    std::fs::write(tmp.join("ok"), b"")
        .map_err(|e| format!("cannot write in {}: {e}", tmp.display()))?;
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another process finished first; use its build.
        let _ = std::fs::remove_dir_all(&tmp);
        if !stamp.is_file() {
            return Err(Unavailable(format!(
                "cannot move the compiled harness into {}",
                dir.display()
            )));
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
        /// A calendar run's report, from which the figures are computed.
        #[serde(default)]
        calendar: Option<crate::calendar::CalendarRun>,
    },
    Error {
        message: String,
    },
}

/// The JVM's flags: G1 with a fixed starting heap, so no run pays for
/// growing it (`WORKBENCH_JAVA_OPTS` can override each).
pub const JVM_OPTS: &[&str] = &["-XX:+UseG1GC", "-Xms2g", "-Xmx6g"];

/// The draws of the harness's generator ([`crate::random::golden`] in
/// Java), as the JSON it prints.
///
/// # Errors
///
/// Why the harness cannot run here, or what it printed instead.
pub fn golden() -> Result<crate::random::Golden, Unavailable> {
    let h = harness()?;
    let out = Command::new(&h.toolchain.java)
        .arg("-cp")
        .arg(h.classpath())
        .arg("peers.Harness")
        .arg("--golden")
        .output()
        .map_err(|e| Unavailable(format!("cannot start {}: {e}", h.toolchain.java.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .map_err(|e| Unavailable(format!("the harness printed {text:?}: {e}")))
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
    pub fn start(peer: JavaPeer) -> Result<JavaRunner, Unavailable> {
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
    ) -> Result<JavaRunner, Unavailable> {
        let h = harness()?;
        match peer.lib {
            Lib::Netty if h.toolchain.netty.is_none() => {
                return Err(Unavailable(
                    "no Netty jar: netty-common.jar is missing (install libnetty-java)".into(),
                ))
            }
            Lib::Quartz => {
                h.toolchain.quartz.clone()?;
            }
            _ => {}
        }
        let mut cmd = Command::new(&h.toolchain.java);
        // A fixed heap, as the calibration harness runs the JDK; the user's
        // options come after and win.
        cmd.args(JVM_OPTS);
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
            match r
                .next_line(START_LIMIT)
                .map_err(|e| Unavailable(e.to_string()))?
            {
                Line::Env(env) => r.env = env,
                Line::Peer {
                    skipped: Some(why), ..
                } => return Err(Unavailable(why)),
                Line::Peer { semantics, .. } => r.semantics = semantics.unwrap_or_default(),
                Line::Ready => return Ok(r),
                Line::Error { message } => return Err(Unavailable(message)),
                Line::Result { .. } => {
                    return Err(Unavailable(
                        "the harness answered before it was asked".into(),
                    ))
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
                return Err(RunError::Child(format!(
                    "{}: no answer from the JVM within {} s; killed it",
                    self.peer.name,
                    limit.as_secs()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(RunError::Child(format!(
                    "{}: the JVM exited ({status}): {}",
                    self.peer.name,
                    self.stderr_tail()
                )));
            }
        };
        serde_json::from_str(&line).map_err(|e| {
            RunError::Child(format!(
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
            .map_err(|e| RunError::Child(format!("cannot encode the workload: {e}")))?;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| RunError::Child("the JVM's stdin is closed".into()))?;
        writeln!(stdin, "{text}")
            .and_then(|()| stdin.flush())
            .map_err(|e| {
                RunError::Child(format!(
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
                calendar,
            } if w == workload.name => match calendar {
                Some(run) => crate::calendar::figures(workload, &run),
                None => Ok(measurements),
            },
            Line::Result { workload: w, .. } => Err(RunError::Child(format!(
                "{}: asked for {}, got {w}",
                self.peer.name, workload.name
            ))),
            Line::Error { message } => Err(RunError::Child(message)),
            other => Err(RunError::Child(format!(
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

/// The JVM's largest heap, bytes: the last `-Xmx` of [`JVM_OPTS`] and
/// `WORKBENCH_JAVA_OPTS`.
pub fn max_heap() -> Option<f64> {
    let user = std::env::var("WORKBENCH_JAVA_OPTS").unwrap_or_default();
    JVM_OPTS
        .iter()
        .copied()
        .chain(user.split_whitespace())
        .filter_map(|o| o.strip_prefix("-Xmx"))
        .filter_map(|v| {
            let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic())?);
            let scale = match unit.to_ascii_lowercase().as_str() {
                "k" => 1024.0,
                "m" => 1024.0 * 1024.0,
                "g" => 1024.0 * 1024.0 * 1024.0,
                "t" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
                _ => return None,
            };
            Some(num.parse::<f64>().ok()? * scale)
        })
        .next_back()
}

/// The heap a sweep cycle of `n` timers needs at `per_timer` bytes each:
/// the harness's rule (`Timeline.heapNeeded`), which skips a size (and the
/// larger ones) when the memory measured at the size before says it would
/// not fit.
pub fn heap_needed(n: u64, per_timer: f64) -> f64 {
    n as f64 * (2.0 * per_timer + 64.0)
}

/// What the reader should know about the Java peers' sweeps: every size a
/// peer did not reach, with the reason computed from what it measured (the
/// memory per timer at its largest size, against the JVM's heap).
pub fn notes(results: &crate::record::Results, workloads: &[Workload]) -> Vec<String> {
    use crate::record::Metric;
    let heap = max_heap();
    let mut out = Vec::new();
    for w in workloads {
        let Some(sweep) = &w.sweep else { continue };
        for p in PEERS {
            let measured = |n: u64| results.value(p.name, &w.name, Metric::Memory, Some(n));
            let Some((largest, per)) = sweep
                .sizes
                .iter()
                .filter_map(|&n| measured(n).map(|b| (n, b)))
                .next_back()
            else {
                continue;
            };
            let missing: Vec<u64> = sweep
                .sizes
                .iter()
                .copied()
                .filter(|&n| n > largest)
                .collect();
            let Some(&next) = missing.first() else {
                continue;
            };
            let need = heap_needed(next, per);
            let sizes: Vec<String> = missing
                .iter()
                .map(|n| crate::spec::format_count(*n))
                .collect();
            let why = match heap {
                Some(h) if need > h => format!(
                    "at the {per:.0} B per pending timer it held at {} (measured), {} timers need about {:.1} GB of heap \
                     with a cycle's garbage, beyond its JVM's {:.1} GB (-Xmx; WORKBENCH_JAVA_OPTS=-Xmx… raises it)",
                    crate::spec::format_count(largest),
                    crate::spec::format_count(next),
                    need / 1e9,
                    h / 1e9
                ),
                _ => "the harness stopped the sweep there (its stderr says why)".to_owned(),
            };
            out.push(format!(
                "{} did not run {} at {}: {why}",
                p.name,
                w.name,
                sizes.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

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
