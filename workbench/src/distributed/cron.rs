//! The Redis scheduler on the `calendar` workload (`redis-cron`), as
//! `bullmq-cron` runs BullMQ's job schedulers: a fresh local `redis-server`
//! per measurement; a producer creates one calendar job per schedule
//! (`Job::on_calendar` with the workload's expression read in its zone,
//! pipelined by [`schedulers_redis::RedisScheduler::schedule_many`],
//! [`BATCH`] at a time); then one [`Worker`] with the workload's threads,
//! in this process, runs them. Each run records its wall-clock start; the
//! lateness is counted from the instant the expression names
//! ([`crate::calendar::figures`]), not from the job's due time on Redis's
//! clock. The worker's CPU is this process's over the window and its grace,
//! Redis's (`INFO cpu`) the store's, and the growth of Redis's keys
//! (`MEMORY USAGE` summed over them) over the creation the memory per
//! schedule.
//!
//! The worker starts after the jobs are created (and Redis's memory read),
//! as BullMQ's does: fires due while the producer was busy run as soon as
//! it starts, by the calendar jobs' default missed-run rule (catch up),
//! [`LEAD`] before the window opens.

use std::collections::hash_map::{Entry, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use schedulers::calendar::Calendar;
use schedulers_redis::{Config, Job, LocalRedis, RedisScheduler, Worker};

use super::bench::{node_counters, BenchError};
use crate::calendar::{self, CalendarRun, Schedule, EARLY_TOLERANCE_US};
use crate::record::{Measurement, SubjectKind};
use crate::runner::{measure, RunContext, RunError, Runner, Subject, Unavailable};
use crate::spec::{Calendar as CalendarSpec, Workload, WorkloadKind};

/// The subject's name.
pub const NAME: &str = "redis-cron";

/// Jobs per pipelined `schedule_many` call while creating the schedules.
pub const BATCH: usize = 1_000;

/// The time between the worker's start and the window's (rounded up to a
/// whole second): room for the fires that came due during the creation.
pub const LEAD: Duration = Duration::from_secs(2);

/// The job kind of every calendar job here.
const KIND: &str = "calendar";

/// Job `k`'s id.
fn job_id(k: usize) -> String {
    format!("c{k}")
}

/// The subject, for [`super::subjects`].
pub fn subject() -> Subject {
    Subject {
        name: NAME,
        kind: SubjectKind::Algorithm,
        about: "schedulers-redis calendar jobs on a fresh local Redis: Job::on_calendar per schedule (the cron \
         expression in its zone, missed runs caught up), created pipelined 1,000 at a time, then one in-process \
         Worker with the workload's threads, default settings",
        workloads: &[WorkloadKind::Calendar],
        runner: Arc::new(|| {
            if schedulers_redis::find_redis_server().is_none() {
                return Err(Unavailable::from(
                    "redis-server is not installed (Debian: apt-get install redis-server)",
                ));
            }
            Ok(Box::new(RedisCron) as Box<dyn Runner>)
        }),
        timers: None,
    }
}

/// The runner: one measurement per run.
#[derive(Debug)]
struct RedisCron;

impl Runner for RedisCron {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        let c = calendar::section(workload)?;
        ctx.progress.set_length(3);
        ctx.progress.set_position(0);
        let run = measure_run(c, workload.grace.0, ctx)?;
        ctx.progress.set_position(3);
        calendar::figures(workload, &run)
    }
}

