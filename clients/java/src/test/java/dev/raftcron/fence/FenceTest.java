package dev.raftcron.fence;

import static dev.raftcron.testkit.Runner.check;
import static dev.raftcron.testkit.Runner.equal;

import com.sun.net.httpserver.HttpServer;
import dev.raftcron.testkit.Runner;
import dev.raftcron.worker.TestJson;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The kit's tests, runnable with the JDK alone: unit tests, the shared conformance
 * vectors, the handler, and the SQL fence on the real PostgreSQL (RAFTCRON_TEST_POSTGRES,
 * set by `make clients-test`). Prints "N passed, N failed, N skipped"; exits 1 on a failure.
 */
public final class FenceTest {
    private static final Path ROOT = Path.of(System.getProperty("raftcron.root", "../.."));
    private static Map<String, Object> vectors;
    private static Map<String, Object> keys;
    private static final Runner RUNNER = new Runner();

    private FenceTest() {}

    public static void main(String[] args) throws Exception {
        vectors = map(TestJson.parse(Files.readString(ROOT.resolve("fence/testdata/vectors.json"))));
        keys = map(vectors.get("keys"));
        RUNNER.test("signature vectors", FenceTest::signatureVectors);
        RUNNER.test("signs the genuine vector", FenceTest::signsGenuine);
        RUNNER.test("parse names the bad field", FenceTest::parseNamesField);
        RUNNER.test("key file", FenceTest::keyFile);
        RUNNER.test("handler", FenceTest::handler);
        RUNNER.test("SQL fence vectors on PostgreSQL", FenceTest::sqlVectors);
        RUNNER.test("SQL fence rolls back a failed write", FenceTest::sqlRollback);
        RUNNER.test("README example", FenceTest::example);
        RUNNER.exit();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    static byte[] key(String name) {
        return ((String) keys.get(name)).getBytes(StandardCharsets.UTF_8);
    }

    static Run parse(Map<String, Object> v) {
        Map<String, String> fields = new LinkedHashMap<>();
        map(v.get("fields")).forEach((k, val) -> fields.put(k, (String) val));
        if ("exec".equals(v.get("transport"))) {
            return Run.fromEnv(fields);
        }
        return Run.fromHeaders(name -> {
            List<String> out = new ArrayList<>();
            fields.forEach((k, val) -> {
                if (k.equalsIgnoreCase(name)) {
                    out.add(val);
                }
            });
            return out;
        });
    }

    static String str(Map<String, Object> v, String k) {
        Object o = v.get(k);
        return o == null ? "" : (String) o;
    }

    static String verdict(Map<String, Object> v) {
        Map<String, Object> cfg = map(v.get("verifier"));
        List<byte[]> ks = new ArrayList<>();
        list(cfg.get("keys")).forEach(k -> ks.add(key((String) k)));
        Verifier verifier = new Verifier(ks).withJobs(list(cfg.get("jobs")).toArray(String[]::new))
                .withUrlPrefix((String) cfg.get("url_prefix"));
        if ((Boolean) cfg.get("accept_v1")) {
            verifier = verifier.acceptV1();
        }
        try {
            verifier.verify(parse(v), str(v, "signature"), str(v, "method"), str(v, "url"),
                    str(v, "body").getBytes(StandardCharsets.UTF_8));
        } catch (Refused r) {
            return r.verdict();
        }
        return "ok";
    }

    static void signatureVectors() {
        for (Object o : list(vectors.get("signatures"))) {
            Map<String, Object> v = map(o);
            String name = (String) v.get("name");
            if (v.get("canonical_v2") != null) {
                Run run = parse(v);
                equal(Signatures.canonicalV1(run), v.get("canonical_v1"), name + ": canonical v1");
                equal(Signatures.canonicalV2(run, str(v, "method"), str(v, "url"),
                        str(v, "body").getBytes(StandardCharsets.UTF_8)), v.get("canonical_v2"), name + ": canonical v2");
            }
            equal(verdict(v), v.get("verdict"), name);
        }
    }

    static void signsGenuine() {
        for (Object o : list(vectors.get("signatures"))) {
            Map<String, Object> v = map(o);
            if ("v2 genuine".equals(v.get("name"))) {
                equal(Signatures.signV2(key("new"), parse(v), str(v, "method"), str(v, "url"),
                        str(v, "body").getBytes(StandardCharsets.UTF_8)), v.get("signature"), "signature");
                return;
            }
        }
        throw new AssertionError("no genuine vector");
    }

    static void parseNamesField() {
        Map<String, Object> good = map(list(vectors.get("signatures")).get(0));
        String[][] bad = {{"X-Raftcron-Fencing-Token", "-1"}, {"X-Raftcron-Job", "Billing"},
            {"X-Raftcron-Attempt", "4294967296"}, {"X-Raftcron-Scheduled-At", "2026-02-30T01:02:03Z"},
            {"Idempotency-Key", "a\nb"}, {"X-Raftcron-Run-Id", ""}, {"X-Raftcron-Fencing-Token", "18446744073709551616"}};
        for (String[] b : bad) {
            Map<String, Object> v = new LinkedHashMap<>(good);
            Map<String, Object> fields = new LinkedHashMap<>(map(good.get("fields")));
            fields.put(b[0], b[1]);
            v.put("fields", fields);
            try {
                parse(v);
                throw new AssertionError(b[0] + "=" + b[1] + " accepted");
            } catch (Refused.Malformed m) {
                equal(m.field(), b[0], "field named");
                equal(m.status(), 400, "status");
            }
        }
    }

    static void keyFile() {
        List<byte[]> ks = Keys.parse("# rotating\n\n  " + keys.get("new") + "  \n" + keys.get("old") + "\n");
        equal(new String(ks.get(0), StandardCharsets.UTF_8), keys.get("new"), "first key");
        equal(ks.size(), 2, "keys");
        for (String bad : new String[] {"", "short\n", keys.get("new") + "\n" + keys.get("new") + "\n" + keys.get("new")}) {
            try {
                Keys.parse(bad);
                throw new AssertionError("accepted " + bad);
            } catch (IllegalArgumentException expected) {
                // refused
            }
        }
    }

    static Run sampleRun(long token) {
        return new Run(token, "nightly-billing", "r-1", "nightly-billing/2026-11-22T01:00:00Z", "2026-11-22T01:00:00Z", 1);
    }

    static HttpResponse<String> post(String base, String path, String signedPath, Run run, byte[] signer, String body)
            throws Exception {
        String sig = Signatures.signV2(signer, run, "POST", base + signedPath, body.getBytes(StandardCharsets.UTF_8));
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + path)).POST(HttpRequest.BodyPublishers.ofString(body))
                .header("X-Raftcron-Fencing-Token", Long.toUnsignedString(run.token())).header("X-Raftcron-Job", run.job())
                .header("X-Raftcron-Run-Id", run.runId()).header("Idempotency-Key", run.idempotencyKey())
                .header("X-Raftcron-Scheduled-At", run.scheduledAt()).header("X-Raftcron-Attempt", Long.toString(run.attempt()))
                .header("X-Raftcron-Signature", sig).build();
        return HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
    }

    static void handler() throws Exception {
        List<String> seen = new ArrayList<>();
        HttpServer server = HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", new FenceHandler(new Verifier(List.of(key("new"))), (ex, run, body) -> {
            seen.add(new String(body, StandardCharsets.UTF_8));
            FenceHandler.answer(ex, 200, "{\"status\":\"applied\"}");
        }));
        server.start();
        try {
            String base = "http://127.0.0.1:" + server.getAddress().getPort();
            equal(post(base, "/charge", "/charge", sampleRun(42), key("forger"), "{}").statusCode(), 401, "forged");
            equal(post(base, "/refund", "/charge", sampleRun(42), key("new"), "{}").statusCode(), 401, "another URL");
            equal(seen.size(), 0, "handler calls by refused requests");
            equal(post(base, "/charge?id=7", "/charge?id=7", sampleRun(42), key("new"), "{\"a\":1}").statusCode(), 200, "genuine");
            equal(seen, List.of("{\"a\":1}"), "bodies the handler saw");
        } finally {
            server.stop(0);
        }
    }

    /** A database of the test's own on the test server. */
    static Connection database() throws SQLException {
        String url = System.getenv("RAFTCRON_TEST_POSTGRES");
        if (url == null || url.isEmpty()) {
            throw new Runner.Skip("RAFTCRON_TEST_POSTGRES is not set: run through `make clients-test`");
        }
        URI u = URI.create(url);
        String base = "jdbc:postgresql://" + u.getHost() + ":" + u.getPort() + "/";
        String user = "?user=" + u.getUserInfo();
        String name = "java_" + ProcessHandle.current().pid() + "_" + System.nanoTime() % 1_000_000_000L;
        try (Connection admin = DriverManager.getConnection(base + "postgres" + user); Statement s = admin.createStatement()) {
            s.execute("CREATE DATABASE " + name);
        }
        return DriverManager.getConnection(base + name + user);
    }

    static String deliver(Connection c, Run run, String scope, boolean fail) throws SQLException {
        try {
            SqlFence.update(c, run, scope, tx -> {
                try (var p = tx.prepareStatement("INSERT INTO ledger (idempotency_key) VALUES (?)")) {
                    p.setString(1, run.idempotencyKey());
                    p.executeUpdate();
                }
                if (fail) {
                    throw new SQLException("the write failed");
                }
                return null;
            });
        } catch (Refused.Stale | Refused.Duplicate r) {
            return r.verdict();
        }
        return "applied";
    }

    static List<String> ledger(Connection c) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT idempotency_key FROM ledger ORDER BY id")) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    static Connection fencedDatabase() throws SQLException {
        Connection c = database();
        SqlFence.createTables(c);
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE ledger (id BIGSERIAL PRIMARY KEY, idempotency_key TEXT)");
        }
        return c;
    }

    static void sqlVectors() throws SQLException {
        try (Connection c = fencedDatabase()) {
            for (Object o : list(vectors.get("fence"))) {
                Map<String, Object> v = map(o);
                try (Statement s = c.createStatement()) {
                    s.execute("DELETE FROM raftcron_fences; DELETE FROM raftcron_applied_runs; DELETE FROM ledger");
                }
                List<String> got = new ArrayList<>();
                List<String> want = new ArrayList<>();
                for (Object so : list(v.get("steps"))) {
                    Map<String, Object> step = map(so);
                    Run run = new Run((Long) step.get("token"), "nightly-billing", "r", (String) step.get("key"),
                            "2026-11-22T01:00:00Z", 1);
                    got.add(deliver(c, run, (String) step.get("scope"), false));
                    want.add((String) step.get("want"));
                }
                equal(got, want, v.get("name") + ": outcomes");
                equal(ledger(c), v.get("applied"), v.get("name") + ": ledger");
            }
        }
    }

    static void sqlRollback() throws SQLException {
        try (Connection c = fencedDatabase()) {
            try {
                deliver(c, sampleRun(7), null, true);
                throw new AssertionError("a failed write succeeded");
            } catch (SQLException expected) {
                // the write's own error
            }
            equal(ledger(c), List.of(), "ledger after a failed write");
            equal(deliver(c, sampleRun(7), null, false), "applied", "retry");
            try {
                SqlFence.update(c, new Run(6, "nightly-billing", "r", "other", "2026-11-22T01:00:00Z", 1), null, tx -> null);
                throw new AssertionError("stale token applied");
            } catch (Refused.Stale s) {
                equal(s.highest(), 7L, "highest");
            }
        }
    }

    static void example() throws Exception {
        try (Connection c = database()) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE charges (run TEXT, body BYTEA)");
            }
            SqlFence.createTables(c);
            String jdbc = c.getMetaData().getURL();
            Path dir = Files.createTempDirectory("raftcron-java-");
            Files.writeString(dir.resolve("raftcron-fence.key"), keys.get("new") + "\n");
            // The example reads the key file from its working directory, as written.
            Process server = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"), ExampleServer.class.getName(), jdbc)
                    .directory(dir.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            try {
                String port = new java.io.BufferedReader(new java.io.InputStreamReader(server.getInputStream(),
                        StandardCharsets.UTF_8)).readLine();
                check(port != null, "the example server did not start");
                String base = "http://127.0.0.1:" + port;
                String body = "{\"amount\":\"12.50\"}";
                equal(post(base, "/charge", "/charge", sampleRun(5), key("forger"), body).statusCode(), 401, "forged");
                equal(post(base, "/charge", "/charge", sampleRun(5), key("new"), body).body(), "{\"status\":\"applied\"}", "first");
                equal(post(base, "/charge", "/charge", sampleRun(6), key("new"), body).body(), "{\"status\":\"duplicate\"}", "again");
                equal(post(base, "/charge", "/charge", sampleRun(4), key("new"), body).statusCode(), 409, "stale");
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT run, body FROM charges")) {
                    check(rs.next(), "one charge");
                    equal(rs.getString(1), "nightly-billing/2026-11-22T01:00:00Z", "charged run");
                    equal(new String(rs.getBytes(2), StandardCharsets.UTF_8), body, "charged body");
                    check(!rs.next(), "only one charge");
                }
            } finally {
                server.getOutputStream().close();
                if (!server.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
                    server.destroyForcibly();
                }
            }
        }
    }
}
