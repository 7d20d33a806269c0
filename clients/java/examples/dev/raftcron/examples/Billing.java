package dev.raftcron.examples;

import com.sun.net.httpserver.HttpServer;
import dev.raftcron.fence.FenceHandler;
import dev.raftcron.fence.Keys;
import dev.raftcron.fence.SqlFence;
import dev.raftcron.fence.Verifier;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.sql.DriverManager;

/** A service that receives raftcron's nightly-billing webhook and charges once per run. */
public final class Billing {
    private Billing() {}

    public static HttpServer start(String jdbcUrl, int port) throws Exception {
        // [docs:java]
        var verifier = new Verifier(Keys.load(Path.of("raftcron-fence.key"))).withJobs("nightly-billing");
        var server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.createContext("/charge", new FenceHandler(verifier, (exchange, run, body) -> {
            try (var db = DriverManager.getConnection(jdbcUrl)) {
                SqlFence.update(db, run, null, tx -> {
                    var insert = tx.prepareStatement("INSERT INTO charges VALUES (?, ?)");
                    insert.setString(1, run.idempotencyKey());
                    insert.setBytes(2, body);
                    return insert.executeUpdate();
                });
            }
            FenceHandler.answer(exchange, 200, "{\"status\":\"applied\"}");
        }));
        server.start();
        // [/docs:java]
        return server;
    }
}
