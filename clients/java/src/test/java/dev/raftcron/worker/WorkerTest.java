package dev.raftcron.worker;

import static dev.raftcron.testkit.Runner.check;
import static dev.raftcron.testkit.Runner.equal;

import com.sun.net.httpserver.HttpServer;
import dev.raftcron.fence.Run;
import dev.raftcron.testkit.Runner;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The worker SDK's tests, runnable with the JDK alone: its JSON, and the protocol against a
 * real node on loopback (the binary named by -Draftcron.bin, which `make clients-test`
 * builds). Prints "N passed, N failed, N skipped"; exits 1 on a failure.
 */
public final class WorkerTest {
    private static final String KEY = "n3w-key-n3w-key-n3w-key-n3w-key-n3w-key=";
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static Node node;
    private static final Runner RUNNER = new Runner().onFailure(() -> {
        if (node != null) {
            System.out.println("node log:\n" + node.log());
        }
    });

    private WorkerTest() {}

    public static void main(String[] args) throws Exception {
        RUNNER.test("JSON reads and writes the protocol's bodies", WorkerTest::json);
        RUNNER.test("JSON names what it cannot read", WorkerTest::jsonErrors);
        RUNNER.test("durations in proto JSON", WorkerTest::durations);
        RUNNER.test("an offer's 409 SUPERSEDED and its why", WorkerTest::refusals);
        RUNNER.test("bad configuration names the field", WorkerTest::badConfig);
        Path bin = Path.of(System.getProperty("raftcron.bin", "../../bin/raftcron"));
        if (Files.isExecutable(bin)) {
            Path key = Files.createTempFile("raftcron-fence", ".key");
            Files.writeString(key, KEY + "\n");
            key.toFile().deleteOnExit();
            node = Node.start(bin, List.of("--worker-lease", "2s", "--fence-key-file", key.toString()));
        }
        try {
            RUNNER.test("lease extension keeps an attempt alive past its lease", WorkerTest::leaseExtension);
            RUNNER.test("progress reaches run get", WorkerTest::progress);
            RUNNER.test("a worker that stops heartbeating loses its attempt to a larger token", WorkerTest::lostLease);
            RUNNER.test("a superseded heartbeat cancels the handler", WorkerTest::cancelled);
            RUNNER.test("a stopping worker hands its attempt back", WorkerTest::handBack);
            RUNNER.test("offers are verified with the key", WorkerTest::signatures);
            RUNNER.test("SIGTERM lets a running attempt finish", WorkerTest::sigterm);
        } finally {
            if (node != null) {
                node.close();
            }
        }
        RUNNER.exit();
    }

    private static void waitFor(String what, Runner.Cond c) throws Exception {
        Runner.waitFor(what, WAIT, c);
    }

    private static Node node() {
        if (node == null) {
            throw new Runner.Skip("no raftcron binary at -Draftcron.bin (make build)");
        }
        return node;
    }

    // --- units ---

    private static void json() {
        String text = "{\"offers\":[{\"token\":\"42\",\"attempt\":1,\"ok\":true,\"none\":null,\"f\":0.5,"
                + "\"s\":\"a\\\"b\\\\c\\n\\u00e9\"}]}";
        Map<String, Object> m = Json.parseObject(text);
        Map<?, ?> offer = (Map<?, ?>) ((List<?>) m.get("offers")).get(0);
        equal(offer.get("token"), "42", "token");
        equal(offer.get("attempt"), 1L, "attempt");
        equal(offer.get("ok"), true, "ok");
        check(offer.containsKey("none") && offer.get("none") == null, "null kept");
        equal(offer.get("f"), 0.5, "fraction");
        equal(offer.get("s"), "a\"b\\c\né", "escapes");
        equal(Json.parse(Json.write(m)), m, "round trip");
        equal(Json.write(Map.of("m", "\u0001\t")), "{\"m\":\"\\u0001\\t\"}", "control characters");
    }

