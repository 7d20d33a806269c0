package dev.raftcron.fence;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The key file: one key per line (the first signs, a second verifies during a rotation),
 * each the line's text, at least 32 bytes; blank lines and lines starting with # are ignored.
 */
public final class Keys {
    public static final int MIN_KEY_LEN = 32;

    private Keys() {}

    public static List<byte[]> parse(String text) {
        List<byte[]> keys = new ArrayList<>();
        for (String line : text.split("\\r?\\n")) {
            String k = line.strip();
            if (!k.isEmpty() && !k.startsWith("#")) {
                keys.add(k.getBytes(StandardCharsets.UTF_8));
            }
        }
        if (keys.isEmpty() || keys.size() > 2) {
            throw new IllegalArgumentException("want 1 or 2 keys (the signing key, then the one being retired), got "
                    + keys.size());
        }
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i).length < MIN_KEY_LEN) {
                throw new IllegalArgumentException("key " + (i + 1) + " is " + keys.get(i).length
                        + " bytes, want at least " + MIN_KEY_LEN);
            }
        }
        return keys;
    }

    public static List<byte[]> load(Path path) throws IOException {
        return parse(Files.readString(path, StandardCharsets.UTF_8));
    }
}
