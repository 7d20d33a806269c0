package secret

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newKey(t *testing.T, dir, name string) (string, []byte) {
	t.Helper()
	path := filepath.Join(dir, name)
	if _, err := WriteKeyFile(path); err != nil {
		t.Fatal(err)
	}
	raw, err := ReadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw
}

func TestSealOpensWithEveryKeyOfARotation(t *testing.T) {
	dir := t.TempDir()
	oldPath, oldKey := newKey(t, dir, "old.key")
	newPath, _ := newKey(t, dir, "new.key")

	before, err := LoadKeyring([]string{oldPath})
	if err != nil {
		t.Fatal(err)
	}
	id, ct, err := before.Seal("db-password", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	if id != KeyID(oldKey) || bytes.Contains(ct, []byte("hunter2")) {
		t.Fatalf("Seal: key %s (want %s), ciphertext %q", id, KeyID(oldKey), ct)
	}

	// During the rotation the new key encrypts and the old one still opens.
	during, err := LoadKeyring([]string{newPath, oldPath})
	if err != nil {
		t.Fatal(err)
	}
	got, err := during.Open("db-password", id, ct)
	if err != nil || string(got) != "hunter2" {
		t.Fatalf("Open with the old key second: %q, %v", got, err)
	}
	newID, ct2, err := during.Seal("db-password", got)
	if err != nil || newID != during.Primary() || newID == id {
		t.Fatalf("re-Seal: key %s, primary %s, old %s, err %v", newID, during.Primary(), id, err)
	}

	// After it, the old key is gone: what it sealed no longer opens, and
	// the error names the key that is missing.
	after, err := LoadKeyring([]string{newPath})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := after.Open("db-password", id, ct); !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), id) {
		t.Fatalf("Open with the old key gone: %v, want ErrUnknownKey naming %s", err, id)
	}
	if got, err := after.Open("db-password", newID, ct2); err != nil || string(got) != "hunter2" {
		t.Fatalf("Open of the re-sealed value: %q, %v", got, err)
	}
}

func TestOpenRefusesAValueMovedToAnotherSecret(t *testing.T) {
	k, err := NewKeyring(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	id, ct, err := k.Seal("a", []byte("value"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Open("b", id, ct); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open under another name: %v, want ErrCorrupt", err)
	}
	ct[len(ct)-1] ^= 1
	if _, err := k.Open("a", id, ct); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open of a changed ciphertext: %v, want ErrCorrupt", err)
	}
	if _, err := k.Open("a", id, ct[:3]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open of a short ciphertext: %v, want ErrCorrupt", err)
	}
}

func TestSealUsesAFreshNonceEachTime(t *testing.T) {
	k, err := NewKeyring(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	_, a, _ := k.Seal("n", []byte("same"))
	_, b, _ := k.Seal("n", []byte("same"))
	if bytes.Equal(a, b) {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
}

func TestNoKeyringSealsNothing(t *testing.T) {
	var k *Keyring
	if _, _, err := k.Seal("a", []byte("v")); !errors.Is(err, ErrNoKeys) {
		t.Errorf("Seal without keys: %v, want ErrNoKeys", err)
	}
	if _, err := k.Open("a", "00", nil); !errors.Is(err, ErrNoKeys) {
		t.Errorf("Open without keys: %v, want ErrNoKeys", err)
	}
	if k.Has("00") || k.Primary() != "" || k.IDs() != nil {
		t.Error("a nil keyring claims a key")
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k")
	id, err := WriteKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", info.Mode().Perm())
	}
	raw, err := ReadKeyFile(path)
	if err != nil || KeyID(raw) != id {
		t.Fatalf("ReadKeyFile: %v, id %s want %s", err, KeyID(raw), id)
	}
	if _, err := WriteKeyFile(path); !errors.Is(err, os.ErrExist) {
		t.Errorf("WriteKeyFile over an existing file: %v, want it refused", err)
	}

	for name, content := range map[string]string{
		"short":      base64.StdEncoding.EncodeToString([]byte("too short")),
		"not-base64": "!!!",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKeyring([]string{p}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s key: %v, want an error naming the file", name, err)
		}
	}
	if _, err := LoadKeyring([]string{path, path}); err == nil {
		t.Error("the same key twice: accepted")
	}
	if _, err := LoadKeyring([]string{filepath.Join(dir, "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing key file: %v", err)
	}
}
