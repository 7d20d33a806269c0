package dev.raftcron.worker;

import static dev.raftcron.testkit.Runner.check;
import static dev.raftcron.testkit.Runner.equal;

import dev.raftcron.testkit.Runner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * How a worker reports outcomes (docs/workers.md, "POST /v1/attempts:batchComplete"), against
 * a node faked on loopback: in few batch calls of at most 1000 outcomes and 2 MiB, each result
 * taken as its attempt's, one by one from a node without the call, retried when there is no
 * leader, and all before stop returns.
 */
public final class CompleterTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** The JSON a batch call carries at most. */
    private static final int MIB2 = 2 << 20;
    private static final Runner RUNNER = new Runner();
    /** The SDK's log lines (System.Logger goes to java.util.logging); held so it stays configured. */
    private static final Logger JUL = Logger.getLogger("dev.raftcron.worker");
    private static final List<String> LOGGED = new CopyOnWriteArrayList<>();

    private CompleterTest() {}

    public static void main(String[] args) {
        JUL.addHandler(new Handler() {
            @Override
            public void publish(LogRecord r) {
                LOGGED.add(r.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        });
        RUNNER.test("attempts ending together are reported in few batch calls", CompleterTest::fewCalls);
        RUNNER.test("a batch call carries at most 1000 outcomes", CompleterTest::atMost1000);
        RUNNER.test("a batch call carries at most 2 MiB of JSON", CompleterTest::atMost2MiB);
        RUNNER.test("each result is its own attempt's", CompleterTest::resultsInOrder);
        RUNNER.test("a 404 turns outcomes one by one for a while", () -> oneByOne(404));
        RUNNER.test("a 501 turns outcomes one by one for a while", () -> oneByOne(501));
        RUNNER.test("a 503 is retried", CompleterTest::retried);
        RUNNER.test("stop returns after the outcomes are reported", CompleterTest::stopFlushes);
        RUNNER.exit();
    }

    private static void waitFor(String what, Runner.Cond c) throws Exception {
        Runner.waitFor(what, WAIT, c);
    }

    /** A worker of the fake whose handler h fails on payload "fail", and outputs the run ID. */
    private static Worker worker(FakeNode node, int concurrency, CountDownLatch go, CountDownLatch returned) {
        return new Worker("p", null, node.addr()).id("w").concurrency(concurrency).pollWait(Duration.ofSeconds(1))
                .handler("h", ctx -> {
                    try {
                        check(go.await(WAIT.toSeconds(), TimeUnit.SECONDS), "go");
                        ctx.output("out " + ctx.runId());
                        if (ctx.payload().equals("fail")) {
                            throw new IllegalStateException("boom");
                        }
                    } finally {
                        returned.countDown();
                    }
                });
    }

    private static void fewCalls() throws Exception {
        int n = 200;
        try (FakeNode node = new FakeNode()) {
            CountDownLatch go = new CountDownLatch(1);
            CountDownLatch returned = new CountDownLatch(n);
            node.hold = new CountDownLatch(1);
            Map<String, Long> tokens = new HashMap<>();
            for (int i = 0; i < n; i++) {
                tokens.put("r" + i, node.offer("r" + i, i % 2 == 0 ? "ok" : "fail"));
            }
            Worker w = worker(node, n, go, returned);
            w.start();
            try {
                waitFor("every attempt running", () -> w.running() == n);
                go.countDown();
                check(returned.await(WAIT.toSeconds(), TimeUnit.SECONDS), "every handler returned");
                node.hold.countDown(); // the first call held until all are queued: the rest go in few more
                waitFor("every outcome reported", () -> w.running() == 0);
            } finally {
                w.stop(Duration.ZERO);
            }
            equal(node.completes.size(), 0, "one-by-one completes");
            check(node.batches.size() <= 10, n + " outcomes in " + node.batches.size() + " batch calls");
            int items = node.batches.stream().mapToInt(List::size).sum();
            equal(items, n, "outcomes carried by the batch calls");
            Map<String, Map<String, Object>> got = node.outcomes();
            for (int i = 0; i < n; i++) {
                Map<String, Object> o = got.get("r" + i);
                check(o != null, "r" + i + " reported");
                equal(o.get("token"), Long.toString(tokens.get("r" + i)), "r" + i + "'s token");
                equal(o.get("outcome"), i % 2 == 0 ? "succeeded" : "failed", "r" + i + "'s outcome");
                equal(o.get("output"), "out r" + i, "r" + i + "'s output");
                equal(o.get("detail"), i % 2 == 0 ? "" : "java.lang.IllegalStateException: boom", "r" + i + "'s detail");
            }
        }
    }

    private static void atMost1000() throws Exception {
        try (FakeNode node = new FakeNode()) {
            Completer c = new Completer(new Api(List.of(node.addr()), null), Runnable::run, Thread::new);
            AtomicInteger done = new AtomicInteger();
            for (int i = 0; i < 1500; i++) {
                c.add(outcome("r" + i, "succeeded", done::incrementAndGet));
            }
            c.start();
            try {
                waitFor("every outcome reported", () -> done.get() == 1500);
            } finally {
                c.stop();
            }
            List<Integer> sizes = new ArrayList<>();
            node.batches.forEach(b -> sizes.add(b.size()));
            equal(sizes, List.of(1000, 500), "batch sizes");
            equal(new HashSet<>(node.outcomes().keySet()).size(), 1500, "distinct attempts reported");
        }
    }

    private static void atMost2MiB() throws Exception {
        int n = 1000;
        String output = "€".repeat(1365); // 4095 bytes of UTF-8 in as many thirds of characters
        String detail = "d".repeat(4096);
        try (FakeNode node = new FakeNode()) {
            Completer c = new Completer(new Api(List.of(node.addr()), null), Runnable::run, Thread::new);
            AtomicInteger done = new AtomicInteger();
            for (int i = 0; i < n; i++) {
                c.add(outcome("r" + i, "succeeded", i + output, detail, done::incrementAndGet));
            }
            c.start();
            try {
                waitFor("every outcome reported", () -> done.get() == n);
            } finally {
                c.stop();
            }
            List<Integer> bytes = new ArrayList<>(node.batchBytes);
            check(bytes.size() > 1, "outcomes of about 8 MiB in several calls: " + bytes);
            int item = bytes.get(0) / node.batches.get(0).size();
            for (int i = 0; i < bytes.size(); i++) {
                check(bytes.get(i) <= MIB2, "call " + i + " within 2 MiB: " + bytes);
                check(i == bytes.size() - 1 || bytes.get(i) > MIB2 - 2 * item, "call " + i + " full: " + bytes);
            }
            equal(node.batches.stream().mapToInt(List::size).sum(), n, "outcomes carried by the batch calls");
            Map<String, Map<String, Object>> got = node.outcomes();
            for (int i = 0; i < n; i++) {
                Map<String, Object> o = got.get("r" + i);
                check(o != null, "r" + i + " reported");
                equal(o.get("output"), i + output, "r" + i + "'s output");
                equal(o.get("detail"), detail, "r" + i + "'s detail");
            }
        }
    }

    private static void resultsInOrder() throws Exception {
        try (FakeNode node = new FakeNode()) {
            node.results.put("r-late", Map.of("superseded", "lease_expired"));
            node.results.put("r-other", Map.of("error", "attempt 1 of run r-other was offered to another ACL token"));
            node.results.put("r-stray", Map.of());
            node.results.put("r-stopped", Map.of("superseded", "cancelled"));
            Completer c = new Completer(new Api(List.of(node.addr()), null), Runnable::run, Thread::new);
            AtomicInteger done = new AtomicInteger();
            List<String> ids = List.of("r-taken", "r-late", "r-other", "r-stray", "r-stopped");
            for (String id : ids) {
                c.add(outcome(id, id.equals("r-stopped") ? "cancelled" : "succeeded", done::incrementAndGet));
            }
            LOGGED.clear();
            c.start();
            try {
                waitFor("every result known", () -> done.get() == ids.size());
            } finally {
                c.stop();
            }
            equal(node.batches.size(), 1, "batch calls");
            equal(node.batches.get(0).size(), ids.size(), "outcomes in it");
            List<String> said = new ArrayList<>(LOGGED);
            check(said.contains("r-late: outcome succeeded not taken: superseded (lease_expired): no longer the run's current attempt"),
                    "the superseded result logged for r-late: " + said);
            check(said.contains("r-other: outcome succeeded not delivered: refused: attempt 1 of run r-other was offered to another ACL token"),
                    "the error logged for r-other: " + said);
            check(said.stream().anyMatch(l -> l.startsWith("r-stray: outcome succeeded not delivered: no result for it")),
                    "a result without its outcome logged for r-stray: " + said);
            equal(said.size(), 3, "lines logged (none for the taken r-taken, nor for r-stopped's own cancel): " + said);
            equal(node.completes.size(), 0, "one-by-one completes (a result is not retried)");
        }
    }

    /** An outcome of an attempt of run ID under token 7, straight to a completer. */
    private static Completer.Outcome outcome(String runId, String outcome, Runnable done) {
        return outcome(runId, outcome, "", "", done);
    }

    private static Completer.Outcome outcome(String runId, String outcome, String output, String detail, Runnable done) {
        Offer offer = new Offer(runId, "j", "", 1, 7, "h", "", Map.of(), "", "", Duration.ZERO, Duration.ofSeconds(10));
        return new Completer.Outcome(new Context(offer, System.nanoTime()), outcome, output, detail, done);
    }

    private static void oneByOne(int status) throws Exception {
        try (FakeNode node = new FakeNode()) {
            CountDownLatch go = new CountDownLatch(0);
            node.batchStatuses.add(status);
            long t1 = node.offer("r1", "ok");
            Worker w = worker(node, 1, go, new CountDownLatch(2));
            w.start();
            try {
                waitFor("r1 completed one by one", () -> node.completes.size() == 1);
                Map<String, Object> c = node.completes.get(0);
                equal(c.get("run_id"), "r1", "run ID");
                equal(c.get("token"), Long.toString(t1), "token");
                equal(c.get("outcome"), "succeeded", "outcome");
                equal(c.get("output"), "out r1", "output");
                waitFor("r1's slot free", () -> w.running() == 0);
                node.offer("r2", "fail");
                waitFor("r2 completed one by one", () -> node.completes.size() == 2);
                equal(node.completes.get(1).get("outcome"), "failed", "r2's outcome");
            } finally {
                w.stop(Duration.ZERO);
            }
            equal(node.batches.size(), 1, "batch calls (the first answered " + status + ", the next within a minute not sent)");
        }
    }

    private static void retried() throws Exception {
        try (FakeNode node = new FakeNode()) {
            node.batchStatuses.add(503);
            node.offer("r1", "ok");
            Worker w = worker(node, 1, new CountDownLatch(0), new CountDownLatch(1));
            w.start();
            try {
                waitFor("r1 taken by a batch", () -> node.batchesTaken.get() == 1);
                waitFor("r1's slot free", () -> w.running() == 0);
            } finally {
                w.stop(Duration.ZERO);
            }
            equal(node.batches.size(), 2, "batch calls (503, then taken)");
            equal(node.batches.get(1).get(0).get("run_id"), "r1", "the retried batch's attempt");
            equal(node.completes.size(), 0, "one-by-one completes");
        }
    }

    private static void stopFlushes() throws Exception {
        try (FakeNode node = new FakeNode()) {
            CountDownLatch returned = new CountDownLatch(1);
            node.hold = new CountDownLatch(1);
            node.offer("r1", "ok");
            Worker w = worker(node, 1, new CountDownLatch(0), returned);
            w.start();
            check(returned.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the handler returned");
            Thread release = new Thread(() -> {
                try {
                    waitFor("r1's batch sent", () -> node.batches.size() == 1);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                } finally {
                    node.hold.countDown();
                }
            });
            release.start();
            w.stop(Duration.ofSeconds(5)); // returns only once the held call is answered
            equal(node.batchesTaken.get(), 1, "batch calls answered when stop returned");
            release.join();
        }
    }
}
