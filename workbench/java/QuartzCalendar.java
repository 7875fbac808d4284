package peers;

import java.time.Instant;
import java.util.Date;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.atomic.AtomicInteger;
import org.quartz.CronScheduleBuilder;
import org.quartz.Job;
import org.quartz.JobBuilder;
import org.quartz.JobExecutionContext;
import org.quartz.JobKey;
import org.quartz.Scheduler;
import org.quartz.SchedulerException;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.TriggerKey;

/**
 * The {@code calendar} workload on Quartz: N {@code CronTrigger}s, schedule
 * {@code k} firing every {@code every} seconds at second {@code k mod every}
 * of the minute ({@code "S/E * * * * ?"}, or {@code "S * * * * ?"} once a
 * minute) in the workload's time zone, each with its own job, as Quartz users
 * write a calendar job. The in-memory peer runs it in the harness's JVM
 * ({@link #inMemory}); the PostgreSQL cluster's driver ({@code QuartzCluster})
 * creates the triggers in the database and its workers fire them.
 *
 * <p>Every schedule starts at the same whole second {@code T0}, chosen after
 * timing the creation of a few throwaway schedules so that creating all of
 * them ends well before it; the workbench counts the fires whose intended
 * instant lies in {@code [T0, T0 + run_for)} and computes lateness from the
 * wall-clock instant the cron expression names (the Rust side:
 * {@code workbench::calendar}). A fire is recorded as (schedule, wall-clock
 * µs from {@code Instant.now()}).
 */
final class QuartzCalendar {
    private QuartzCalendar() {
    }

    /** The calendar section of a workload. */
    static final class Spec {
        final int schedules;
        final int everyS;
        final long runForMs;
        final long graceMs;
        final String zone;

        Spec(int schedules, int everyS, long runForMs, long graceMs, String zone) {
            if (schedules < 1 || everyS < 1 || everyS > 60 || 60 % everyS != 0 || runForMs < 1) {
                throw new IllegalArgumentException("calendar: 1+ schedules, every a divisor of 60 s, run_for above zero (got "
                    + schedules + ", " + everyS + " s, " + runForMs + " ms)");
            }
            try {
                java.time.ZoneId.of(zone);
            } catch (java.time.DateTimeException e) {
                throw new IllegalArgumentException("calendar.zone: " + e.getMessage());
            }
            this.schedules = schedules;
            this.everyS = everyS;
            this.runForMs = runForMs;
            this.graceMs = graceMs;
            this.zone = zone;
        }

        /** From the serde JSON of {@code workbench::spec::Workload} (profile applied). */
        static Spec of(Map<String, Object> w) {
            Map<String, Object> c = Harness.map(w.get("calendar"), "workload.calendar");
            long grace = w.get("grace") == null ? 1_000_000_000L : Dist.duration(w, "grace", "workload");
            long every = Dist.duration(c, "every", "workload.calendar");
            if (every % 1_000_000_000L != 0) {
                throw new IllegalArgumentException("workload.calendar.every: whole seconds");
            }
            return new Spec((int) Harness.num(c, "schedules", "workload.calendar"), (int) (every / 1_000_000_000L),
                Dist.duration(c, "run_for", "workload.calendar") / 1_000_000L, grace / 1_000_000L,
                Harness.str(c, "zone", "workload.calendar"));
        }

        /** Schedule {@code k}'s cron expression, in Quartz's dialect. */
        String cron(int k) {
            int s = k % everyS;
            return everyS == 60 ? s + " * * * * ?" : s + "/" + everyS + " * * * * ?";
        }

        /** Room for every fire a schedule can make from its creation to the end of the window. */
        int capacity(long createMs) {
            long span = createMs + runForMs + graceMs + 2_000;
            return (int) Math.min(Integer.MAX_VALUE - 8, (long) schedules * (span / (everyS * 1000L) + 2));
        }
    }

    /** Where fires go: the harness's recorder, or a cluster worker's stdout. */
    interface Sink {
        void fired(int k, long us);
    }

    /** The sink of this JVM's calendar jobs (one calendar run at a time per JVM). */
    static volatile Sink sink;

