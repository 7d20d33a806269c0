package dev.raftcron.fence;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpsExchange;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

/**
 * An {@link HttpHandler} for {@code com.sun.net.httpserver} that verifies a dispatch and
 * hands its run and body to the next handler; a refused one is answered with the
 * status and JSON body of its {@link Refused}, and so is a Refused (Stale, Duplicate)
 * the next handler throws.
 */
public final class FenceHandler implements HttpHandler {
    /** The largest body read; raftcron sends at most 64 KiB. */
    public static final int MAX_BODY = 1 << 20;

    /** What runs once the dispatch is verified. */
    @FunctionalInterface
    public interface Next {
        void handle(HttpExchange exchange, Run run, byte[] body) throws Exception;
    }

    private static final System.Logger LOG = System.getLogger(FenceHandler.class.getName());

    private final Verifier verifier;
    private final Next next;
    private final Function<HttpExchange, String> requestUrl;

    public FenceHandler(Verifier verifier, Next next) {
        this(verifier, next, FenceHandler::receivedUrl);
    }

    /** With requestUrl computing the URL the nodes sent to, behind a proxy. */
    public FenceHandler(Verifier verifier, Next next, Function<HttpExchange, String> requestUrl) {
        this.verifier = verifier;
        this.next = next;
        this.requestUrl = requestUrl;
    }

    /** The URL as received: https over TLS, the Host header, the raw path and query. */
    public static String receivedUrl(HttpExchange ex) {
        String scheme = ex instanceof HttpsExchange ? "https" : "http";
        return scheme + "://" + ex.getRequestHeaders().getFirst("Host") + ex.getRequestURI().toString();
    }

    @Override
    public void handle(HttpExchange ex) throws IOException {
        try {
            byte[] body = readBody(ex.getRequestBody());
            Run run = verifier.checkRequest(ex.getRequestMethod(), requestUrl.apply(ex),
                    ex.getRequestHeaders()::get, body);
            next.handle(ex, run, body);
        } catch (Refused r) {
            answer(ex, r.status(), r.body());
        } catch (Exception e) {
            // com.sun.net.httpserver would drop the connection without an answer; a 500
            // makes raftcron retry the attempt.
            LOG.log(System.Logger.Level.ERROR, "raftcron fence: the handler failed", e);
            answer(ex, 500, "{\"error\":\"internal error\"}");
        } finally {
            ex.close();
        }
    }

    /** Sends a JSON answer. */
    public static void answer(HttpExchange ex, int status, String json) throws IOException {
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, b.length);
        ex.getResponseBody().write(b);
    }

    private static byte[] readBody(InputStream in) throws IOException {
        byte[] b = in.readNBytes(MAX_BODY + 1);
        if (b.length > MAX_BODY) {
            throw new Refused(413, "error", "body larger than " + MAX_BODY + " bytes");
        }
        return b;
    }
}
