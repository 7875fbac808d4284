package peers;

import java.io.IOException;
import java.io.InputStream;
import java.util.Date;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import org.quartz.Job;
import org.quartz.JobBuilder;
import org.quartz.JobDataMap;
import org.quartz.JobExecutionContext;
import org.quartz.JobExecutionException;
import org.quartz.JobKey;
import org.quartz.Scheduler;
import org.quartz.SchedulerException;
import org.quartz.SimpleScheduleBuilder;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.TriggerKey;
import org.quartz.impl.StdSchedulerFactory;

/**
 * Quartz 2.3 in memory (Debian libquartz2-java), as its users run it: a
 * {@code StdSchedulerFactory} scheduler with Quartz's own shipped defaults
 * ({@code org/quartz/quartz.properties} in its jar: {@code RAMJobStore},
 * {@code SimpleThreadPool}, misfire threshold 60 s, one trigger acquired at a
 * time), the pool sized like our executors ({@link #THREADS} threads). A timer
 * is a {@code JobDetail} and a {@code SimpleTrigger}; cancel is
 * {@code unscheduleJob}, reset {@code rescheduleJob}; fixed-rate is a repeating
 * {@code SimpleTrigger}, and fixed-delay (which Quartz has no trigger for) a
 * one-shot trigger the job re-arms after each run, as Quartz users write it.
 * Kept in its own class and loaded by name, so the other peers run without
 * the jar.
 *
 * <p>Quartz schedules in wall-clock milliseconds ({@code Date}); its scheduler
 * thread fires a trigger once it is within 2 ms of its time, so a fire can come
 * up to about 3 ms before the nanosecond deadline the harness measures from
 * (the whole-millisecond deadline, as for {@code java.util.Timer}): those are
 * counted as early.
 */
final class QuartzPeer extends Peer {
    /** Worker threads: as many as our {@code stpe} and {@code jdk-stpe-2}. */
    static final int THREADS = 2;

    /** Where a trigger carries its timer. */
    static final String TASK = "task";

    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final Scheduler scheduler;

    QuartzPeer(String name) throws SchedulerException {
        super(name);
        scheduler = inMemory(name + "-" + INSTANCES.incrementAndGet(), THREADS);
        scheduler.start();
    }

    /**
     * Quartz's shipped defaults: the properties {@code StdSchedulerFactory}
     * reads when it is given none ({@code org/quartz/quartz.properties}).
     */
    static Properties defaults() {
        Properties p = new Properties();
        try (InputStream in = StdSchedulerFactory.class.getResourceAsStream("/org/quartz/quartz.properties")) {
            if (in == null) {
                throw new IllegalStateException("quartz.properties is not in the Quartz jar");
            }
            p.load(in);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read Quartz's quartz.properties: " + e, e);
        }
        return p;
    }

    /**
     * A scheduler (not started) on the {@code RAMJobStore} with Quartz's
     * defaults, its own instance name and {@code threads} pool threads: the
     * set-up of this peer, of its calendar runs and of the standalone
     * calibration ({@code QuartzCalibrate}).
     */
    static Scheduler inMemory(String instance, int threads) throws SchedulerException {
        Properties p = defaults();
        p.setProperty("org.quartz.scheduler.instanceName", instance);
        p.setProperty("org.quartz.threadPool.threadCount", Integer.toString(threads));
        return new StdSchedulerFactory(p).getScheduler();
    }

    /**
     * One timer's report: where it fires to, and whether it may still fire.
     * A one-shot run claims it; a cancel or a reset retires it, so a run
     * Quartz has already handed to a worker when the trigger is removed
     * (unscheduleJob and rescheduleJob cannot stop that one) does not count.
     */
    static final class Task {
        private static final AtomicIntegerFieldUpdater<Task> STATE = AtomicIntegerFieldUpdater.newUpdater(Task.class, "state");
        private static final int PENDING = 0;
        private static final int FIRED = 1;
        private static final int RETIRED = 2;

        final Sink sink;
        final int i;
        final long tag;
        final TriggerKey key;
        final boolean periodic;
        /** Fixed-delay: the job re-arms its trigger this many ms after each run (0: it does not). */
        final long rearmMs;
        volatile int state;

        Task(Sink sink, int i, long tag, TriggerKey key, boolean periodic, long rearmMs) {
            this.sink = sink;
            this.i = i;
            this.tag = tag;
            this.key = key;
            this.periodic = periodic;
            this.rearmMs = rearmMs;
        }

        boolean live() {
            return state == PENDING;
        }

        boolean claim() {
            return STATE.compareAndSet(this, PENDING, FIRED);
        }

        boolean retire() {
            return STATE.compareAndSet(this, PENDING, RETIRED);
        }
    }

    /** The job: Quartz makes one per run (SimpleJobFactory); the timer rides in its trigger's JobDataMap. */
    public static final class Fire implements Job {
        @Override
        public void execute(JobExecutionContext ctx) throws JobExecutionException {
            Task t = (Task) ctx.getTrigger().getJobDataMap().get(TASK);
            if (!t.periodic) {
                if (t.claim()) {
                    t.sink.fired(t.i, t.tag);
                }
                return;
            }
            if (!t.live()) {
                return;
            }
            t.sink.fired(t.i, 0);
            if (t.rearmMs > 0 && t.live()) {
                try {
                    // Null when a cancel removed the trigger meanwhile: then it stays removed.
                    ctx.getScheduler().rescheduleJob(t.key, oneShot(t, System.currentTimeMillis() + t.rearmMs));
                } catch (SchedulerException e) {
                    throw new JobExecutionException(e);
                }
            }
        }
    }

