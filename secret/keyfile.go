package secret

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadKeyFile reads a key file: the base64 encoding of KeySize random
// bytes, surrounding white space ignored.
func ReadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: not base64: %v", path, err)
	}
	if len(raw) != KeySize {
		return nil, fmt.Errorf("%s: holds %d bytes, want %d (write one with raftcron secret keygen --out FILE)", path, len(raw), KeySize)
	}
	return raw, nil
}

// LoadKeyring reads the key files of --secrets-key-file, the first
// encrypting.
func LoadKeyring(paths []string) (*Keyring, error) {
	keys := make([][]byte, 0, len(paths))
	for _, p := range paths {
		if strings.TrimSpace(p) == "" {
			return nil, errors.New("an empty key file name")
		}
		raw, err := ReadKeyFile(p)
		if err != nil {
			return nil, err
		}
		keys = append(keys, raw)
	}
	return NewKeyring(keys...)
}

// WriteKeyFile writes a new random key to path, readable by its owner
// only, and returns the key's ID. It never overwrites a file: losing a key
// loses every value encrypted with it.
func WriteKeyFile(path string) (string, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", err
	}
	return KeyID(raw), nil
}
