package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/knadh/koanf/v2"
)

// flagACLBootstrapFile names the file whose content is the secret of the
// cluster's first management token (docs/acl.md, "Bootstrap").
const flagACLBootstrapFile = "acl-bootstrap-file"

// maxBootstrapFile bounds what the flag reads: a secret, not a log.
const maxBootstrapFile = 64 << 10

// readACLBootstrapFile reads the secret of --acl-bootstrap-file, without
// the whitespace around it; "" when the flag is not set. What the secret
// must be is server's rule (Config.Validate).
func readACLBootstrapFile(k *koanf.Koanf) (string, error) {
	path := stringValue(k, flagACLBootstrapFile)
	if path == "" {
		return "", nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flagACLBootstrapFile, err)
	}
	if st.Size() > maxBootstrapFile {
		return "", fmt.Errorf("--%s %s: %d bytes is not a secret", flagACLBootstrapFile, path, st.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flagACLBootstrapFile, err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("--%s %s: the file is empty", flagACLBootstrapFile, path)
	}
	return secret, nil
}
