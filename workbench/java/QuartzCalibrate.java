package peers;

import java.util.Arrays;
import java.util.Collections;
import java.util.Date;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import org.quartz.Job;
import org.quartz.JobBuilder;
import org.quartz.JobExecutionContext;
import org.quartz.JobKey;
import org.quartz.Scheduler;
import org.quartz.SimpleScheduleBuilder;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.TriggerKey;

/**
 * The Quartz peer's set-up ({@link QuartzPeer#inMemory}: Quartz's defaults,
 * RAMJobStore, 2 pool threads) measured outside the workbench, by the
 * definitions of the independent harness ({@code shared/reference/
 * peer-calibration.md}), with none of the harness's code (no {@code Peer},
 * no {@code Timeline}): one workload per JVM, one warm-up run at a tenth of
 * the size first.
 *
 * <pre>
 *   java peers.QuartzCalibrate w1 [N]   N one-shots due 10-30 s, scheduled in a loop, 99% cancelled in a random order
 *   java peers.QuartzCalibrate w2 [N [MAX_MS]]   N one-shots due uniform(0, MAX_MS) ms (2000), all fire: signed lateness
 *   java peers.QuartzCalibrate w3 [N [RUNS]]   N fixed-rate tasks every 10 ms, first at +20 + (i mod 10) ms: |start - ideal|
 * </pre>
 *
 * <p>Prints one JSON line: W1 schedule and cancel ns per call (wall time of
 * each loop / its count, the harness's definition, and the calling thread's
 * CPU time / its count, the workbench's, which a busy shared machine does not
 * inflate) and heap bytes per timer (after 3 full collections);
 * W2 signed lateness p50, p99, min and max in µs from the clock read before
 * the schedule call plus the delay in whole ms, the p50 with early fires as
 * 0 (as the workbench counts them), how many fired and how many early; W3 the
 * p99 of |start − ideal| over runs 0..RUNS-1, µs.
 */
final class QuartzCalibrate {
    private QuartzCalibrate() {
    }

    /** Fire times of W2 (by timer) and W3 (by task and run), ns. */
    static AtomicLongArray at;
    static AtomicIntegerArray runs;
    static int perTask;
    static final AtomicInteger FIRED = new AtomicInteger();

    /** W1's task: nothing. */
    public static final class Nothing implements Job {
        @Override
        public void execute(JobExecutionContext ctx) {
        }
    }

    /** W2's task: its fire time, by the number in its job's name. */
    public static final class Stamp implements Job {
        @Override
        public void execute(JobExecutionContext ctx) {
            long t = System.nanoTime();
            at.set(Integer.parseInt(ctx.getJobDetail().getKey().getName().substring(1)), t);
            FIRED.incrementAndGet();
        }
    }

