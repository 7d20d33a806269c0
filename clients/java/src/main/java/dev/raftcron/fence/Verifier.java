package dev.raftcron.fence;

import java.security.MessageDigest;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Checks dispatch signatures: v2 made with one of the keys, v1 only with
 * {@link #acceptV1()} (during an upgrade from nodes that sign v1), then which jobs and
 * URLs this service accepts. Immutable: each {@code with} method returns a new Verifier.
 */
public final class Verifier {
    private static final Pattern SIG = Pattern.compile("[A-Za-z0-9_-]{43}");

    private final List<byte[]> keys;
    private final boolean acceptV1;
    private final Set<String> jobs;
    private final String urlPrefix;

    public Verifier(List<byte[]> keys) {
        this(keys, false, Set.of(), "");
    }

    private Verifier(List<byte[]> keys, boolean acceptV1, Set<String> jobs, String urlPrefix) {
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("no keys");
        }
        this.keys = List.copyOf(keys);
        this.acceptV1 = acceptV1;
        this.jobs = Set.copyOf(jobs);
        this.urlPrefix = urlPrefix;
    }

    /** Also accept v1 signatures, which do not cover the method, URL or body. */
    public Verifier acceptV1() {
        return new Verifier(keys, true, jobs, urlPrefix);
    }

    /** Accept only runs of these jobs. */
    public Verifier withJobs(String... names) {
        return new Verifier(keys, acceptV1, Set.of(names), urlPrefix);
    }

    /** Accept only HTTP dispatches whose URL starts with prefix. */
    public Verifier withUrlPrefix(String prefix) {
        return new Verifier(keys, acceptV1, jobs, prefix);
    }

    /**
     * Throws {@link Refused} (Unsigned, BadSignature, NotAccepted) unless the dispatch is
     * genuine and meant for this service. An exec run passes empty method and URL.
     */
    public void verify(Run run, String signature, String method, String url, byte[] body) {
        if (signature == null || signature.isEmpty()) {
            throw new Refused.Unsigned();
        }
        String message;
        if (signature.startsWith("v2=")) {
            message = Signatures.canonicalV2(run, method, url, body);
        } else if (signature.startsWith("v1=") && acceptV1) {
            if (!run.idempotencyKey().equals(run.job() + "/" + run.scheduledAt())
                    && !run.idempotencyKey().equals(run.job() + "/manual/" + run.runId())) {
                throw new Refused.BadSignature("idempotency key is not the one the signed fields imply");
            }
            message = Signatures.canonicalV1(run);
        } else if (signature.startsWith("v1=")) {
            throw new Refused.BadSignature("v1 signatures are refused: they do not cover the method, URL or body");
        } else {
            throw new Refused.BadSignature("want the form v2=<base64url>");
        }
        String enc = signature.substring(3);
        if (!SIG.matcher(enc).matches()) {
            throw new Refused.BadSignature("not 32 bytes of unpadded base64url");
        }
        byte[] got = Base64.getUrlDecoder().decode(enc);
        boolean made = false;
        for (byte[] key : keys) {
            made |= MessageDigest.isEqual(got, Signatures.mac(key, message));
        }
        if (!made) {
            throw new Refused.BadSignature("made with none of the keys, or the request was altered");
        }
        if (!jobs.isEmpty() && !jobs.contains(run.job())) {
            throw new Refused.NotAccepted("job " + Refused.quote(run.job()));
        }
        if (!urlPrefix.isEmpty() && !url.isEmpty() && !url.startsWith(urlPrefix)) {
            throw new Refused.NotAccepted("URL " + Refused.quote(url));
        }
    }

    /**
     * Parses and verifies an HTTP dispatch: {@code url} is the URL the node sent it to,
     * {@code headers} returns every value of a header name.
     */
    public Run checkRequest(String method, String url, Function<String, List<String>> headers, byte[] body) {
        List<String> sigs = headers.apply(Run.HEADER_SIGNATURE);
        if (sigs == null || sigs.isEmpty()) {
            throw new Refused.Unsigned();
        }
        Run run = Run.fromHeaders(headers);
        if (sigs.size() > 1) {
            throw new Refused.BadSignature(Run.HEADER_SIGNATURE + " given " + sigs.size() + " times, want once");
        }
        verify(run, sigs.get(0), method, url, body);
        return run;
    }

    /** Parses and verifies an exec run (or worker attempt) from its environment. */
    public Run checkEnv(Map<String, String> env, byte[] payload) {
        Run run = Run.fromEnv(env);
        verify(run, env.getOrDefault(Run.ENV_SIGNATURE, ""), "", "", payload);
        return run;
    }
}
