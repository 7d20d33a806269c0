package secret

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ReasonMissing is the reason of a run whose job references a secret that
// is gone, or outside the job's scope, when an attempt is dispatched: the
// run fails and is not retried. (External contract, like exec_denied.)
const ReasonMissing = "secret_missing"

// NameRule is what a secret's name must match: it is also the NAME of a
// reference.
const NameRule = "[A-Za-z0-9][A-Za-z0-9._-]{0,62}"

var namePattern = regexp.MustCompile("^" + NameRule + "$")

// refOpen starts a reference, "${secret:NAME}".
const (
	refOpen  = "${secret:"
	refClose = "}"
)

// Ref is the reference to the secret name, as a job spec writes it.
func Ref(name string) string { return refOpen + name + refClose }

// ErrBadRef: a value holds "${secret:" without a valid name and "}" after it.
var ErrBadRef = errors.New("malformed secret reference")

// ValidName reports whether name may name a secret.
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("secret name %q must match %s", name, NameRule)
	}
	return nil
}

// HasRef reports whether s holds a reference (well formed or not): a value
// that does is shown as written, since its secret is in the store.
func HasRef(s string) bool { return strings.Contains(s, refOpen) }

// Refs are the names s references, in order, repeats included; an error
// wrapping ErrBadRef if a "${secret:" in s is not a reference.
func Refs(s string) ([]string, error) {
	var names []string
	err := scan(s, func(lit string) {}, func(name string) error {
		names = append(names, name)
		return nil
	})
	return names, err
}

// Expand replaces every reference in s with value(name).
func Expand(s string, value func(name string) (string, error)) (string, error) {
	if !HasRef(s) {
		return s, nil
	}
	var b strings.Builder
	err := scan(s, func(lit string) { b.WriteString(lit) }, func(name string) error {
		v, err := value(name)
		b.WriteString(v)
		return err
	})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// scan walks s, handing literal text to lit and each reference's name to
// ref, and stops at the first error.
func scan(s string, lit func(string), ref func(name string) error) error {
	for {
		i := strings.Index(s, refOpen)
		if i < 0 {
			lit(s)
			return nil
		}
		lit(s[:i])
		rest := s[i+len(refOpen):]
		j := strings.Index(rest, refClose)
		if j < 0 {
			return fmt.Errorf("%w: %q has no closing %q", ErrBadRef, refOpen, refClose)
		}
		name := rest[:j]
		if err := ValidName(name); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRef, err)
		}
		if err := ref(name); err != nil {
			return err
		}
		s = rest[j+len(refClose):]
	}
}

// RedactURL replaces the user information of a URL (user, password or a
// token in its place) with mask, unless it references a secret: a
// reference is shown as written. Anything that is not a URL with user
// information comes back as it is.
func RedactURL(u, mask string) string {
	scheme := strings.Index(u, "://")
	if scheme < 0 {
		return u
	}
	rest := u[scheme+3:]
	authority := rest
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		authority = rest[:end]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 || HasRef(authority[:at]) {
		return u
	}
	return u[:scheme+3] + mask + rest[at:]
}
