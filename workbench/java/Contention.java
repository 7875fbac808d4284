package peers;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The contention workload ({@code [contention]} of a spec) on a Java peer,
 * as {@code workbench::runner::contention} runs it on the Rust subjects: at
 * each thread count P, a fresh peer and P threads sharing it, each setting
 * request timeouts and clearing each {@code window} requests later.
 *
 * <p>Thread {@code k} draws its delays from {@code Rng(seed, k + 1)} (the
 * same at every P, and the same numbers as the Rust side), before anything
 * is timed. Each thread runs {@code warm} untimed pairs, then waits until
 * all P are ready; the last one to arrive notes the time and the process's
 * CPU and lets them go. Each then runs {@code pairs} pairs: cancel the
 * timeout set {@code window} requests before (a ring of live handles),
 * schedule a new one whose task holds the request's id and the thread's own
 * {@link Conn}; the last ones are cancelled at the end. After the last
 * thread's end and a 100 ms settling pause (work a peer defers to its own
 * thread counts; so does the collector's), the process's CPU again (every
 * thread's schedstat, the P threads still alive: an exited thread's is
 * gone). Figures per P, with P as the size: {@code pairs_per_s}
 * (every thread's pairs over the wall time from the start to the last
 * thread's end), {@code caller_cpu_per_pair} (the threads' own CPU clocks),
 * {@code cpu_per_pair} (the whole process), {@code pairs}, {@code parallelism}
 * (the threads' CPU over the wall time); then
 * {@code contended_pairs_per_s}, the least pairs/s at any P of 2 or more.
 * A cancel that did not stop its timeout, or a timeout that fired, fails
 * the run.
 */
final class Contention {
    private static final long SETTLE_NS = 100_000_000L;
    private static final long READY_LIMIT_NS = 120_000_000_000L;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private Contention() {
    }

    /** A thread's connection: what its timeouts' tasks point to. */
    static final class Conn extends Peer.Sink {
        final AtomicLong timedOut = new AtomicLong();

        @Override
        void fired(int i, long tag) {
            timedOut.incrementAndGet();
        }
    }

    /** The checked {@code contention} table of a spec. */
    static final class Spec {
        final String name;
        final long seed;
        final int[] threads;
        final int pairs;
        final int window;
        final int warm;
        final Dist delay;

        Spec(Map<String, Object> w, String f) {
            name = Harness.str(w, "name", f);
            seed = Harness.u64(w, "seed", f);
            String c = f + ".contention";
            Map<String, Object> m = Harness.map(w.get("contention"), c);
            List<Object> l = Harness.list(m, "threads", c);
            threads = new int[l.size()];
            for (int k = 0; k < threads.length; k++) {
                Object o = l.get(k);
                if (!(o instanceof Long) || (Long) o < 1 || (Long) o > 256 || (k > 0 && (Long) o <= threads[k - 1])) {
                    throw new IllegalArgumentException(c + ".threads: thread counts from 1 to 256, strictly ascending");
                }
                threads[k] = (int) (long) (Long) o;
            }
            if (threads.length == 0) {
                throw new IllegalArgumentException(c + ".threads: needs at least one thread count");
            }
            pairs = count(m, "pairs", c, -1);
            window = count(m, "window", c, 1000);
            warm = Math.min(pairs, m.get("warm") == null ? 20_000 : count(m, "warm", c, 0));
            delay = Dist.parse(m.get("delay"), c + ".delay");
        }

        private static int count(Map<String, Object> m, String key, String f, int dflt) {
            if (m.get(key) == null && dflt >= 0) {
                return dflt;
            }
            double v = Harness.num(m, key, f);
            if (v > Integer.MAX_VALUE || v != Math.rint(v) || (v < 1 && !key.equals("warm"))) {
                throw new IllegalArgumentException(f + "." + key + ": the Java harness takes whole numbers from 1 to 2^31 - 1");
            }
            return (int) v;
        }
    }

    /** Holds the threads until all are ready; the last notes the start. */
    private static final class Gate {
        private final int p;
        private int arrived;
        private boolean go;
        long t0;
        long cpu0;

        Gate(int p) {
            this.p = p;
        }

        synchronized void arrive() throws InterruptedException {
            arrived++;
            if (arrived == p) {
                t0 = System.nanoTime();
                cpu0 = Timeline.cpuNanos();
                go = true;
                notifyAll();
                return;
            }
            long limit = System.nanoTime() + READY_LIMIT_NS;
            while (!go) {
                long left = limit - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("only " + arrived + " of " + p + " threads were ready after 120 s");
                }
                wait(Math.max(1, left / 1_000_000));
            }
        }
    }

    /**
     * Schedules a timeout per delay (the first {@code n}), each cancelling
     * the one set {@code ring.length} requests before, then cancels what is
     * left (also after a failure); returns how many cancels stopped theirs.
     * Thread {@code t} of {@code p} numbers its timeouts {@code i * p + t}:
     * no two threads' live timeouts share a number (Quartz names its jobs
     * by it).
     */
    private static long pass(Peer peer, long[] delays, int n, Object[] ring, Conn conn, int t, int p) {
        long stopped = 0;
        int j = 0;
        try {
            for (int i = 0; i < n; i++) {
                Object h = ring[j];
                if (h != null) {
                    ring[j] = null;
                    if (peer.cancel(h)) {
                        stopped++;
                    }
                }
                ring[j] = peer.schedule(delays[i], conn, i * p + t, 0);
                if (++j == ring.length) {
                    j = 0;
                }
            }
        } finally {
            for (int k = 0; k < ring.length; k++) {
                if (ring[k] != null) {
                    if (peer.cancel(ring[k])) {
                        stopped++;
                    }
                    ring[k] = null;
                }
            }
        }
        return stopped;
    }

    /** Runs the workload {@code w} (serde JSON, profile applied) on {@code peer}; the measurements as JSON. */
    static String run(String peer, Map<String, Object> w) throws Exception {
        Spec s = new Spec(w, "workload");
        Timeline.Out out = new Timeline.Out();
        double contended = Double.NaN;
        for (int p : s.threads) {
            long[][] delays = new long[p][s.pairs];
            Conn[] conns = new Conn[p];
            for (int k = 0; k < p; k++) {
                Dist.Rng rng = new Dist.Rng(s.seed, k + 1);
                for (int i = 0; i < s.pairs; i++) {
                    delays[k][i] = s.delay.sample(rng);
                }
                conns[k] = new Conn();
            }
            Peer peerAtP = Peer.create(peer);
            Gate gate = new Gate(p);
            long[] end = new long[p];
            long[] cpu = new long[p];
            long[] stopped = new long[p];
            Throwable[] failed = new Throwable[p];
            Thread[] threads = new Thread[p];
            // The threads stay alive until the process's CPU is read: an
            // exited thread's schedstat is gone from /proc/self/task.
            CountDownLatch done = new CountDownLatch(p);
            CountDownLatch release = new CountDownLatch(1);
            // Start every level from a collected heap, so one level's garbage
            // is not collected in the next.
            System.gc();
            for (int k = 0; k < p; k++) {
                final int t = k;
                threads[k] = new Thread(() -> {
                    Object[] ring = new Object[s.window];
                    Throwable warmed = null;
                    try {
                        pass(peerAtP, delays[t], s.warm, ring, conns[t], t, p);
                    } catch (Throwable e) {
                        warmed = e;
                    }
                    try {
                        gate.arrive();
                        if (warmed != null) {
                            failed[t] = warmed;
                            return;
                        }
                        long c0 = THREADS.getCurrentThreadCpuTime();
                        stopped[t] = pass(peerAtP, delays[t], s.pairs, ring, conns[t], t, p);
                        end[t] = System.nanoTime();
                        cpu[t] = THREADS.getCurrentThreadCpuTime() - c0;
                    } catch (Throwable e) {
                        failed[t] = e;
                    } finally {
                        done.countDown();
                    }
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "contention-" + k);
                threads[k].start();
            }
            done.await();
            Timeline.waitUntil(System.nanoTime() + SETTLE_NS);
            long cpu1 = Timeline.cpuNanos();
            release.countDown();
            for (Thread t : threads) {
                t.join();
            }
            peerAtP.shutdown();
            for (int k = 0; k < p; k++) {
                if (failed[k] != null) {
                    throw new IllegalStateException("thread " + k + " of " + p + ": " + failed[k], failed[k]);
                }
            }
            long total = (long) p * s.pairs;
            long last = Long.MIN_VALUE;
            long stop = 0;
            long callers = 0;
            long fired = 0;
            for (int k = 0; k < p; k++) {
                last = Math.max(last, end[k]);
                stop += stopped[k];
                callers += cpu[k];
                fired += conns[k].timedOut.get();
            }
            if (stop != total || fired != 0) {
                throw new IllegalStateException("at P = " + p + ": " + stop + " of " + total + " cancels stopped their timeout and "
                    + fired + " timeouts fired; expected all and none");
            }
            double perS = total / (Math.max(1, last - gate.t0) / 1e9);
            out.at("pairs_per_s", p, perS, "pairs/s");
            out.at("caller_cpu_per_pair", p, (double) callers / total, "ns/pair");
            out.at("cpu_per_pair", p, (double) Math.max(0, cpu1 - gate.cpu0) / total, "ns/pair");
            out.at("pairs", p, stop, "count");
            out.at("parallelism", p, (double) callers / Math.max(1, last - gate.t0), "ratio");
            if (p >= 2 || s.threads.length == 1) {
                contended = Double.isNaN(contended) ? perS : Math.min(contended, perS);
            }
            System.err.printf("java-peers: %s: contention at P = %d: %.2fM pairs/s%n", peer, p, perS / 1e6);
        }
        if (!Double.isNaN(contended)) {
            out.add("contended_pairs_per_s", contended, "pairs/s");
        }
        return out.json();
    }
}
