package peers;

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import java.util.concurrent.TimeUnit;

/**
 * Netty's {@code HashedWheelTimer} (Debian libnetty-java, netty-common.jar):
 * a 512-slot wheel with the given tick, one worker, submissions through an MPSC
 * queue moved into buckets (at most 100 000 per tick). Kept in its own class
 * and loaded by name so the JDK peers work without the jar.
 *
 * <p>Netty has no periodic API; its users re-arm a timeout from inside the
 * task, which is what {@link Periodic} does: fixed-rate re-arms for the next
 * grid point, fixed-delay for {@code period} after the run.
 */
final class NettyPeer extends Peer {
    private final HashedWheelTimer timer;
    private final long tickMs;

    NettyPeer(String name, long tickMs) {
        super(name);
        this.tickMs = tickMs;
        timer = new HashedWheelTimer(daemon(name), tickMs, TimeUnit.MILLISECONDS, 512);
        timer.start();
    }

    static final class Task implements TimerTask {
        final Sink sink;
        final int i;
        final long tag;

        Task(Sink sink, int i, long tag) {
            this.sink = sink;
            this.i = i;
            this.tag = tag;
        }

        @Override
        public void run(Timeout timeout) {
            sink.fired(i, tag);
        }
    }

    /** A periodic task the way Netty users write one: re-armed by itself. */
    final class Periodic implements TimerTask {
        final Sink sink;
        final int i;
        final long periodNs;
        final boolean fixedRate;
        long next;
        volatile boolean cancelled;
        volatile Timeout current;

        Periodic(Sink sink, int i, long initialNs, long periodNs, boolean fixedRate) {
            this.sink = sink;
            this.i = i;
            this.periodNs = periodNs;
            this.fixedRate = fixedRate;
            this.next = System.nanoTime() + initialNs;
            current = timer.newTimeout(this, initialNs, TimeUnit.NANOSECONDS);
        }

        @Override
        public void run(Timeout timeout) {
            if (cancelled) {
                return;
            }
            sink.fired(i, 0);
            if (cancelled) {
                return;
            }
            long delay;
            if (fixedRate) {
                next += periodNs;
                delay = next - System.nanoTime();
            } else {
                delay = periodNs;
            }
            current = timer.newTimeout(this, delay, TimeUnit.NANOSECONDS);
        }

        boolean cancel() {
            boolean was = !cancelled;
            cancelled = true;
            Timeout t = current;
            if (t != null) {
                t.cancel();
            }
            return was;
        }
    }

    @Override
    Object schedule(long delayNs, Sink sink, int i, long tag) {
        return timer.newTimeout(new Task(sink, i, tag), delayNs, TimeUnit.NANOSECONDS);
    }

    @Override
    boolean cancel(Object handle) {
        if (handle instanceof Periodic) {
            return ((Periodic) handle).cancel();
        }
        return ((Timeout) handle).cancel();
    }

    @Override
    Object fixedRate(long initialNs, long periodNs, Sink sink, int i) {
        return new Periodic(sink, i, initialNs, periodNs, true);
    }

    @Override
    Object fixedDelay(long initialNs, long periodNs, Sink sink, int i) {
        return new Periodic(sink, i, initialNs, periodNs, false);
    }

    /** The worker moves at most 100 000 submissions into the wheel per tick. */
    @Override
    void settle(int pending) {
        Timeline.waitUntil(System.nanoTime() + (pending / 100_000 + 3) * tickMs * 1_000_000L);
    }

    @Override
    void shutdown() {
        timer.stop();
    }

    @Override
    String semantics() {
        return "fires 0 to 1 tick late by design; cancel is a CAS, the timeout is unlinked on the next tick; "
            + "no periodic API (re-armed from the task here); at most 100k submissions move into the wheel per tick";
    }
}
