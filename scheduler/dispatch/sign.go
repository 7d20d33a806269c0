package dispatch

import (
	"crypto/sha256"
	"sync/atomic"

	"github.com/raftcron/raftcron/fence"
)

// Keys are the secrets that sign a node's dispatches (fence.Keys, from
// --fence-key-file): v1 over the run, v2 over what was sent.
type Keys interface {
	Sign(fence.Run) string
	SignV2(fence.Dispatch) (string, error)
}

// Signer signs a node's dispatches for the downstream to verify: the value of
// X-Raftcron-Signature, RAFTCRON_SIGNATURE and a worker offer's signature. It
// signs v2 (docs/fencing.md) once v2 says so, and v1 until then: a service
// that verifies v2 only is upgraded before the nodes, and during a rolling
// upgrade a node of the previous release may lead and sign v1 only, so the
// nodes go on signing v1 until the cluster version says that every voter (every
// node that may lead) signs v2. One signature at a time: fence takes exactly one.
type Signer struct {
	keys Keys
	v2   func() bool
	// sticks is set once v2 said yes: the cluster version never goes back, so
	// the hot path need not ask again.
	sticks atomic.Bool
}

// NewSigner signs with keys; v2 reports whether to sign v2 (nil: always).
// Once it says yes, it is not asked again.
func NewSigner(keys Keys, v2 func() bool) *Signer {
	return &Signer{keys: keys, v2: v2}
}

func (s *Signer) signsV2() bool {
	if s.v2 == nil || s.sticks.Load() {
		return true
	}
	if s.v2() {
		s.sticks.Store(true)
		return true
	}
	return false
}

// SignRun signs an exec run or a worker attempt: v2's run-only form, over the
// digest of its payload (nil for an exec run).
func (s *Signer) SignRun(run fence.Run, payload []byte) string {
	if !s.signsV2() {
		return s.keys.Sign(run)
	}
	// The run-only form has no method or URL, the only values SignV2 refuses.
	sig, _ := s.keys.SignV2(fence.ExecDispatch(run, payload))
	return sig
}

// signHTTP signs a webhook request: v2 covers its method, URL as sent
// (fence.SentURL) and the digest of its body.
func (s *Signer) signHTTP(run fence.Run, method, url string, bodySHA256 [sha256.Size]byte) (string, error) {
	if !s.signsV2() {
		return s.keys.Sign(run), nil
	}
	return s.keys.SignV2(fence.Dispatch{Run: run, Method: method, URL: url, BodySHA256: bodySHA256})
}
