package dev.raftcron.worker;

import dev.raftcron.fence.Refused;
import dev.raftcron.fence.Verifier;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * A worker of one pool over the HTTP worker protocol (docs/workers.md): it polls any of its
 * nodes for attempts of its handlers, runs each on a thread of its own, heartbeats it every
 * third of its lease (carrying its progress), stops it when the leader says it is superseded,
 * and reports its outcome.
 *
 * <pre>{@code
 * new Worker("billing", token, "10.0.0.1:8001", "10.0.0.2:8001").id("billing-1")
 *     .handler("charge", ctx -> charge(ctx.token(), ctx.payload()))
 *     .run();
 * }</pre>
 */
public final class Worker {
    private static final System.Logger LOG = System.getLogger("dev.raftcron.worker");
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    /** How often a pending progress report is sent, at most. */
    private static final Duration PROGRESS_EVERY = Duration.ofSeconds(1);
    private static final int MAX_TEXT = 4096;
    private static final long FOREVER = Long.MAX_VALUE / 4;

    private final String pool;
    private final String token;
    private final List<String> addrs;
    private final Map<String, Handler> handlers = new LinkedHashMap<>();
    private String id = defaultId();
    private Map<String, String> tags = Map.of();
    private int concurrency = 4;
    private Verifier verifier;
    private Duration pollWait = Duration.ofSeconds(30);
    private Duration grace = Duration.ofSeconds(30);

    private final Api api;
    private final Map<String, Context> active = new ConcurrentHashMap<>();
    private final Object slots = new Object();
    private final CountDownLatch done = new CountDownLatch(1);
    private ScheduledExecutorService timers;
    private ExecutorService threads;
    private Completer completer;
    private Thread poller;
    private volatile boolean stopping;
    private volatile RuntimeException fatal;

    /**
     * @param pool the pool whose attempts it takes
     * @param token the secret of a worker token of the pool ({@code acl token create --role
     *     worker --pool ...}), or null on a cluster without {@code --acl}
     * @param addrs HTTP {@code host:port} (or URLs) of any nodes: it follows them to the leader
     */
    public Worker(String pool, String token, String... addrs) {
        check("pool", pool);
        this.pool = pool;
        this.token = token;
        this.addrs = List.of(addrs);
        this.api = new Api(this.addrs, token);
    }

    /** Names this worker, stable across restarts; the host's name by default. */
    public Worker id(String id) {
        check("id", id);
        this.id = id;
        return this;
    }

    /** The worker's tags: a job's {@code worker.tags} choose among a pool's workers by them. */
    public Worker tags(Map<String, String> tags) {
        this.tags = Map.copyOf(tags);
        return this;
    }

    /** How many attempts it runs at once (4 by default). */
    public Worker concurrency(int n) {
        if (n < 1 || n > 1000) {
            throw new IllegalArgumentException("concurrency: " + n + " is not 1 to 1000");
        }
        this.concurrency = n;
        return this;
    }

    /**
     * Verifies every offer's signature with these keys ({@code Keys.load(path)} of the nodes'
     * {@code --fence-key-file}): an offer that fails is completed {@code failed}, {@code bad
     * signature}, and never run.
     */
    public Worker keys(List<byte[]> keys) {
        this.verifier = new Verifier(keys);
        return this;
    }

    /** The same with a verifier of your own ({@code acceptV1()} during an upgrade). */
    public Worker verifier(Verifier v) {
        this.verifier = v;
        return this;
    }

    /** How long one poll waits for an offer (30 s by default, at most 60 s). */
    public Worker pollWait(Duration d) {
        if (d.isNegative() || d.compareTo(Duration.ofSeconds(60)) > 0) {
            throw new IllegalArgumentException("pollWait: " + d + " is not 0 to 60s");
        }
        this.pollWait = d;
        return this;
    }

    /** How long {@link #run()} lets running attempts finish on SIGTERM (30 s by default). */
    public Worker grace(Duration d) {
        this.grace = d;
        return this;
    }