    /** Wall-clock microseconds since the Unix epoch. */
    static long nowMicros() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1_000;
    }

    /** The job of calendar schedule {@code k} (its key is {@code c<k>}). */
    public static final class Fire implements Job {
        @Override
        public void execute(JobExecutionContext ctx) {
            long us = nowMicros();
            Sink s = sink;
            if (s != null) {
                s.fired(Integer.parseInt(ctx.getJobDetail().getKey().getName().substring(1)), us);
            }
        }
    }

    /** Fires kept in preallocated arrays. */
    static final class Recorder implements Sink {
        final int[] who;
        final long[] at;
        final AtomicInteger n = new AtomicInteger();

        Recorder(int capacity) {
            who = new int[capacity];
            at = new long[capacity];
        }

        @Override
        public void fired(int k, long us) {
            int j = n.getAndIncrement();
            if (j < at.length) {
                who[j] = k;
                at[j] = us;
            }
        }

        /** {@code [[k, us], ...]} of the fires from {@code fromUs} on; fails if fires were lost. */
        String json(long fromUs) {
            int m = n.get();
            if (m > at.length) {
                throw new IllegalStateException("calendar: " + m + " fires, room for " + at.length);
            }
            StringBuilder b = new StringBuilder("[");
            for (int j = 0; j < m; j++) {
                if (at[j] >= fromUs) {
                    b.append(b.length() > 1 ? "," : "").append('[').append(who[j]).append(',').append(at[j]).append(']');
                }
            }
            return b.append(']').toString();
        }
    }

    static JobKey jobKey(int k) {
        return new JobKey("c" + k);
    }

    /** Schedule {@code k}: its job and its cron trigger, starting at {@code startMs}. */
    static void add(Scheduler s, Spec spec, int k, long startMs, String group) throws SchedulerException {
        JobKey jk = new JobKey("c" + k, group);
        Trigger t = TriggerBuilder.newTrigger()
            .withIdentity(new TriggerKey("c" + k, group))
            .forJob(jk)
            .startAt(new Date(startMs))
            .withSchedule(CronScheduleBuilder.cronSchedule(spec.cron(k)).inTimeZone(TimeZone.getTimeZone(spec.zone)))
            .build();
        s.scheduleJob(JobBuilder.newJob(Fire.class).withIdentity(jk).build(), t);
    }

    /**
     * The common start of every schedule: a whole second after creating them
     * all, by the cost of creating {@code probe} throwaway schedules (an hour
     * out, then deleted) twice over, and at least {@code minLeadMs} ahead.
     */
    static long start(Scheduler s, Spec spec, int probe, long minLeadMs) throws SchedulerException {
        long far = System.currentTimeMillis() + 3_600_000L;
        long t0 = System.nanoTime();
        for (int k = 0; k < probe; k++) {
            add(s, spec, k, far, "probe");
        }
        double perMs = (System.nanoTime() - t0) / 1e6 / probe;
        for (int k = 0; k < probe; k++) {
            s.unscheduleJob(new TriggerKey("c" + k, "probe"));
        }
        long lead = Math.max(minLeadMs, (long) (2 * perMs * spec.schedules) + 2_000);
        return (System.currentTimeMillis() + lead + 999) / 1000 * 1000;
    }

    /**
     * Creates every schedule starting at {@code startMs}; returns the ns per
     * schedule. Fails if creating them took past {@code startMs}.
     */
    static double create(Scheduler s, Spec spec, long startMs) throws SchedulerException {
        long t0 = System.nanoTime();
        for (int k = 0; k < spec.schedules; k++) {
            add(s, spec, k, startMs, null);
        }
        double ns = (double) (System.nanoTime() - t0) / spec.schedules;
        long left = startMs - System.currentTimeMillis();
        if (left < 0) {
            throw new IllegalStateException("calendar: creating " + spec.schedules + " schedules ended " + -left
                + " ms after their start, beyond the lead measured on a few");
        }
        return ns;
    }

    /** The run's report, as {@code workbench::calendar::CalendarRun} reads it. */
    static String report(long startMs, String fires, double scheduleNs, double cpuUs, double storeCpuUs, double bytes) {
        return "{\"start_us\":" + startMs * 1000 + ",\"schedule_ns\":" + Json.number(scheduleNs) + ",\"cpu_us\":" + Json.number(cpuUs)
            + (storeCpuUs >= 0 ? ",\"store_cpu_us\":" + Json.number(storeCpuUs) : "")
            + ",\"bytes\":" + Json.number(bytes) + ",\"fires\":" + fires + "}";
    }

    /**
     * The in-memory peer's calendar run, in this JVM, on its fresh started
     * scheduler {@code s} (shut down at the end): the schedules created, heap
     * per schedule after full collections, then the window watched; CPU is
     * the whole process's over the window and the grace after it.
     */
    static String inMemory(Scheduler s, Spec spec) throws Exception {
        try {
            long startMs = start(s, spec, Math.min(100, spec.schedules), 2_000);
            Recorder rec = new Recorder(spec.capacity(startMs - System.currentTimeMillis()));
            sink = rec;
            long before = Timeline.usedAfterGc();
            double ns = create(s, spec, startMs);
            long held = Math.max(0, Timeline.usedAfterGc() - before);
            Timeline.waitUntil(System.nanoTime() + (startMs - System.currentTimeMillis()) * 1_000_000L);
            long cpu0 = Timeline.cpuNanos();
            long end = startMs + spec.runForMs + spec.graceMs;
            Timeline.waitUntil(System.nanoTime() + Math.max(0, end - System.currentTimeMillis()) * 1_000_000L);
            long cpu = Timeline.cpuNanos() - cpu0;
            s.shutdown(true);
            sink = null;
            return report(startMs, rec.json(startMs * 1000 - 1_000_000), ns, cpu / 1e3, -1, (double) held / spec.schedules);
        } finally {
            sink = null;
        }
    }
}
