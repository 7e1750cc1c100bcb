// storm on Netty's HashedWheelTimer, the peer of the driver's storm workload (see
// WORKLOADS.md): N timers all due at T0 = start + 600 ms, scheduled from THREADS threads, and
// 300 sentinels due every millisecond from T0 - 100 ms; callbacks run inline on the wheel's
// worker, Netty's default. One JSON line with the driver's keys. Run it with
// `bash benches/netty/run.sh storm [THREADS] [TIMERS]`.

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class Storm {
    static final long MS = 1_000_000;
    static final int SENTINELS = 300;
    static final long LEAD = 600 * MS, SCHEDULE_SLACK = 50 * MS, BOUND = 60_000 * MS;

    /** The callback: stamp the instant it ran into its slot, count it, nothing else. */
    static final class Stamp implements TimerTask {
        final long[] at;
        final int slot;
        final AtomicInteger ran;
        Stamp(long[] at, int slot, AtomicInteger ran) {
            this.at = at;
            this.slot = slot;
            this.ran = ran;
        }
        @Override
        public void run(Timeout timeout) {
            at[slot] = System.nanoTime();
            ran.incrementAndGet();
        }
    }

    /** Nearest-rank percentile of a sorted array. */
    static long rank(long[] sorted, int pct) {
        int r = (int) (((long) pct * sorted.length + 99) / 100);
        return sorted[Math.max(r, 1) - 1];
    }

    static double ms(long nanos) {
        return nanos / 1e6;
    }

    /** One storm; returns its JSON line, or null when scheduling ran past T0 - 50 ms. */
    static String storm(HashedWheelTimer timer, int threads, int n) throws Exception {
        long[] at = new long[n];          // 0: never ran (nanoTime is never exactly 0 here)
        long[] sentinelAt = new long[SENTINELS];
        AtomicInteger ran = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        long[] t0Box = new long[1];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            // N/THREADS each; the last thread takes the remainder.
            final int from = (int) ((long) n * t / threads), to = (int) ((long) n * (t + 1) / threads);
            workers[t] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                long t0 = t0Box[0];
                for (int i = from; i < to; i++) {
                    timer.newTimeout(new Stamp(at, i, ran), t0 - System.nanoTime(), TimeUnit.NANOSECONDS);
                }
            });
            workers[t].start();
        }
        long start = System.nanoTime();
        long t0 = start + LEAD;
        t0Box[0] = t0;  // published to the workers by the latch
        long[] sentinelDue = new long[SENTINELS];
        for (int i = 0; i < SENTINELS; i++) {
            sentinelDue[i] = t0 + (i - 100) * MS;
            timer.newTimeout(new Stamp(sentinelAt, i, ran), sentinelDue[i] - System.nanoTime(),
                TimeUnit.NANOSECONDS);
        }
        go.countDown();
        for (Thread worker : workers) {
            worker.join();
        }
        long scheduled = System.nanoTime();
        if (scheduled > t0 - SCHEDULE_SLACK) {
            System.err.printf("storm: scheduling %d timers took %.1f ms, past T0 - 50 ms%n",
                n, ms(scheduled - start));
            return null;
        }
        // Wait for every callback, at most 60 s past T0; the stamps are read after the count.
        int want = n + SENTINELS;
        while (ran.get() < want && System.nanoTime() - t0 < BOUND) {
            Thread.sleep(2);
        }

        int early = 0, missing = 0, fired = 0;
        long[] late = new long[n];
        for (int i = 0; i < n; i++) {
            if (at[i] == 0) {
                missing++;
                continue;
            }
            if (at[i] < t0) {
                early++;
            }
            late[fired++] = at[i] - t0;
        }
        late = Arrays.copyOf(late, fired);
        Arrays.sort(late);
        long[] sentinelLate = new long[SENTINELS];
        int counted = 0;
        for (int i = 0; i < SENTINELS; i++) {
            if (sentinelAt[i] == 0) {
                missing++;
                continue;
            }
            if (sentinelAt[i] < sentinelDue[i]) {
                early++;
            }
            if (sentinelDue[i] >= t0) {
                sentinelLate[counted++] = sentinelAt[i] - sentinelDue[i];
            }
        }
        sentinelLate = Arrays.copyOf(sentinelLate, counted);
        Arrays.sort(sentinelLate);
        double first = fired > 0 ? ms(late[0]) : Double.NaN;
        double drain = fired > 0 ? ms(late[fired - 1]) : Double.NaN;
        return String.format(
            "{\"workload\":\"storm\",\"peer\":\"netty\",\"timers\":%d,\"threads\":%d,"
                + "\"first_ms\":%.3f,\"drain_ms\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
                + "\"sentinel_p99_ms\":%.3f,\"sentinel_max_ms\":%.3f,\"fire_mops\":%.3f,"
                + "\"early\":%d,\"missing\":%d,\"schedule_ms\":%.3f}",
            n, threads, first, drain,
            fired > 0 ? ms(rank(late, 50)) : Double.NaN, fired > 0 ? ms(rank(late, 99)) : Double.NaN,
            counted > 0 ? ms(rank(sentinelLate, 99)) : Double.NaN,
            counted > 0 ? ms(sentinelLate[counted - 1]) : Double.NaN,
            n / drain / 1e3,  // N / drain (s) / 1e6, drain measured from T0
            early, missing, ms(scheduled - start));
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
        // A tick of 1 ms, as the driver's engine; 512 buckets, Netty's default.
        HashedWheelTimer timer = new HashedWheelTimer(r -> {
            Thread thread = new Thread(r, "netty-wheel");
            thread.setDaemon(true);
            return thread;
        }, 1, TimeUnit.MILLISECONDS, 512);
        timer.start();
        // Warm the JIT on a storm a tenth the size, and discard it.
        String warm = storm(timer, threads, Math.max(n / 10, 1));
        if (warm == null) {
            System.exit(1);
        }
        System.err.println("warm-up " + warm);
        System.gc();
        String json = storm(timer, threads, n);
        if (json == null) {
            System.exit(1);
        }
        timer.stop();
        System.out.println(json);
    }
}