    private static void jsonErrors() {
        for (String bad : List.of("", "{", "{\"a\" 1}", "[1,]", "{\"a\":1} x", "\"\\q\"", "{1:2}", "nul")) {
            try {
                Json.parse(bad);
                throw new AssertionError("parsed " + bad);
            } catch (IllegalArgumentException e) {
                check(e.getMessage().startsWith("JSON: "), bad + ": " + e.getMessage());
            }
        }
    }

    private static void durations() {
        equal(Offer.duration("10s", "lease"), Duration.ofSeconds(10), "10s");
        equal(Offer.duration("0.500s", "lease"), Duration.ofMillis(500), "0.500s");
        equal(Offer.duration(Duration.ofMillis(1500)), "1.5s", "1.5 s written");
        equal(Offer.duration(Duration.ofSeconds(30)), "30s", "30 s written");
        try {
            Offer.duration("1m", "lease");
            throw new AssertionError("took 1m");
        } catch (IllegalArgumentException e) {
            check(e.getMessage().startsWith("lease: "), e.getMessage());
        }
    }

    private static void refusals() {
        String body = "{\"code\":10,\"message\":\"stop it\",\"details\":[{\"@type\":"
                + "\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"SUPERSEDED\","
                + "\"domain\":\"raftcron.io\",\"metadata\":{\"why\":\"lease_expired\"}}]}";
        RuntimeException e = Api.refusal(409, body);
        check(e instanceof Superseded, "a Superseded: " + e);
        equal(((Superseded) e).why(), "lease_expired", "why");
        RuntimeException other = Api.refusal(403, "<html>nope</html>");
        check(other instanceof ApiException a && a.status() == 403, "a 403 ApiException: " + other);
    }

    private static void badConfig() {
        for (Runnable r : List.<Runnable>of(() -> new Worker("Bad Pool", null, "127.0.0.1:1"),
                () -> new Worker("p", null, "127.0.0.1:1").id(""),
                () -> new Worker("p", null, "127.0.0.1:1").concurrency(0),
                () -> new Worker("p", null))) {
            try {
                r.run();
                throw new AssertionError("accepted");
            } catch (IllegalArgumentException e) {
                check(e.getMessage().matches("(pool|id|concurrency|addrs): .*"), e.getMessage());
            }
        }
    }

    // --- against a node ---

    private static Worker worker(String pool, String id) {
        return new Worker(pool, null, node.httpAddr).id(id).pollWait(Duration.ofSeconds(2));
    }

    private static void job(String name, String pool, String lease) throws Exception {
        node().apply("name: " + name + "\nschedule: \"0 0 1 1 *\"\nworker: {pool: " + pool
                + ", handler: h, payload: '{\"n\":1}', lease: " + lease + "}\n");
    }

    private static String state(Map<String, Object> run) {
        return String.valueOf(run.get("state"));
    }

    private static List<?> attempts(Map<String, Object> run) {
        return (List<?>) run.getOrDefault("attempts", List.of());
    }

    private static void leaseExtension() throws Exception {
        job("lease", "p-lease", "2s");
        Worker w = worker("p-lease", "lease-1").handler("h", ctx -> {
            for (int i = 1; i <= 7; i++) {
                Thread.sleep(1000);
                ctx.progress(100 * i / 7, "second " + i);
            }
        });
        w.start();
        try {
            String id = node.trigger("lease");
            waitFor("the run succeeds", () -> state(node.run(id)).equals("succeeded"));
            Map<String, Object> run = node.run(id);
            equal(attempts(run).size(), 1, "attempts of a 7 s run with a 2 s lease");
        } finally {
            w.stop(Duration.ZERO);
        }
    }

