// Package secret is the edge of the secret store: the key file and the
// keyring that encrypts values before they enter the Raft log (AES-256-GCM),
// the ${secret:NAME} reference syntax of job specs, and the scrubbing of
// values out of what an attempt reports. The replicated state (fsm) keeps
// only ciphertext; encryption needs randomness, so it happens here, on the
// node that receives a value, never in Apply.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// MaxValue bounds a secret's value: it travels in the Raft log.
const MaxValue = 64 << 10

// Sentinel errors.
var (
	// ErrUnknownKey: a value is encrypted with a key the keyring does not
	// hold.
	ErrUnknownKey = errors.New("secret encrypted with a key this node does not hold")
	// ErrCorrupt: a ciphertext does not open with the key it names.
	ErrCorrupt = errors.New("secret does not decrypt")
	// ErrNoKeys: the node has no --secrets-key-file.
	ErrNoKeys = errors.New("this node has no --secrets-key-file")
)

// Keyring holds the keys of --secrets-key-file: the first encrypts, every
// one decrypts, so that a key can be rotated without a moment when some
// value cannot be read. A nil *Keyring holds no key. It is safe for
// concurrent use.
type Keyring struct {
	keys []key
}

type key struct {
	id   string
	aead cipher.AEAD
}

// NewKeyring returns a keyring of the given keys, the first one encrypting.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("a keyring needs at least one key")
	}
	k := &Keyring{}
	for i, raw := range keys {
		if len(raw) != KeySize {
			return nil, fmt.Errorf("key %d: %d bytes, want %d", i+1, len(raw), KeySize)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := KeyID(raw)
		if slices.ContainsFunc(k.keys, func(o key) bool { return o.id == id }) {
			return nil, fmt.Errorf("key %d: the same key as an earlier one (%s)", i+1, id)
		}
		k.keys = append(k.keys, key{id: id, aead: aead})
	}
	return k, nil
}

// KeyID is a key's fingerprint: the first 8 bytes of its SHA-256, in hex.
// It names the key in stored secrets and messages without revealing it.
func KeyID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// Primary is the ID of the key that encrypts; "" for a nil keyring.
func (k *Keyring) Primary() string {
	if k == nil {
		return ""
	}
	return k.keys[0].id
}

// IDs are the IDs of every key, the encrypting one first.
func (k *Keyring) IDs() []string {
	if k == nil {
		return nil
	}
	ids := make([]string, len(k.keys))
	for i, key := range k.keys {
		ids[i] = key.id
	}
	return ids
}

// Has reports whether the keyring holds the key id.
func (k *Keyring) Has(id string) bool {
	_, ok := k.find(id)
	return ok
}

func (k *Keyring) find(id string) (key, bool) {
	if k == nil {
		return key{}, false
	}
	for _, key := range k.keys {
		if key.id == id {
			return key, true
		}
	}
	return key{}, false
}

// Seal encrypts value for the secret name with the first key, under a
// random nonce, and returns the key's ID and nonce‖ciphertext. The name is
// authenticated with it, so a value cannot be moved to another secret.
func (k *Keyring) Seal(name string, value []byte) (keyID string, ciphertext []byte, err error) {
	if k == nil {
		return "", nil, ErrNoKeys
	}
	key := k.keys[0]
	nonce := make([]byte, key.aead.NonceSize(), key.aead.NonceSize()+len(value)+key.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, err
	}
	return key.id, key.aead.Seal(nonce, nonce, value, additionalData(name)), nil
}

// Open decrypts what Seal returned for the secret name.
func (k *Keyring) Open(name, keyID string, ciphertext []byte) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("secret %q: %w", name, ErrNoKeys)
	}
	key, ok := k.find(keyID)
	if !ok {
		return nil, fmt.Errorf("%w: secret %q needs key %s; this node holds %v", ErrUnknownKey, name, keyID, k.IDs())
	}
	n := key.aead.NonceSize()
	if len(ciphertext) < n {
		return nil, fmt.Errorf("%w: secret %q: ciphertext of %d bytes", ErrCorrupt, name, len(ciphertext))
	}
	value, err := key.aead.Open(nil, ciphertext[:n], ciphertext[n:], additionalData(name))
	if err != nil {
		return nil, fmt.Errorf("%w: secret %q with key %s", ErrCorrupt, name, keyID)
	}
	return value, nil
}

func additionalData(name string) []byte {
	return append([]byte("raftcron secret\x00"), name...)
}