fn measure_run(
    c: &CalendarSpec,
    grace: Duration,
    ctx: &RunContext,
) -> Result<CalendarRun, BenchError> {
    let n = c.schedules as usize;
    let redis = LocalRedis::start()?;
    let url = redis.url();
    let mut admin = redis::Client::open(url.as_str())?.get_connection()?;
    let config = Config::default();
    let producer = RedisScheduler::connect(&url, config.clone())?;

    // One calendar per distinct expression: parsing is not what is timed.
    let mut calendars: HashMap<String, Calendar> = HashMap::new();
    let crons: Vec<Schedule> = (0..n).map(|k| Schedule::of(c, k)).collect();
    for cron in &crons {
        if let Entry::Vacant(slot) = calendars.entry(cron.expr()) {
            let cal = Calendar::parse_in(slot.key(), &cron.zone)
                .map_err(schedulers_redis::Error::from)?;
            slot.insert(cal);
        }
    }
    let memory0 = keys_memory(&mut admin)?;
    let t0 = measure::now();
    for from in (0..n).step_by(BATCH) {
        let jobs = (from..n.min(from + BATCH))
            .map(|k| Job::new(job_id(k), KIND)?.on_calendar(&calendars[&crons[k].expr()]))
            .collect::<Result<Vec<_>, _>>()?;
        for r in producer.schedule_many(&jobs)? {
            r?;
        }
    }
    let schedule_ns = measure::now().duration_since(t0).as_nanos() as f64 / n.max(1) as f64;
    let bytes = keys_memory(&mut admin)?.saturating_sub(memory0) as f64 / n.max(1) as f64;
    ctx.progress.set_position(1);

    let fires: Arc<Mutex<Vec<(u32, i64)>>> = Arc::new(Mutex::new(Vec::new()));
    let seen = fires.clone();
    let worker = Worker::builder(&url, config)
        .threads(c.threads as usize)
        .name(NAME)
        .handler(KIND, move |fire| {
            let at = calendar::unix_us(SystemTime::now());
            // Not one of ours: a schedule number past the workload's, which
            // the figures refuse.
            let k = fire
                .id
                .strip_prefix('c')
                .and_then(|k| k.parse().ok())
                .unwrap_or(u32::MAX);
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((k, at));
            Ok(())
        })
        .start()?;

    // One reading of both clocks: the window's start on the monotonic clock.
    let (mono, wall) = (measure::now(), calendar::unix_us(SystemTime::now()));
    let start_us = calendar::whole_second_after(wall, LEAD);
    let start = mono + Duration::from_micros((start_us - wall).max(0) as u64);
    measure::wait_until(start);
    let (cpu0, redis0) = (measure::cpu_process(), node_counters(&mut admin)?.cpu_s);
    measure::wait_until(start + c.run_for.0 + grace);
    let (cpu1, redis1) = (measure::cpu_process(), node_counters(&mut admin)?.cpu_s);
    ctx.progress.set_position(2);
    worker.shutdown();
    worker.join();
    drop(redis);

    let mut fires = std::mem::take(&mut *fires.lock().unwrap_or_else(PoisonError::into_inner));
    fires.retain(|&(_, at)| at >= start_us - EARLY_TOLERANCE_US);
    Ok(CalendarRun {
        start_us,
        schedule_ns,
        cpu_us: cpu1.saturating_sub(cpu0).as_secs_f64() * 1e6,
        store_cpu_us: Some((redis1 - redis0).max(0.0) * 1e6),
        bytes: Some(bytes),
        fires,
    })
}

/// What Redis's keys take, bytes: `MEMORY USAGE` (every element,
/// `SAMPLES 0`) summed over every key, read with nothing else running.
/// Unlike `used_memory` this moves only with the data: `used_memory` also
/// holds client buffers, whose accounting lags, so on a few dozen schedules
/// its growth came out negative.
fn keys_memory(con: &mut redis::Connection) -> Result<u64, BenchError> {
    let keys: Vec<Vec<u8>> = redis::cmd("SCAN")
        .cursor_arg(0)
        .arg("COUNT")
        .arg(1000)
        .clone()
        .iter(con)?
        .collect::<Result<_, _>>()?;
    let mut total = 0;
    for chunk in keys.chunks(1000) {
        let mut pipe = redis::pipe();
        for k in chunk {
            pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
        }
        // A key gone since the scan reads as nil.
        let sizes: Vec<Option<u64>> = pipe.query(con)?;
        total += sizes.into_iter().flatten().sum::<u64>();
    }
    Ok(total)
}
