package dev.raftcron.worker;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** One raftcron node on loopback, started by the tests, and its command line. */
final class Node {
    final Path bin;
    final Path dir;
    final String addr;
    final String httpAddr;
    private final Process proc;

    private Node(Path bin, Path dir, String addr, String httpAddr, Process proc) {
        this.bin = bin;
        this.dir = dir;
        this.addr = addr;
        this.httpAddr = httpAddr;
        this.proc = proc;
    }

    /** Starts a one-node cluster with these serve flags and waits until it is ready. */
    static Node start(Path bin, List<String> flags) throws Exception {
        Path dir = Files.createTempDirectory("raftcron-java-worker");
        String addr = "127.0.0.1:" + freePort();
        String http = "127.0.0.1:" + freePort();
        List<String> cmd = new ArrayList<>(List.of(bin.toString(), "serve", "--id", "n1", "--data-dir",
                dir.resolve("data").toString(), "--addr", addr, "--http-addr", http, "--peers", "n1=" + addr));
        cmd.addAll(flags);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("node.log").toFile()).start();
        Node n = new Node(bin, dir, addr, http, p);
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
        HttpClient c = HttpClient.newHttpClient();
        long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            if (!p.isAlive()) {
                throw new IllegalStateException("the node exited while starting: " + n.log());
            }
            try {
                HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create("http://" + http + "/readyz"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return n;
                }
            } catch (IOException notYet) {
                // Not listening yet.
            }
            if (System.nanoTime() - end > 0) {
                n.close();
                throw new IllegalStateException("the node was not ready within 30 s: " + n.log());
            }
            Thread.sleep(100);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    String log() {
        try {
            return Files.readString(dir.resolve("node.log"));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Runs a raftcron command against this node; its output, or an exception with it. */
    String cli(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(bin.toString()));
        cmd.addAll(List.of(args));
        cmd.addAll(List.of("--addr", addr));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", args) + ": " + out);
        }
        return out;
    }

    /** Applies a job file's text. */
    void apply(String yaml) throws Exception {
        Path f = Files.createTempFile(dir, "job", ".yaml");
        Files.writeString(f, yaml);
        cli("job", "apply", "-f", f.toString());
    }

    /** Triggers a manual run of job; its run ID. */
    String trigger(String job) throws Exception {
        return (String) Json.parseObject(cli("job", "trigger", job, "-o", "json")).get("id");
    }

    /** The run as `run get -o json` shows it. */
    Map<String, Object> run(String id) throws Exception {
        return Json.parseObject(cli("run", "get", id, "-o", "json"));
    }

    void close() throws InterruptedException {
        proc.destroyForcibly();
        proc.waitFor(10, TimeUnit.SECONDS);
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            System.out.println("remove " + dir + ": " + e);
        }
    }
}
