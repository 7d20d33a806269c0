package dev.raftcron.fence;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** The messages raftcron signs, and the signer (docs/fencing.md, "Signature v2"). */
public final class Signatures {
    private Signatures() {}

    /** The message a v1 signature covers. */
    public static String canonicalV1(Run run) {
        return String.join("\n", "raftcron-signature-v1", run.job(), run.runId(),
                Long.toUnsignedString(run.token()), run.scheduledAt(), Long.toString(run.attempt()));
    }

    /**
     * The message a v2 signature covers. An exec run or worker attempt has no method and no
     * URL (pass empty strings); {@code body} is the request body or the run's payload.
     */
    public static String canonicalV2(Run run, String method, String url, byte[] body) {
        if (Run.hasControl(method) || Run.hasControl(url)) {
            throw new Refused.BadSignature("method or URL contains a control character");
        }
        if (method.isEmpty() != url.isEmpty()) {
            throw new Refused.BadSignature("an HTTP dispatch needs both its method and its URL");
        }
        List<String> lines = new ArrayList<>(List.of("raftcron-signature-v2"));
        if (!method.isEmpty()) {
            lines.add("method:" + method);
            lines.add("url:" + url);
        }
        lines.add("body-sha256:" + HexFormat.of().formatHex(sha256(body)));
        lines.add("job:" + run.job());
        lines.add("run-id:" + run.runId());
        lines.add("token:" + Long.toUnsignedString(run.token()));
        lines.add("scheduled-at:" + run.scheduledAt());
        lines.add("attempt:" + run.attempt());
        lines.add("idempotency-key:" + run.idempotencyKey());
        return String.join("\n", lines);
    }

    /** The {@code v2=...} signature a node holding {@code key} puts on this dispatch. */
    public static String signV2(byte[] key, Run run, String method, String url, byte[] body) {
        return "v2=" + Base64.getUrlEncoder().withoutPadding().encodeToString(
                mac(key, canonicalV2(run, method, url, body)));
    }

    static byte[] mac(byte[] key, String message) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(key, "HmacSHA256"));
            return m.doFinal(message.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    private static byte[] sha256(byte[] b) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(b);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