    /** W3's task: each run's start, by task and run. */
    public static final class Tick implements Job {
        @Override
        public void execute(JobExecutionContext ctx) {
            long t = System.nanoTime();
            int i = Integer.parseInt(ctx.getJobDetail().getKey().getName().substring(1));
            int k = runs.getAndIncrement(i);
            if (k < perTask) {
                at.set(i * perTask + k, t);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Harness.quietLogs();
        if (args.length < 1) {
            System.err.println("usage: java peers.QuartzCalibrate w1|w2|w3 [N [MAX_MS|RUNS]]");
            System.exit(2);
        }
        int n = args.length > 1 ? Integer.parseInt(args[1]) : (args[0].equals("w3") ? 1000 : args[0].equals("w2") ? 100_000 : 1_000_000);
        String out;
        switch (args[0]) {
            case "w1":
                w1(Math.max(1, n / 10));
                out = w1(n);
                break;
            case "w2": {
                long max = args.length > 2 ? Long.parseLong(args[2]) : 2000;
                w2(Math.max(1, n / 10), max);
                out = w2(n, max);
                break;
            }
            case "w3": {
                int r = args.length > 2 ? Integer.parseInt(args[2]) : 300;
                w3(Math.max(1, n / 10), r);
                out = w3(n, r);
                break;
            }
            default:
                throw new IllegalArgumentException("w1, w2 or w3, not " + args[0]);
        }
        System.out.println(out);
        System.exit(0);
    }

    private static Scheduler started(String what) throws Exception {
        Scheduler s = QuartzPeer.inMemory("calibrate-" + what + "-" + System.nanoTime(), QuartzPeer.THREADS);
        s.start();
        return s;
    }

    private static long heapAfterGc() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        for (int k = 0; k < 3; k++) {
            System.gc();
            Thread.sleep(20);
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    private static Trigger once(String name, long atMs) {
        return TriggerBuilder.newTrigger().withIdentity(name).forJob(name).startAt(new Date(atMs)).build();
    }

    static String w1(int n) throws Exception {
        Scheduler s = started("w1");
        Random rnd = new Random(1);
        TriggerKey[] keys = new TriggerKey[n];
        long before = heapAfterGc();
        long now = System.currentTimeMillis();
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long c0 = threads.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            String name = "t" + i;
            s.scheduleJob(JobBuilder.newJob(Nothing.class).withIdentity(name).build(), once(name, now + 10_000 + rnd.nextInt(20_000)));
            keys[i] = new TriggerKey(name);
        }
        long t1 = System.nanoTime();
        long c1 = threads.getCurrentThreadCpuTime();
        long held = heapAfterGc() - before;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        List<Integer> perm = Arrays.asList(order);
        Collections.shuffle(perm, rnd);
        int cancels = (int) (n * 0.99);
        int[] chosen = new int[cancels];
        for (int i = 0; i < cancels; i++) {
            chosen[i] = perm.get(i);
        }
        int stopped = 0;
        long c2 = threads.getCurrentThreadCpuTime();
        long t2 = System.nanoTime();
        for (int i : chosen) {
            stopped += s.unscheduleJob(keys[i]) ? 1 : 0;
        }
        long t3 = System.nanoTime();
        long c3 = threads.getCurrentThreadCpuTime();
        s.shutdown(true);
        if (stopped != cancels) {
            throw new IllegalStateException("w1: " + stopped + " of " + cancels + " cancels stopped a timer");
        }
        return "{\"w1\":{\"n\":" + n + ",\"schedule_ns\":" + Json.number((double) (t1 - t0) / n)
            + ",\"cancel_ns\":" + Json.number((double) (t3 - t2) / cancels)
            + ",\"schedule_cpu_ns\":" + Json.number((double) (c1 - c0) / n)
            + ",\"cancel_cpu_ns\":" + Json.number((double) (c3 - c2) / cancels)
            + ",\"bytes_per_timer\":" + Json.number((double) held / n) + "}}";
    }

    static String w2(int n, long maxMs) throws Exception {
        Scheduler s = started("w2");
        Random rnd = new Random(2);
        at = new AtomicLongArray(n);
        FIRED.set(0);
        long[] deadline = new long[n];
        long lastDue = 0;
        for (int i = 0; i < n; i++) {
            long delayMs = (long) Math.ceil(rnd.nextDouble() * maxMs);
            String name = "t" + i;
            long t = System.nanoTime();
            s.scheduleJob(JobBuilder.newJob(Stamp.class).withIdentity(name).build(), once(name, System.currentTimeMillis() + delayMs));
            deadline[i] = t + delayMs * 1_000_000L;
            lastDue = Math.max(lastDue, deadline[i]);
        }
        long giveUp = lastDue + 10_000_000_000L;
        while (FIRED.get() < n && System.nanoTime() - giveUp < 0) {
            Thread.sleep(5);
        }
        s.shutdown(true);
        long[] late = new long[n];
        int fired = 0;
        for (int i = 0; i < n; i++) {
            long t = at.get(i);
            if (t != 0) {
                late[fired++] = t - deadline[i];
            }
        }
        late = Arrays.copyOf(late, fired);
        Arrays.sort(late);
        return "{\"w2\":{\"n\":" + n + ",\"fired\":" + fired
            + ",\"p50_us\":" + us(pick(late, 0.5)) + ",\"p99_us\":" + us(pick(late, 0.99))
            + ",\"p50_clamped_us\":" + us(Math.max(0, pick(late, 0.5))) + ",\"early\":" + early(late)
            + ",\"min_us\":" + us(fired > 0 ? late[0] : 0) + ",\"max_us\":" + us(fired > 0 ? late[fired - 1] : 0) + "}}";
    }

    static String w3(int n, int r) throws Exception {
        Scheduler s = started("w3");
        perTask = r;
        at = new AtomicLongArray(n * r);
        runs = new AtomicIntegerArray(n);
        long[] first = new long[n];
        for (int i = 0; i < n; i++) {
            String name = "p" + i;
            long offsetMs = 20 + i % 10;
            long t = System.nanoTime();
            Trigger trigger = TriggerBuilder.newTrigger().withIdentity(name).forJob(name)
                .startAt(new Date(System.currentTimeMillis() + offsetMs))
                .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMilliseconds(10).repeatForever())
                .build();
            s.scheduleJob(JobBuilder.newJob(Tick.class).withIdentity(name).build(), trigger);
            first[i] = t + offsetMs * 1_000_000L;
        }
        long end = System.nanoTime() + (30 + r * 10L) * 1_000_000L + 2_000_000_000L;
        while (System.nanoTime() - end < 0) {
            boolean all = true;
            for (int i = 0; i < n && all; i++) {
                all = runs.get(i) >= r;
            }
            if (all) {
                break;
            }
            Thread.sleep(10);
        }
        s.shutdown(true);
        long[] jitter = new long[n * r];
        int m = 0;
        for (int i = 0; i < n; i++) {
            int kept = Math.min(r, runs.get(i));
            for (int k = 0; k < kept; k++) {
                jitter[m++] = Math.abs(at.get(i * r + k) - (first[i] + k * 10_000_000L));
            }
        }
        jitter = Arrays.copyOf(jitter, m);
        Arrays.sort(jitter);
        return "{\"w3\":{\"n\":" + n + ",\"runs\":" + m + ",\"p50_us\":" + us(pick(jitter, 0.5)) + ",\"p99_us\":" + us(pick(jitter, 0.99)) + "}}";
    }

    private static int early(long[] late) {
        int e = 0;
        for (long l : late) {
            e += l < 0 ? 1 : 0;
        }
        return e;
    }

    private static long pick(long[] sorted, double p) {
        return sorted.length == 0 ? 0 : sorted[(int) Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))];
    }

    private static String us(long ns) {
        return Json.number(ns / 1e3);
    }
}
