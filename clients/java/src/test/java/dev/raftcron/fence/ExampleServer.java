package dev.raftcron.fence;

/**
 * Starts the README example in a JVM of its own, so that it reads its key file from the
 * working directory as written: prints the port, serves until stdin closes.
 */
public final class ExampleServer {
    private ExampleServer() {}

    public static void main(String[] args) throws Exception {
        var server = dev.raftcron.examples.Billing.start(args[0], 0);
        System.out.println(server.getAddress().getPort());
        System.out.flush();
        while (System.in.read() >= 0) {
            // wait for the parent to close stdin
        }
        server.stop(0);
    }
}
