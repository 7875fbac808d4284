package peers;

import java.util.Timer;
import java.util.TimerTask;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * One Java original under test, behind the few operations every workload
 * needs. Each peer builds the task object its API naturally takes (a
 * {@code TimerTask} subclass, a {@code Runnable}, a Netty {@code TimerTask}),
 * carrying an index into the workload's preallocated arrays, so a fire is one
 * store and nothing else.
 */
abstract class Peer {
    /** Where a fired task reports: {@code fired(i)} stores a timestamp. */
    abstract static class Sink {
        abstract void fired(int i, long tag);
    }

    final String name;

    Peer(String name) {
        this.name = name;
    }

    /** One-shot after {@code delayNs}; returns the handle the application keeps. */
    abstract Object schedule(long delayNs, Sink sink, int i, long tag);

    /**
     * The delay the peer's API was actually given for {@code delayNs}: the
     * deadline lateness is measured from (java.util.Timer takes whole ms).
     */
    long apiDelay(long delayNs) {
        return delayNs;
    }

    /** Cancels a pending timer; true iff this call stopped it. */
    abstract boolean cancel(Object handle);

    /**
     * Moves a pending timer to {@code delayNs} from now; returns the new
     * handle, or null if the timer was no longer pending (fired or
     * cancelled). None of the originals has a reset, so this is what their
     * users write: cancel, and if that stopped it, schedule anew.
     */
    Object reset(Object handle, long delayNs, Sink sink, int i, long tag) {
        if (!cancel(handle)) {
            return null;
        }
        return schedule(delayNs, sink, i, tag);
    }

    /** Fixed-rate: next start = previous scheduled start + period. */
    abstract Object fixedRate(long initialNs, long periodNs, Sink sink, int i);

    /** Fixed-delay, in the original's own sense (see {@link #semantics}). */
    abstract Object fixedDelay(long initialNs, long periodNs, Sink sink, int i);

    /**
     * Waits until {@code pending} just-scheduled timers sit in the structure
     * they will be measured in (only Netty moves them there on later ticks).
     */
    void settle(int pending) {
    }

    /**
     * Runs the calendar workload {@code workload} (its serde JSON) on this
     * peer and returns its report ({@code workbench::calendar::CalendarRun}
     * as JSON). Only a peer with a calendar API has one.
     */
    String calendar(java.util.Map<String, Object> workload) throws Exception {
        throw new UnsupportedOperationException(name + " has no calendar API");
    }

    /** Stops the scheduler, drops what is pending, waits for its threads. */
    abstract void shutdown() throws InterruptedException;

    /** How the original differs from our contract, one line for the report. */
    abstract String semantics();

    /** Every peer created since the last {@link #stopAll}. */
    private static final java.util.List<Peer> CREATED = new java.util.ArrayList<>();

    /**
     * Stops every peer created since the last call (stopping twice is
     * harmless for all of them), so a run that fails half-way leaves no timer
     * threads behind.
     */
    static void stopAll() throws InterruptedException {
        for (Peer p : CREATED) {
            p.shutdown();
        }
        CREATED.clear();
    }

    /** The peers by name, or null for a name this class does not know. */
    static Peer create(String name) throws Exception {
        Peer p = make(name);
        if (p != null) {
            CREATED.add(p);
        }
        return p;
    }

    private static Peer make(String name) throws Exception {
        switch (name) {
            case "jdk-timer":
                return new JdkTimer(name);
            case "jdk-stpe-1":
                return new Stpe(name, 1, false);
            case "jdk-stpe-2":
                return new Stpe(name, 2, false);
            case "jdk-stpe-1-roc":
                return new Stpe(name, 1, true);
            case "jdk-stpe-2-roc":
                return new Stpe(name, 2, true);
            case "netty-1ms":
            case "netty-100ms": {
                long tickMs = name.equals("netty-1ms") ? 1 : 100;
                // Loaded by name so the JDK peers run without the Netty jar.
                Class<?> c = Class.forName("peers.NettyPeer");
                return (Peer) c.getDeclaredConstructor(String.class, long.class).newInstance(name, tickMs);
            }
            case "quartz": {
                // By name too: the others run without the Quartz jar.
                Class<?> c = Class.forName("peers.QuartzPeer");
                return (Peer) c.getDeclaredConstructor(String.class).newInstance(name);
            }
            default:
                return null;
        }
    }

