package fence

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNotAccepted refuses a genuine dispatch that was not meant for this service: its job
// is not one WithJobs names, or its URL does not start with WithURLPrefix.
var ErrNotAccepted = errors.New("fence: not accepted here")

// Verifier checks the signature of a dispatch the way Middleware does with WithKeys: a v2
// signature made with one of the keys, a v1 signature only with WithV1Signatures, and
// then WithJobs and WithURLPrefix. Of the options only these four apply (WithKeys is the
// argument). Exec programs use it directly:
//
//	run, err := fence.FromEnviron()
//	// ...
//	err = fence.NewVerifier(keys, fence.WithJobs("prune")).
//		Verify(fence.ExecDispatch(run, nil), os.Getenv(fence.EnvSignature))
type Verifier struct {
	keys      *Keys
	v1        bool
	jobs      []string
	urlPrefix string
}

// NewVerifier returns a Verifier over keys (not nil).
func NewVerifier(keys *Keys, opts ...Option) *Verifier {
	o := newOptions(opts)
	v := o.verifier
	v.keys = keys
	return &v
}

// Verify checks signature (the wire form) against d: ErrUnsigned when it is empty,
// ErrBadSignature when no key made it for exactly d (or it is v1 and v1 is not
// accepted), ErrNotAccepted when it is genuine but meant for another job or URL.
func (v *Verifier) Verify(d Dispatch, signature string) error {
	var err error
	switch {
	case signature == "":
		return ErrUnsigned
	case strings.HasPrefix(signature, SignatureV2Prefix):
		err = v.keys.VerifyV2(d, signature)
	case strings.HasPrefix(signature, SignaturePrefix) && v.v1:
		err = v.keys.Verify(d.Run, signature)
	case strings.HasPrefix(signature, SignaturePrefix):
		err = fmt.Errorf("%w: v1 signatures are refused: they do not cover the method, URL "+
			"or body (accept them only during an upgrade: WithV1Signatures)", ErrBadSignature)
	default:
		err = fmt.Errorf("%w: want the form %s<base64url>", ErrBadSignature, SignatureV2Prefix)
	}
	if err != nil {
		return err
	}
	return v.accepts(d)
}

// accepts applies WithJobs and WithURLPrefix. The URL prefix says nothing about an exec
// run or worker attempt, which has no URL.
func (v *Verifier) accepts(d Dispatch) error {
	if len(v.jobs) > 0 && !slices.Contains(v.jobs, d.Run.Job) {
		return fmt.Errorf("%w: job %q is not one of %q", ErrNotAccepted, d.Run.Job, v.jobs)
	}
	if v.urlPrefix != "" && d.URL != "" && !strings.HasPrefix(d.URL, v.urlPrefix) {
		return fmt.Errorf("%w: URL %q does not start with %q", ErrNotAccepted, clip(d.URL), v.urlPrefix)
	}
	return nil
}

// verifyValues verifies the values a transport carried under the signature's name:
// exactly one is expected.
func (v *Verifier) verifyValues(d Dispatch, values []string) error {
	switch len(values) {
	case 0:
		return ErrUnsigned
	case 1:
		return v.Verify(d, values[0])
	}
	return fmt.Errorf("%w: given %d times, want once", ErrBadSignature, len(values))
}
