package scheduler

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/secret"
)

// SecretStore is the FSM's view of the secret store (fsm.FSM): the stored
// secret a job's attempt may use, sealed, or an error when it is gone or
// outside the job's scope.
type SecretStore interface {
	SecretFor(spec *pb.JobSpec, name string) (*pb.Secret, error)
}

// errSecretMissing fails an attempt whose job references a secret the
// leader cannot fill in: the run fails with secret.ReasonMissing and is not
// retried, since every retry would fail alike until the job or the secret
// changes.
var errSecretMissing = errors.New(secret.ReasonMissing)

// maxResolved bounds the resolved targets kept; past it the cache starts
// over.
const maxResolved = 16 << 10

// secrets fills in the ${secret:NAME} references of an attempt's target,
// on the leader, just before it is handed to an executor or offered to a
// worker: nowhere else is a value decrypted. A resolved target is kept per
// stored target (the FSM never changes a stored spec, so one pointer is
// one content) with the stored secrets it used, and used again while each
// is still the one stored: an executor's own caches, keyed by target, keep
// working, and the common attempt, whose target references nothing, costs
// one lookup.
type secrets struct {
	store SecretStore
	keys  *secret.Keyring
	cache sync.Map // target (a *pb.HttpTarget, *pb.ExecTarget or *pb.WorkerTarget) → *resolved
	n     atomic.Int64
}

// resolved is a target with its references filled in.
type resolved struct {
	names  []string     // the secrets referenced, in order
	used   []*pb.Secret // the stored secret of each name it was filled in with
	target *pb.JobSpec  // holds the filled-in copy of the target
	// values are the secrets' values as they may appear in what the
	// target reports (as is, and escaped for a URL): what scrub removes.
	values []string
}

// resolve fills in a's target from spec, the stored spec the attempt was
// committed under. It returns the values used, for scrubbing the outcome,
// or an error wrapping errSecretMissing.
func (s *secrets) resolve(spec *pb.JobSpec, a *dispatch.Attempt) ([]string, error) {
	key := targetOf(a)
	if key == nil {
		return nil, nil
	}
	if c, ok := s.cache.Load(key); ok {
		r := c.(*resolved)
		if len(r.names) == 0 {
			return nil, nil
		}
		if s.current(spec, r) {
			r.apply(a)
			return r.values, nil
		}
	}
	r, err := s.fill(spec, a)
	if err != nil {
		return nil, err
	}
	if s.n.Add(1) > maxResolved {
		s.cache.Clear()
		s.n.Store(1)
	}
	s.cache.Store(key, r)
	r.apply(a)
	return r.values, nil
}

// targetOf is a's target, the cache's key.
func targetOf(a *dispatch.Attempt) any {
	switch {
	case a.HTTP != nil:
		return a.HTTP
	case a.Exec != nil:
		return a.Exec
	case a.Worker != nil:
		return a.Worker
	}
	return nil
}

// current reports whether every secret r used is still the one stored.
func (s *secrets) current(spec *pb.JobSpec, r *resolved) bool {
	for i, name := range r.names {
		if sc, err := s.store.SecretFor(spec, name); err != nil || sc != r.used[i] {
			return false
		}
	}
	return true
}

func (r *resolved) apply(a *dispatch.Attempt) {
	if r.target == nil {
		return
	}
	a.HTTP, a.Exec, a.Worker = r.target.GetHttp(), r.target.GetExec(), r.target.GetWorker()
}

// fill resolves a's target afresh.
func (s *secrets) fill(spec *pb.JobSpec, a *dispatch.Attempt) (*resolved, error) {
	target := &pb.JobSpec{Http: a.HTTP, Exec: a.Exec, Worker: a.Worker}
	r := &resolved{}
	for _, ref := range jobspec.SecretRefs(target) {
		r.names = append(r.names, ref.Name)
	}
	if len(r.names) == 0 {
		return r, nil
	}
	plain := make(map[string]string, len(r.names))
	for _, name := range r.names {
		sc, value, err := s.open(spec, name)
		if err != nil {
			return nil, err
		}
		r.used = append(r.used, sc)
		plain[name] = value
		r.values = append(r.values, scrubForms(value)...)
	}
	target = proto.CloneOf(target)
	_ = jobspec.RewriteSecretFields(target, func(_, value string) (string, error) {
		return secret.Expand(value, func(name string) (string, error) { return plain[name], nil })
	})
	if h := target.GetHttp(); h != nil {
		if u, err := url.Parse(h.GetUrl()); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return nil, fmt.Errorf("%w: http.url is not an absolute http or https URL once its secrets are filled in", errSecretMissing)
		}
	}
	r.target = target
	return r, nil
}

// open is the stored secret name for spec's attempt and its value.
func (s *secrets) open(spec *pb.JobSpec, name string) (*pb.Secret, string, error) {
	if s.store == nil {
		return nil, "", fmt.Errorf("%w: secret %q: this node keeps no secret store", errSecretMissing, name)
	}
	sc, err := s.store.SecretFor(spec, name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", errSecretMissing, err)
	}
	value, err := s.keys.Open(sc.GetName(), sc.GetKeyId(), sc.GetCiphertext())
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", errSecretMissing, err)
	}
	return sc, string(value), nil
}

// scrubForms are the forms of a value an outcome may carry it in: as is,
// and escaped as a URL's path or query escapes it.
func scrubForms(v string) []string {
	forms := []string{v}
	for _, f := range []string{url.PathEscape(v), url.QueryEscape(v)} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// forget drops every value this node decrypted, when it stops leading.
func (s *secrets) forget() {
	s.cache.Clear()
	s.n.Store(0)
}

// scrub removes the secrets' values from what an attempt reports (an
// error naming a URL, a reply or a command echoing its environment), so
// that no value reaches the run ledger or the log.
func scrub(o dispatch.Outcome, values []string) dispatch.Outcome {
	if len(values) == 0 {
		return o
	}
	o.Detail = secret.ScrubString(o.Detail, values)
	if len(o.Output) > 0 {
		o.Output = secret.Scrub(o.Output, values, len(o.Output) >= dispatch.MaxOutput)
	}
	return o
}