    static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /** java.util.Timer works in whole milliseconds: round up, never early on our side. */
    static long ceilMs(long ns) {
        return Math.max(0, (ns + 999_999) / 1_000_000);
    }

    /** {@code java.util.Timer}: one thread, binary heap, tasks inline, ms resolution. */
    static final class JdkTimer extends Peer {
        private final Timer timer;

        JdkTimer(String name) {
            super(name);
            timer = new Timer(name, true);
        }

        static final class Task extends TimerTask {
            final Sink sink;
            final int i;
            final long tag;

            Task(Sink sink, int i, long tag) {
                this.sink = sink;
                this.i = i;
                this.tag = tag;
            }

            @Override
            public void run() {
                sink.fired(i, tag);
            }
        }

        @Override
        Object schedule(long delayNs, Sink sink, int i, long tag) {
            Task t = new Task(sink, i, tag);
            timer.schedule(t, ceilMs(delayNs));
            return t;
        }

        @Override
        long apiDelay(long delayNs) {
            return ceilMs(delayNs) * 1_000_000L;
        }

        @Override
        boolean cancel(Object handle) {
            return ((TimerTask) handle).cancel();
        }

        @Override
        Object fixedRate(long initialNs, long periodNs, Sink sink, int i) {
            Task t = new Task(sink, i, 0);
            timer.scheduleAtFixedRate(t, ceilMs(initialNs), Math.max(1, ceilMs(periodNs)));
            return t;
        }

        @Override
        Object fixedDelay(long initialNs, long periodNs, Sink sink, int i) {
            Task t = new Task(sink, i, 0);
            timer.schedule(t, ceilMs(initialNs), Math.max(1, ceilMs(periodNs)));
            return t;
        }

        @Override
        void shutdown() {
            timer.cancel();
        }

        @Override
        String semantics() {
            return "ms resolution on the wall clock (currentTimeMillis): the harness rounds delays up to whole ms and measures "
                + "lateness from that ms deadline; Timer's own truncation can fire up to 1 ms before it (counted as early); cancel is lazy (a cancelled task "
                + "stays in the heap until it reaches the head or purge()); equal deadlines are not FIFO; "
                + "fixed-delay counts from the start of the previous run; a throwing task kills the timer";
        }
    }

    /** {@code ScheduledThreadPoolExecutor}: DelayedWorkQueue heap, leader/follower, N workers. */
    static final class Stpe extends Peer {
        private final ScheduledThreadPoolExecutor pool;
        private final boolean removeOnCancel;

        Stpe(String name, int threads, boolean removeOnCancel) {
            super(name);
            this.removeOnCancel = removeOnCancel;
            pool = new ScheduledThreadPoolExecutor(threads, daemon(name));
            pool.setRemoveOnCancelPolicy(removeOnCancel);
            pool.prestartAllCoreThreads();
        }

        static final class Job implements Runnable {
            final Sink sink;
            final int i;
            final long tag;

            Job(Sink sink, int i, long tag) {
                this.sink = sink;
                this.i = i;
                this.tag = tag;
            }

            @Override
            public void run() {
                sink.fired(i, tag);
            }
        }

        @Override
        Object schedule(long delayNs, Sink sink, int i, long tag) {
            return pool.schedule(new Job(sink, i, tag), delayNs, TimeUnit.NANOSECONDS);
        }

        @Override
        boolean cancel(Object handle) {
            return ((ScheduledFuture<?>) handle).cancel(false);
        }

        @Override
        Object fixedRate(long initialNs, long periodNs, Sink sink, int i) {
            return pool.scheduleAtFixedRate(new Job(sink, i, 0), initialNs, periodNs, TimeUnit.NANOSECONDS);
        }

        @Override
        Object fixedDelay(long initialNs, long periodNs, Sink sink, int i) {
            return pool.scheduleWithFixedDelay(new Job(sink, i, 0), initialNs, periodNs, TimeUnit.NANOSECONDS);
        }

        @Override
        void shutdown() throws InterruptedException {
            pool.shutdownNow();
            pool.awaitTermination(10, TimeUnit.SECONDS);
        }

        @Override
        String semantics() {
            return removeOnCancel
                ? "removeOnCancel=true: cancel removes the task from the heap at once (O(log n) under the queue lock)"
                : "removeOnCancel=false (the default): a cancelled task stays in the heap until it reaches the head or purge()";
        }
    }
}
