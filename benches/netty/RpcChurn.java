// rpc-churn on Netty's HashedWheelTimer, for the peer row of BENCHMARKS.md: the driver's
// rpc-churn loop (see BENCHMARKS.md), one JSON line with the driver's keys. Run it with
// `bash benches/netty/run.sh [THREADS] [OPS]`; it needs a JDK and Debian's libnetty-java.

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import java.lang.management.ManagementFactory;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public final class RpcChurn {
    static final int WINDOW = 1000;
    static final long KEEP_EVERY = 100;
    static final long MIN_US = 1_000_000, MAX_US = 30_000_000;
    static final TimerTask NOTHING = timeout -> { };

    /** The driver's delays: splitmix64 from the thread's seed, uniform in [1 s, 30 s]. */
    static final class Delays {
        long state;
        Delays(long stream, long thread) {
            state = stream * 0x9E3779B97F4A7C15L ^ (thread + 1) * 0xBF58476D1CE4E5B9L;
        }
        long nextMicros() {
            state += 0x9E3779B97F4A7C15L;
            long z = state;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            z ^= z >>> 31;
            return MIN_US + Math.multiplyHigh(z, MAX_US - MIN_US + 1) + ((z >> 63) & (MAX_US - MIN_US + 1));
        }
    }

    static void churn(HashedWheelTimer timer, int thread, long ops) {
        Timeout[] ring = new Timeout[WINDOW];
        Delays delays = new Delays(1, thread);
        for (long n = 0; n < ops; n++) {
            int slot = (int) (n % WINDOW);
            Timeout old = ring[slot];
            if (old != null && n % KEEP_EVERY != 0) {
                old.cancel();
            }
            ring[slot] = timer.newTimeout(NOTHING, delays.nextMicros(), TimeUnit.MICROSECONDS);
        }
    }

    static double run(HashedWheelTimer timer, int threads, long ops) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int index = t;
            workers[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                churn(timer, index, ops);
            });
            workers[t].start();
        }
        long begin = System.nanoTime();
        start.countDown();
        for (Thread worker : workers) {
            worker.join();
        }
        return (System.nanoTime() - begin) / 1e9;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        long ops = args.length > 1 ? Long.parseLong(args[1]) : 5_000_000;
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        // A tick of 1 ms, as the driver's engine; the wheel's size is Netty's default.
        HashedWheelTimer timer = new HashedWheelTimer(1, TimeUnit.MILLISECONDS);
        timer.start();
        // Warm the JIT on a run of the same shape, untimed.
        run(timer, threads, Math.min(ops, 1_000_000));
        long cpuBefore = os.getProcessCpuTime();
        double secs = run(timer, threads, ops);
        long cpu = os.getProcessCpuTime() - cpuBefore;
        long total = ops * threads;
        timer.stop();
        System.out.printf(
            "{\"workload\":\"rpc-churn\",\"peer\":\"netty\",\"threads\":%d,\"ops\":%d,"
                + "\"secs\":%.3f,\"mops\":%.3f,\"cpu_ns_per_op\":%.1f}%n",
            threads, total, secs, total / secs / 1e6, (double) cpu / total);
    }
}
