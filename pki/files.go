package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Modes of what Write creates: keys are for their owner's eyes only.
const (
	dirMode  = 0o700
	keyMode  = 0o600
	certMode = 0o644
)

// Paths names the two files of a Pair: NAME.pem and NAME-key.pem in a
// directory.
type Paths struct{ Cert, Key string }

// PathsOf is where Write puts the pair called name in dir.
func PathsOf(dir, name string) Paths {
	return Paths{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
}

// Write saves p as NAME.pem and NAME-key.pem in dir (created, owner only, if
// missing), the key with mode 0600. It overwrites nothing: if either file
// exists it writes neither and returns ErrExists.
func Write(dir, name string, p Pair) (Paths, error) {
	paths := PathsOf(dir, name)
	for _, f := range []string{paths.Cert, paths.Key} {
		if _, err := os.Lstat(f); err == nil {
			return paths, fmt.Errorf("%s: %w (remove it or use another --dir)", f, ErrExists)
		}
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return paths, fmt.Errorf("--dir: %w", err)
	}
	if err := writeNew(paths.Key, p.KeyPEM, keyMode); err != nil {
		return paths, err
	}
	if err := writeNew(paths.Cert, p.CertPEM, certMode); err != nil {
		_ = os.Remove(paths.Key) // no key without its certificate
		return paths, err
	}
	return paths, nil
}

// writeNew creates path exclusively, so a file that appeared since the
// check is not overwritten either, and syncs it: a CA key lost in a crash
// right after "created" cannot be recreated.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrExists)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}

// ReadCA loads the CA of paths, as written by Write.
func ReadCA(paths Paths) (*CA, error) {
	certPEM, err := os.ReadFile(paths.Cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(paths.Key)
	if err != nil {
		return nil, err
	}
	return ParseCA(certPEM, keyPEM)
}
