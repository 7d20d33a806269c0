package dev.raftcron.testkit;

import java.time.Duration;
import java.util.Objects;

/**
 * The kits' test runner, with the JDK alone: runs named tests, prints "ok", "skip" or
 * "FAIL" for each and "N passed, N failed, N skipped", and exits 1 on a failure.
 */
public final class Runner {
    private int passed;
    private int failed;
    private int skipped;
    private Runnable onFailure = () -> {};

    @FunctionalInterface
    public interface Body {
        void run() throws Exception;
    }

    @FunctionalInterface
    public interface Cond {
        boolean holds() throws Exception;
    }

    /** Thrown to skip a test (locally only: under CI=true it fails instead). */
    public static final class Skip extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public Skip(String why) {
            super(why);
        }
    }

    /** Runs r after a failure's stack trace (to show a server's log, say). */
    public Runner onFailure(Runnable r) {
        onFailure = r;
        return this;
    }

    public void test(String name, Body body) {
        try {
            body.run();
            passed++;
            System.out.println("ok   " + name);
        } catch (Skip s) {
            if ("true".equals(System.getenv("CI"))) {
                failed++;
                System.out.println("FAIL " + name + ": " + s.getMessage());
            } else {
                skipped++;
                System.out.println("skip " + name + ": " + s.getMessage());
            }
        } catch (Throwable t) {
            failed++;
            System.out.println("FAIL " + name + ": " + t);
            t.printStackTrace(System.out);
            onFailure.run();
        }
    }

    /** Prints the tally and exits: 1 if a test failed. */
    public void exit() {
        System.out.println(passed + " passed, " + failed + " failed, " + skipped + " skipped");
        System.exit(failed == 0 ? 0 : 1);
    }

    /** Waits until c holds, looking every 20 ms, or fails naming what it waited for. */
    public static void waitFor(String what, Duration within, Cond c) throws Exception {
        long end = System.nanoTime() + within.toNanos();
        while (!c.holds()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("not within " + within + ": " + what);
            }
            Thread.sleep(20);
        }
    }

    public static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void equal(Object got, Object want, String what) {
        check(Objects.equals(got, want), what + ": got " + got + ", want " + want);
    }
}
