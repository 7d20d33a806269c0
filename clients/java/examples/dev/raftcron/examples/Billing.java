package dev.raftcron.examples;

import com.sun.net.httpserver.HttpServer;
import dev.raftcron.fence.FenceHandler;
import dev.raftcron.fence.Keys;
import dev.raftcron.fence.SqlFence;
import dev.raftcron.fence.Verifier;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

/** A service that receives raftcron's nightly-billing webhook and charges once per run. */
public final class Billing {
    private Billing() {}

    public static HttpServer start(String jdbcUrl, int port) throws Exception {
        // [docs:java]
        var verifier = new Verifier(Keys.load(Path.of("raftcron-fence.key"))).withJobs("nightly-billing");
        var server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.createContext("/charge", new FenceHandler(verifier, (exchange, run, body) -> {
            try (var db = DriverManager.getConnection(jdbcUrl)) {
                SqlFence.update(db, run, null, tx -> insertCharge(tx, run.idempotencyKey(), body));
            }
            FenceHandler.answer(exchange, 200, "{\"status\":\"applied\"}");
        }));
        server.start();
        // [/docs:java]
        return server;
    }

    private static int insertCharge(Connection tx, String idempotencyKey, byte[] body) throws SQLException {
        var insert = tx.prepareStatement("INSERT INTO charges VALUES (?, ?)");
        insert.setString(1, idempotencyKey);
        insert.setBytes(2, body);
        return insert.executeUpdate();
    }
}
