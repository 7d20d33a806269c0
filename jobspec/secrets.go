package jobspec

import (
	"net/url"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// The fields of a spec that may reference the secret store as
// ${secret:NAME}, and that are redacted for readers when they hold a value
// of their own: a URL's user information, header values, the body, and
// the environment of a command. Paths name them as audit records and
// errors do: http.url, http.headers.<name>, http.body, exec.env.<name>,
// worker.env.<name>.
const (
	FieldURL  = "http.url"
	FieldBody = "http.body"
)

// RewriteSecretFields calls fn with the path and value of each field of
// spec's target that may reference a secret (empty ones too), in a fixed
// order, and stores what fn returns in its place when it differs. It stops
// at fn's first error. A stored spec is shared: rewrite a copy, or return
// every value as it is (SecretRefs), which writes nothing.
func RewriteSecretFields(spec *pb.JobSpec, fn func(path, value string) (string, error)) error {
	if h := spec.GetHttp(); h != nil {
		if err := rewrite(FieldURL, &h.Url, fn); err != nil {
			return err
		}
		if err := rewriteMap("http.headers.", h.GetHeaders(), fn); err != nil {
			return err
		}
		if err := rewrite(FieldBody, &h.Body, fn); err != nil {
			return err
		}
	}
	if e := spec.GetExec(); e != nil {
		if err := rewriteMap("exec.env.", e.GetEnv(), fn); err != nil {
			return err
		}
	}
	if w := spec.GetWorker(); w != nil {
		if err := rewriteMap("worker.env.", w.GetEnv(), fn); err != nil {
			return err
		}
	}
	return nil
}

func rewrite(path string, field *string, fn func(path, value string) (string, error)) error {
	v, err := fn(path, *field)
	if err == nil && v != *field {
		*field = v
	}
	return err
}

func rewriteMap(prefix string, m map[string]string, fn func(path, value string) (string, error)) error {
	for _, k := range sortedKeys(m) {
		v, err := fn(prefix+k, m[k])
		if err != nil {
			return err
		}
		if v != m[k] {
			m[k] = v
		}
	}
	return nil
}

// SecretRefs lists the secrets spec references, each with the first field
// that does, in the fields' order. It assumes a valid spec.
func SecretRefs(spec *pb.JobSpec) []SecretRef {
	var refs []SecretRef
	seen := map[string]bool{}
	_ = RewriteSecretFields(spec, func(path, value string) (string, error) {
		names, _ := secret.Refs(value)
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				refs = append(refs, SecretRef{Name: n, Field: path})
			}
		}
		return value, nil
	})
	return refs
}

// SecretRef is one secret a spec references, and where.
type SecretRef struct {
	Name, Field string
}

// checkSecretRefs refuses a "${secret:" that is not a reference.
func checkSecretRefs(v *violations, spec *pb.JobSpec) {
	// A read-only walk: fn returns each value unchanged.
	_ = RewriteSecretFields(spec, func(path, value string) (string, error) {
		if _, err := secret.Refs(value); err != nil {
			v.add(path, err.Error()+": write ${secret:NAME}, NAME matching "+secret.NameRule)
		}
		return value, nil
	})
}

// urlWithoutRefs is raw with each reference replaced by a placeholder
// that is valid wherever a secret may stand in a URL (user information,
// host, path, query), so that its syntax can be checked before the
// secrets are filled in; they are checked again at dispatch.
func urlWithoutRefs(raw string) (*url.URL, error) {
	s, err := secret.Expand(raw, func(string) (string, error) { return "secret", nil })
	if err != nil {
		return nil, err
	}
	return url.Parse(s)
}
