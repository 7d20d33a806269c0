package dev.raftcron.worker;

import dev.raftcron.fence.Run;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * One attempt a handler runs: what the offer carried, its progress, and whether it must stop
 * (superseded, cancelled, past its deadline, its lease lost, or the worker stopping).
 */
public final class Context {
    /** Why the SDK stopped an attempt; it decides the outcome reported. */
    enum Stop { NONE, SUPERSEDED, DEADLINE, LEASE_LOST, WORKER_STOPPING }

    private final Offer offer;
    private final Instant deadline;
    private Thread thread;
    private Stop stop = Stop.NONE;
    private boolean finished;
    private String stopReason = "";
    private Integer progress;
    private String message;
    private boolean progressSent = true;
    private String output = "";
    /** When the lease runs out as far as this worker knows (System.nanoTime), and its length. */
    volatile long leaseEnd;
    volatile Duration lease;
    /** When the last heartbeat was sent (System.nanoTime). */
    volatile long lastBeat;
    volatile boolean beating;
    /** The deadline on System.nanoTime's scale. */
    final long deadlineNanos;

    Context(Offer offer, long receivedNanos) {
        this.offer = offer;
        this.deadline = Instant.now().plus(offer.limit()).minusNanos(System.nanoTime() - receivedNanos);
        // An offer always carries its limit; without one, the lease alone bounds the attempt.
        this.deadlineNanos = receivedNanos + (offer.limit().isZero() ? Long.MAX_VALUE / 4 : offer.limit().toNanos());
        this.lease = offer.lease();
        this.leaseEnd = receivedNanos + offer.lease().toNanos();
        this.lastBeat = receivedNanos;
    }

    Offer offer() {
        return offer;
    }

    /** The attempt's fencing token, unsigned: fence every write with it. */
    public long token() {
        return offer.token();
    }

    public String runId() {
        return offer.runId();
    }

    public String job() {
        return offer.job();
    }

    /** The slot's nominal time, RFC 3339 UTC. */
    public String slot() {
        return offer.slot();
    }

    /** 1-based. */
    public long attempt() {
        return offer.attempt();
    }

    /** The job's {@code worker.payload}, as is. */
    public String payload() {
        return offer.payload();
    }

    /** The attempt's {@code RAFTCRON_*} variables, as a command of it gets them. */
    public Map<String, String> env() {
        return offer.env();
    }

    /** The same for every attempt of the run: de-duplicate writes on it. */
    public String idempotencyKey() {
        return offer.idempotencyKey();
    }

    /** When the attempt must have ended, on this machine's clock. */
    public Instant deadline() {
        return deadline;
    }

    /** The attempt as the fence kit takes it ({@code SqlFence.update(db, ctx.run(), ...)}). */
    public Run run() {
        return offer.run();
    }

    /**
     * Reports how far the attempt has come: {@code percent} 0 to 100, {@code message} at most
     * 256 bytes (null leaves it as it was). Never blocks: the latest report goes with the next
     * heartbeat, within about a second.
     */
    public synchronized void progress(int percent, String message) {
        if (percent < 0 || percent > 100) {
            throw new IllegalArgumentException("progress: " + percent + " is not 0 to 100");
        }
        if (message != null && message.getBytes(StandardCharsets.UTF_8).length > 256) {
            throw new IllegalArgumentException("message: longer than 256 bytes");
        }
        this.progress = percent;
        if (message != null) {
            this.message = message;
        }
        progressSent = false;
    }

    /** Text kept with the attempt's outcome (its first 4 KiB). */
    public synchronized void output(String text) {
        output = text == null ? "" : text;
    }

    /** True once the attempt must stop; {@link #cancelReason()} says why. */
    public synchronized boolean isCancelled() {
        return stop != Stop.NONE;
    }

    /** Why the attempt must stop, or empty. */
    public synchronized String cancelReason() {
        return stopReason;
    }

    /** Marks the handler returned, after which nothing stops it: why it was stopped, if it was. */
    synchronized Stop finish() {
        finished = true;
        return stop;
    }

    synchronized boolean finished() {
        return finished;
    }

    synchronized String outputText() {
        return output;
    }

    /** The unsent progress report as heartbeat fields, or an empty map. */
    synchronized Map<String, Object> pendingProgress() {
        if (progressSent || progress == null) {
            return Map.of();
        }
        return message == null ? Map.of("progress", progress) : Map.of("progress", progress, "message", message);
    }

    synchronized void progressDelivered(Map<String, Object> sent) {
        if (Objects.equals(sent.get("progress"), progress) && Objects.equals(sent.get("message"), message)) {
            progressSent = true;
        }
    }

    synchronized void bind(Thread t) {
        thread = t;
        if (stop != Stop.NONE && t != null) {
            t.interrupt();
        }
    }

    /** Stops the attempt: the first reason wins; the handler's thread is interrupted. */
    synchronized void cancel(Stop why, String reason) {
        if (stop != Stop.NONE || finished) {
            return;
        }
        stop = why;
        stopReason = reason;
        if (thread != null) {
            thread.interrupt();
        }
    }
}
