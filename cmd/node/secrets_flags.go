package main

import (
	"fmt"

	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/secret"
)

// flagSecretsKeyFile names the key files of the secret store.
const flagSecretsKeyFile = "secrets-key-file"

func addSecretsFlags(fs *pflag.FlagSet) {
	fs.String(flagSecretsKeyFile, "", "FILE[,FILE]: keys of the secret store (base64 of 32 bytes each; "+
		"`raftcron secret keygen --out FILE` writes one): the first encrypts the secrets this node receives, "+
		"every one decrypts; give every node the same files. Without it the node stores no secret, "+
		"and stops if the cluster stores one")
}

// parseSecretsKeys reads --secrets-key-file; nil without it.
func parseSecretsKeys(k *koanf.Koanf) (*secret.Keyring, error) {
	paths := cli.SplitList(stringValue(k, flagSecretsKeyFile))
	if len(paths) == 0 {
		return nil, nil
	}
	keys, err := secret.LoadKeyring(paths)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagSecretsKeyFile, err)
	}
	return keys, nil
}