    /** Runs {@code h} for the attempts of jobs whose {@code worker.handler} is {@code name}. */
    public Worker handler(String name, Handler h) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("handler: a name is required");
        }
        handlers.put(name, h);
        return this;
    }

    /**
     * Starts the worker and waits until it stops: on SIGTERM (or any JVM shutdown) it stops
     * polling, lets running attempts finish within its grace, and hands back the others.
     *
     * @throws ApiException when the cluster refuses the worker (its token, pool or concurrency)
     */
    public void run() throws InterruptedException {
        start();
        Thread hook = new Thread(() -> {
            try {
                stop(grace);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "raftcron-worker-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        done.await();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // The hook is what stopped it.
        }
        if (fatal != null) {
            throw fatal;
        }
    }

    /** Starts polling in the background; {@link #stop(Duration)} ends it. */
    public synchronized void start() {
        if (poller != null) {
            throw new IllegalStateException("the worker has started already");
        }
        if (handlers.isEmpty()) {
            throw new IllegalStateException("handler: register at least one before starting");
        }
        timers = Executors.newSingleThreadScheduledExecutor(daemons("raftcron-worker-timer"));
        threads = Executors.newCachedThreadPool(daemons("raftcron-worker"));
        completer = new Completer(api, threads, daemons("raftcron-worker-complete"));
        completer.start();
        poller = daemons("raftcron-worker-poll").newThread(this::pollLoop);
        poller.start();
        timers.scheduleWithFixedDelay(this::tick, 0, 100, TimeUnit.MILLISECONDS);
    }

    /**
     * Stops polling, waits up to {@code grace} for running attempts to finish, then cancels
     * the others and completes them {@code cancelled}: the leader hands them to another worker.
     * It returns once the outcomes are reported (or after 10 s more).
     */
    public void stop(Duration grace) throws InterruptedException {
        synchronized (this) {
            if (stopping || poller == null) {
                if (poller != null) {
                    done.await();
                }
                return;
            }
            stopping = true;
        }
        poller.interrupt();
        awaitIdle(grace);
        for (Context ctx : active.values()) {
            if (ctx.finished()) { // only its outcome is not yet reported
                continue;
            }
            LOG.log(Level.INFO, "handing back " + ctx.runId() + " (token " + Long.toUnsignedString(ctx.token()) + ")");
            ctx.cancel(Context.Stop.WORKER_STOPPING, "worker stopping");
        }
        awaitIdle(Duration.ofSeconds(10));
        completer.stop();
        timers.shutdownNow();
        threads.shutdownNow();
        done.countDown();
    }

    /** How many attempts it runs now, or has run and not yet reported. */
    public int running() {
        return active.size();
    }

    private void awaitIdle(Duration d) throws InterruptedException {
        long end = System.nanoTime() + d.toNanos();
        synchronized (slots) {
            while (!active.isEmpty() && end - System.nanoTime() > 0) {
                slots.wait(Math.max(1, (end - System.nanoTime()) / 1_000_000));
            }
        }
    }

    private void pollLoop() {
        Duration backoff = Api.MIN_BACKOFF;
        while (!stopping) {
            int free;
            try {
                synchronized (slots) {
                    while (!stopping && active.size() >= concurrency) {
                        slots.wait();
                    }
                    free = concurrency - active.size();
                }
                if (stopping) {
                    return;
                }
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("pool", pool);
                body.put("tags", tags);
                body.put("handlers", new ArrayList<>(handlers.keySet()));
                body.put("max", free);
                body.put("wait", Offer.duration(pollWait));
                Map<String, Object> resp = api.call("/v1/workers/" + id + ":poll", body,
                        pollWait.plusSeconds(15), System.nanoTime() + FOREVER);
                long received = System.nanoTime();
                backoff = Api.MIN_BACKOFF;
                if (resp.get("offers") instanceof List<?> offers) {
                    for (Object o : offers) {
                        take(Offer.parse((Map<?, ?>) o), received);
                    }
                }
            } catch (InterruptedException e) {
                return;
            } catch (ApiException e) {
                if (e.status() == 400 || e.status() == 401 || e.status() == 403) {
                    LOG.log(Level.ERROR, "worker " + id + " refused, stopping: " + e.getMessage());
                    fatal = e;
                    new Thread(() -> {
                        try {
                            stop(grace);
                        } catch (InterruptedException ie) {
                            Thread.currentThread().interrupt();
                        }
                    }, "raftcron-worker-stop").start();
                    return;
                }
                LOG.log(Level.WARNING, "poll: " + e.getMessage());
                try {
                    Thread.sleep(backoff.toMillis());
                } catch (InterruptedException ie) {
                    return;
                }
                backoff = backoff.multipliedBy(2).compareTo(Api.MAX_BACKOFF) > 0 ? Api.MAX_BACKOFF : backoff.multipliedBy(2);
            }
        }
    }

    /** Starts an offer's handler, unless its signature or lease forbids running it. */
    private void take(Offer offer, long received) {
        Context ctx = new Context(offer, received);
        String key = offer.runId() + "/" + Long.toUnsignedString(offer.token());
        if (verifier != null) {
            try {
                verifier.verify(offer.run(), offer.signature(), "", "", offer.payload().getBytes(StandardCharsets.UTF_8));
            } catch (Refused r) {
                refuse(ctx, key, "bad signature: " + r.getMessage());
                return;
            }
        }
        Handler h = handlers.get(offer.handler());
        if (h == null) {
            refuse(ctx, key, "no handler " + offer.handler() + " on worker " + id);
            return;
        }
        Duration rtt = api.roundTrip();
        if (offer.lease().compareTo(rtt.multipliedBy(3)) <= 0) {
            refuse(ctx, key, "lease " + Offer.duration(offer.lease()) + " cannot be kept up: a call takes "
                    + rtt.toMillis() + " ms, and a heartbeat is due every third of the lease");
            return;
        }
        active.put(key, ctx);
        threads.execute(() -> runHandler(ctx, h, key));
    }

    private void refuse(Context ctx, String key, String why) {
        LOG.log(Level.WARNING, "not running " + key + ": " + why);
        active.put(key, ctx);
        complete(ctx, key, "failed", why);
    }

    private void runHandler(Context ctx, Handler h, String key) {
        ctx.bind(Thread.currentThread());
        Throwable err = null;
        try {
            h.handle(ctx);
        } catch (Throwable t) {
            err = t;
        }
        Context.Stop stop = ctx.finish();
        ctx.bind(null);
        Thread.interrupted();
        String outcome;
        String detail = "";
        switch (stop) {
            case DEADLINE -> {
                outcome = "deadline_exceeded";
                detail = ctx.cancelReason();
            }
            case SUPERSEDED, LEASE_LOST, WORKER_STOPPING -> {
                outcome = "cancelled";
                detail = ctx.cancelReason();
            }
            default -> {
                outcome = err == null ? "succeeded" : err instanceof Fenced || err instanceof Refused.Stale ? "fenced" : "failed";
                detail = err == null ? "" : err.toString();
            }
        }
        complete(ctx, key, outcome, detail);
    }

    private void release(String key) {
        synchronized (slots) {
            active.remove(key);
            slots.notifyAll();
        }
    }

    /** Queues the outcome: the attempt holds its slot until it is reported. */
    private void complete(Context ctx, String key, String outcome, String detail) {
        completer.add(new Completer.Outcome(ctx, outcome, tail(ctx.outputText()), head(detail.replace('\n', ' ')),
                () -> release(key)));
    }

    /** Every 100 ms: the heartbeats due (a third of the lease, or a second after progress), the deadlines. */
    private void tick() {
        long now = System.nanoTime();
        for (Context ctx : active.values()) {
            if (!ctx.isCancelled() && now - ctx.deadlineNanos > 0) {
                ctx.cancel(Context.Stop.DEADLINE, "deadline exceeded: ran past its limit");
            }
            if (ctx.beating) {
                continue;
            }
            long since = now - ctx.lastBeat;
            boolean due = since >= ctx.lease.toNanos() / 3
                    || (!ctx.pendingProgress().isEmpty() && since >= PROGRESS_EVERY.toNanos());
            if (due && !ctx.isCancelled() && !ctx.finished()) {
                ctx.beating = true;
                ctx.lastBeat = now;
                threads.execute(() -> heartbeat(ctx));
            }
        }
    }

    private void heartbeat(Context ctx) {
        Map<String, Object> progress = ctx.pendingProgress();
        long sent = System.nanoTime();
        try {
            Duration tryFor = ctx.lease.dividedBy(3).compareTo(Duration.ofSeconds(1)) < 0
                    ? Duration.ofSeconds(1) : ctx.lease.dividedBy(3);
            Map<String, Object> resp = api.call(path(ctx, "heartbeat"), progress, tryFor, ctx.leaseEnd);
            ctx.progressDelivered(progress);
            Duration lease = Offer.duration(String.valueOf(resp.getOrDefault("lease", "")), "lease");
            if (!lease.isZero()) {
                ctx.lease = lease;
            }
            ctx.leaseEnd = sent + ctx.lease.toNanos();
        } catch (Superseded s) {
            if (!ctx.finished()) { // else its complete got there first
                LOG.log(Level.INFO, "stopping " + ctx.runId() + ": " + s.getMessage());
                ctx.cancel(Context.Stop.SUPERSEDED, s.getMessage());
            }
        } catch (ApiException e) {
            LOG.log(Level.WARNING, "heartbeat of " + ctx.runId() + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            ctx.beating = false;
        }
        if (!ctx.isCancelled() && !ctx.finished() && System.nanoTime() - ctx.leaseEnd > 0) {
            String why = "lease lost: no heartbeat answered within its lease of " + Offer.duration(ctx.lease);
            LOG.log(Level.WARNING, "stopping " + ctx.runId() + ": " + why);
            ctx.cancel(Context.Stop.LEASE_LOST, why);
        }
    }

    static String path(Context ctx, String verb) {
        return "/v1/attempts/" + ctx.runId() + "/" + Long.toUnsignedString(ctx.token()) + ":" + verb;
    }

    /** The last 4 KiB of s, whole characters. */
    private static String tail(String s) {
        while (s.getBytes(StandardCharsets.UTF_8).length > MAX_TEXT) {
            s = s.substring(Math.max(1, s.length() - MAX_TEXT + 16));
        }
        return s;
    }

    private static String head(String s) {
        while (s.getBytes(StandardCharsets.UTF_8).length > MAX_TEXT) {
            s = s.substring(0, Math.min(s.length() - 1, MAX_TEXT - 16));
        }
        return s;
    }

    private static void check(String field, String v) {
        if (v == null || !NAME.matcher(v).matches()) {
            throw new IllegalArgumentException(field + ": " + v + " must match [a-z0-9][a-z0-9._-]{0,62}");
        }
    }

    private static String defaultId() {
        try {
            String h = InetAddress.getLocalHost().getHostName().toLowerCase().replaceAll("[^a-z0-9._-]", "-");
            h = h.replaceAll("^[^a-z0-9]+", "");
            return h.isEmpty() ? "worker" : h.substring(0, Math.min(63, h.length()));
        } catch (UnknownHostException e) {
            return "worker";
        }
    }

    private static ThreadFactory daemons(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