    private static void progress() throws Exception {
        job("progress", "p-progress", "2s");
        CountDownLatch seen = new CountDownLatch(1);
        Worker w = worker("p-progress", "progress-1").handler("h", ctx -> {
            ctx.progress(40, "charged 4 of 10");
            seen.await(WAIT.toSeconds(), TimeUnit.SECONDS);
        });
        w.start();
        try {
            String id = node.trigger("progress");
            waitFor("run get shows the progress", () -> {
                List<?> as = attempts(node.run(id));
                Map<?, ?> a = as.isEmpty() ? Map.of() : (Map<?, ?>) as.get(as.size() - 1);
                return Objects.equals(a.get("progress"), 40L) && "charged 4 of 10".equals(a.get("progress_message"));
            });
            seen.countDown();
            waitFor("the run succeeds", () -> state(node.run(id)).equals("succeeded"));
        } finally {
            seen.countDown();
            w.stop(Duration.ZERO);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> rawPoll(Api api, String id, String pool) throws Exception {
        Map<String, Object> resp = api.call("/v1/workers/" + id + ":poll",
                Map.of("pool", pool, "handlers", List.of("h"), "wait", "10s"), WAIT, System.nanoTime() + WAIT.toNanos());
        List<?> offers = (List<?>) resp.getOrDefault("offers", List.of());
        check(offers.size() == 1, "one offer, got " + resp);
        return (Map<String, Object>) offers.get(0);
    }

    private static void lostLease() throws Exception {
        job("lost", "p-lost", "1s");
        Api api = new Api(List.of(node().httpAddr), null);
        String id = node.trigger("lost");
        Map<String, Object> first = rawPoll(api, "lost-silent", "p-lost");
        equal(first.get("run_id"), id, "the silent worker's run");
        long silentToken = Long.parseLong((String) first.get("token"));
        AtomicLong token = new AtomicLong();
        Worker w = worker("p-lost", "lost-live").handler("h", ctx -> token.set(ctx.token()));
        w.start();
        try {
            waitFor("the run succeeds on the live worker", () -> state(node.run(id)).equals("succeeded"));
            check(token.get() > silentToken, "the live worker's token " + token + " is larger than " + silentToken);
            try {
                api.call("/v1/attempts/" + id + "/" + silentToken + ":heartbeat", Map.of(), WAIT,
                        System.nanoTime() + WAIT.toNanos());
                throw new AssertionError("the silent worker's heartbeat was taken");
            } catch (Superseded s) {
                check(List.of("lease_expired", "not_held").contains(s.why()), "why: " + s.why());
            }
        } finally {
            w.stop(Duration.ZERO);
        }
    }

    private static void cancelled() throws Exception {
        job("cancel", "p-cancel", "2s");
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch ended = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicReference<String> reason = new AtomicReference<>();
        Worker w = worker("p-cancel", "cancel-1").handler("h", ctx -> {
            started.countDown();
            try {
                while (!ctx.isCancelled()) {
                    Thread.sleep(50);
                }
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
            reason.set(ctx.cancelReason());
            ended.countDown();
        });
        w.start();
        try {
            String id = node.trigger("cancel");
            check(started.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the handler started");
            node.cli("run", "cancel", id);
            check(ended.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the handler was cancelled");
            check(interrupted.get(), "the handler's thread was interrupted");
            check(reason.get().contains("superseded (cancelled)"), "reason: " + reason.get());
            waitFor("the run is cancelled", () -> state(node.run(id)).equals("cancelled"));
        } finally {
            w.stop(Duration.ZERO);
        }
    }

    private static void handBack() throws Exception {
        job("handback", "p-handback", "30s");
        CountDownLatch started = new CountDownLatch(1);
        AtomicReference<String> reason = new AtomicReference<>();
        Worker w = worker("p-handback", "handback-1").handler("h", ctx -> {
            started.countDown();
            try {
                Thread.sleep(WAIT.toMillis());
            } finally {
                reason.set(ctx.cancelReason());
            }
        });
        w.start();
        String id = node.trigger("handback");
        check(started.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the handler started");
        long t0 = System.nanoTime();
        w.stop(Duration.ofMillis(100));
        equal(reason.get(), "worker stopping", "the handler's cancel reason");
        equal(w.running(), 0, "attempts running after stop");
        Api api = new Api(List.of(node.httpAddr), null);
        Map<String, Object> again = rawPoll(api, "handback-2", "p-handback");
        equal(again.get("run_id"), id, "the handed-back run");
        equal(again.get("attempt"), 2L, "its attempt");
        check(Duration.ofNanos(System.nanoTime() - t0).compareTo(Duration.ofSeconds(30)) < 0,
                "offered again before its 30 s lease ran out");
        api.call("/v1/attempts/" + id + "/" + again.get("token") + ":complete", Map.of("outcome", "succeeded"), WAIT,
                System.nanoTime() + WAIT.toNanos());
    }

    private static void signatures() throws Exception {
        job("signed", "p-signed", "2s");
        AtomicLong ran = new AtomicLong();
        Worker good = worker("p-signed", "signed-good")
                .keys(List.of(KEY.getBytes(StandardCharsets.UTF_8)))
                .handler("h", ctx -> ran.set(ctx.token()));
        good.start();
        try {
            String id = node.trigger("signed");
            waitFor("the signed run succeeds", () -> state(node.run(id)).equals("succeeded"));
            check(ran.get() != 0, "the handler ran");
        } finally {
            good.stop(Duration.ZERO);
        }
        ran.set(0);
        Worker bad = worker("p-signed", "signed-bad")
                .keys(List.of("another-key-another-key-another-key".getBytes(StandardCharsets.UTF_8)))
                .handler("h", ctx -> ran.set(ctx.token()));
        bad.start();
        try {
            String id = node.trigger("signed");
            waitFor("the run fails with bad signature", () -> node.cli("run", "get", id, "-o", "json")
                    .contains("bad signature") && state(node.run(id)).equals("failed"));
            equal(ran.get(), 0L, "token the handler ran with");
        } finally {
            bad.stop(Duration.ZERO);
        }
    }

    private static void sigterm() throws Exception {
        node().apply("name: sigterm\nschedule: \"0 0 1 1 *\"\nworker: {pool: p-sigterm, handler: e2e-sink, "
                + "payload: '{\"run_ms\": 1500}', lease: 2s}\n");
        AtomicReference<String> wrote = new AtomicReference<>();
        HttpServer sink = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        sink.createContext("/", ex -> {
            wrote.set(ex.getRequestHeaders().getFirst(Run.HEADER_FENCING_TOKEN));
            ex.sendResponseHeaders(200, -1);
            ex.close();
        });
        sink.start();
        ProcessBuilder pb = new ProcessBuilder("java", "-cp", System.getProperty("java.class.path"),
                E2eWorker.class.getName()).redirectError(node.dir.resolve("sigterm-worker.log").toFile());
        pb.environment().putAll(Map.of("E2E_POOL", "p-sigterm", "E2E_WORKER_ID", "sigterm-1",
                "E2E_ADDRS", node.httpAddr, "E2E_SINK", "http://127.0.0.1:" + sink.getAddress().getPort()));
        Process p = pb.start();
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (var out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = out.readLine()) != null;) {
                    lines.add(l);
                }
            } catch (IOException e) {
                lines.add("read: " + e);
            }
        });
        reader.setDaemon(true);
        reader.start();
        try {
            String id = node.trigger("sigterm");
            String line = lines.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
            check(line != null && line.startsWith("start " + id + " "), "the worker started the run: " + line);
            p.toHandle().destroy(); // SIGTERM; Process.destroy would close its output
            check(p.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), "the worker exited within " + WAIT + " of SIGTERM");
            reader.join(WAIT.toMillis());
            check(String.valueOf(lines.poll()).startsWith("wrote " + id + " "), "the attempt finished after SIGTERM");
            check(wrote.get() != null, "the sink got the write");
            waitFor("the run succeeds", () -> state(node.run(id)).equals("succeeded"));
        } finally {
            p.destroyForcibly();
            sink.stop(0);
        }
    }
}