    static JobKey jobKey(int i) {
        return new JobKey("j" + i);
    }

    static TriggerKey triggerKey(int i) {
        return new TriggerKey("t" + i);
    }

    static JobDataMap carrying(Task t) {
        JobDataMap m = new JobDataMap();
        m.put(TASK, t);
        return m;
    }

    /** A one-shot trigger for {@code t} at wall-clock millisecond {@code atMs}. */
    static Trigger oneShot(Task t, long atMs) {
        return TriggerBuilder.newTrigger()
            .withIdentity(t.key)
            .forJob(jobKey(t.i))
            .usingJobData(carrying(t))
            .startAt(new Date(atMs))
            .build();
    }

    private Object add(Task t, Trigger trigger) {
        try {
            scheduler.scheduleJob(JobBuilder.newJob(Fire.class).withIdentity(jobKey(t.i)).build(), trigger);
        } catch (SchedulerException e) {
            throw new IllegalStateException(name + ": scheduleJob refused timer " + t.i + ": " + e, e);
        }
        return t;
    }

    @Override
    Object schedule(long delayNs, Sink sink, int i, long tag) {
        Task t = new Task(sink, i, tag, triggerKey(i), false, 0);
        return add(t, oneShot(t, System.currentTimeMillis() + ceilMs(delayNs)));
    }

    @Override
    long apiDelay(long delayNs) {
        return ceilMs(delayNs) * 1_000_000L;
    }

    @Override
    boolean cancel(Object handle) {
        Task t = (Task) handle;
        try {
            return scheduler.unscheduleJob(t.key) && t.retire();
        } catch (SchedulerException e) {
            throw new IllegalStateException(name + ": unscheduleJob failed: " + e, e);
        }
    }

    @Override
    Object reset(Object handle, long delayNs, Sink sink, int i, long tag) {
        Task old = (Task) handle;
        Task t = new Task(sink, i, tag, old.key, false, 0);
        try {
            if (scheduler.rescheduleJob(old.key, oneShot(t, System.currentTimeMillis() + ceilMs(delayNs))) == null) {
                return null;
            }
            if (!old.retire()) {
                // The old run was already under way: this reset came too late.
                scheduler.unscheduleJob(old.key);
                return null;
            }
        } catch (SchedulerException e) {
            throw new IllegalStateException(name + ": rescheduleJob failed: " + e, e);
        }
        return t;
    }

    @Override
    Object fixedRate(long initialNs, long periodNs, Sink sink, int i) {
        Task t = new Task(sink, i, 0, triggerKey(i), true, 0);
        Trigger trigger = TriggerBuilder.newTrigger()
            .withIdentity(t.key)
            .forJob(jobKey(i))
            .usingJobData(carrying(t))
            .startAt(new Date(System.currentTimeMillis() + ceilMs(initialNs)))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule()
                .withIntervalInMilliseconds(Math.max(1, ceilMs(periodNs)))
                .repeatForever())
            .build();
        return add(t, trigger);
    }

    @Override
    Object fixedDelay(long initialNs, long periodNs, Sink sink, int i) {
        Task t = new Task(sink, i, 0, triggerKey(i), true, Math.max(1, ceilMs(periodNs)));
        return add(t, oneShot(t, System.currentTimeMillis() + ceilMs(initialNs)));
    }

    @Override
    String calendar(java.util.Map<String, Object> workload) throws Exception {
        return QuartzCalendar.inMemory(scheduler, QuartzCalendar.Spec.of(workload));
    }

    @Override
    void shutdown() throws InterruptedException {
        try {
            // Not waiting: shutdown(true) joins the pool's threads, which poll
            // every 500 ms, and sweeps make a scheduler per cycle (100 cycles
            // cost 50 s). The threads end on their own within that, idle.
            scheduler.shutdown(false);
        } catch (SchedulerException e) {
            throw new IllegalStateException(name + ": shutdown failed: " + e, e);
        }
    }

    @Override
    String semantics() {
        return "Quartz's shipped defaults (RAMJobStore, one trigger acquired at a time, misfire threshold 60 s), SimpleThreadPool of "
            + THREADS + " threads; a JobDetail and a SimpleTrigger per timer; ms wall-clock deadlines (Date): the harness rounds delays up "
            + "to whole ms and measures lateness from that ms deadline, and the scheduler thread fires a trigger once it is within 2 ms of "
            + "its time, so a fire can come up to about 3 ms early (counted as early); a trigger due before the one the scheduler thread is "
            + "waiting for takes its place only if that one is more than 7 ms away; a run over 60 s late is a misfire (a one-shot then fires "
            + "at once, a repeating trigger skips to its next time); cancel is unscheduleJob, reset rescheduleJob; fixed-rate keeps its grid "
            + "and catches up within the misfire threshold; no fixed-delay trigger (the job re-arms its own one-shot trigger after each run)";
    }
}
