package fence

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The signature's wire form: SignaturePrefix, then the unpadded base64url encoding
// (RFC 4648 §5) of HMAC-SHA256(key, message), where message is signedContext and the
// five signed fields of the run, newline-joined, without a final newline:
//
//	raftcron-signature-v1
//	<job>
//	<run id>
//	<fencing token, decimal>
//	<scheduled-at, as in X-Raftcron-Scheduled-At>
//	<attempt, decimal>
//
// No field can contain a newline (FromHeader refuses control characters), so the
// message is unambiguous. The idempotency key is not signed: Verify checks that it is
// one of the two the signed fields make (key.go), "<job>/<scheduled-at>" or
// "<job>/manual/<run id>"; v1 does not bind which of the two.
const (
	SignaturePrefix = "v1="
	signedContext   = "raftcron-signature-v1"
)

// MinKeyLen is the shortest key Keys accepts, in bytes.
const MinKeyLen = 32

// maxKeys is how many keys a rotation needs: the new one and the old one.
const maxKeys = 2

// Sentinels of Keys.Verify.
var (
	// ErrUnsigned: the request carries no signature.
	ErrUnsigned = errors.New("fence: not signed")
	// ErrBadSignature: the signature is malformed, or made with none of the keys, or
	// the signed fields were changed.
	ErrBadSignature = errors.New("fence: bad signature")
)

// Keys are the secrets that sign dispatches (raftcron nodes, --fence-key-file) and
// verify them (services, WithKeys). The first key signs; every key verifies, so that a
// key can be rotated without a moment in which a genuine run is refused.
type Keys struct {
	keys [][]byte
}

// NewKeys returns one or two keys, each at least MinKeyLen bytes; the first signs.
func NewKeys(keys ...[]byte) (*Keys, error) {
	if len(keys) == 0 || len(keys) > maxKeys {
		return nil, fmt.Errorf("fence: want 1 or 2 keys (the signing key, then the one being retired), got %d", len(keys))
	}
	k := &Keys{}
	for i, key := range keys {
		if len(key) < MinKeyLen {
			return nil, fmt.Errorf("fence: key %d is %d bytes, want at least %d", i+1, len(key), MinKeyLen)
		}
		k.keys = append(k.keys, bytes.Clone(key))
	}
	return k, nil
}

// ParseKeys reads the key file format: one key per line, the first signs; a second
// line, during a rotation, only verifies. A key is the line's text itself (spaces
// around it trimmed), at least MinKeyLen bytes: `openssl rand -base64 32` makes one.
// Empty lines and lines starting with '#' are ignored.
func ParseKeys(data []byte) (*Keys, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if len(keys) == maxKeys {
			return nil, fmt.Errorf("fence: line %d: a key file holds at most %d keys (the signing key, then the one being retired)", line, maxKeys)
		}
		keys = append(keys, []byte(text))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	return NewKeys(keys...)
}

// LoadKeys reads a key file (see ParseKeys).
func LoadKeys(path string) (*Keys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	k, err := ParseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// Sign returns the signature of run with the first key, in its wire form "v1=...".
func (k *Keys) Sign(run Run) string {
	return SignaturePrefix + base64.RawURLEncoding.EncodeToString(mac(k.keys[0], run))
}

// Verify checks signature (the wire form, as in the header or variable) against run
// with every key. It fails with ErrUnsigned when signature is empty, and with
// ErrBadSignature when no key made it or the run's idempotency key is not the one its
// signed fields imply.
func (k *Keys) Verify(run Run, signature string) error {
	if signature == "" {
		return ErrUnsigned
	}
	enc, ok := strings.CutPrefix(signature, SignaturePrefix)
	if !ok {
		return fmt.Errorf("%w: want the form %s<base64url>", ErrBadSignature, SignaturePrefix)
	}
	got, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: not %d bytes of unpadded base64url", ErrBadSignature, sha256.Size)
	}
	if !v1KeyFits(run) {
		return fmt.Errorf("%w: idempotency key %q is neither %q nor %q", ErrBadSignature, clip(run.IdempotencyKey),
			clip(SlotKey(run.Job, run.ScheduledAt)), clip(RunKey(run.Job, v1RunKind, run.RunID)))
	}
	for _, key := range k.keys {
		if hmac.Equal(got, mac(key, run)) {
			return nil
		}
	}
	return fmt.Errorf("%w: made with none of the keys, or the run was altered", ErrBadSignature)
}

// signedMessage is the message the signature covers (see SignaturePrefix).
func signedMessage(run Run) []byte {
	b := make([]byte, 0, len(signedContext)+len(run.Job)+len(run.RunID)+64)
	b = append(b, signedContext...)
	b = append(b, '\n')
	b = append(b, run.Job...)
	b = append(b, '\n')
	b = append(b, run.RunID...)
	b = append(b, '\n')
	b = strconv.AppendUint(b, run.Token, 10)
	b = append(b, '\n')
	b = append(b, FormatScheduledAt(run.ScheduledAt)...)
	b = append(b, '\n')
	return strconv.AppendUint(b, uint64(run.Attempt), 10)
}

func mac(key []byte, run Run) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(signedMessage(run))
	return h.Sum(nil)
}
