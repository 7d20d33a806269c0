package fsm

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Secrets returns the secrets whose labels include selector (every one
// for an empty selector), by name, without their ciphertext.
func (f *FSM) Secrets(selector map[string]string) []*pb.Secret {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*pb.Secret, 0, f.st.secrets.secrets.Len())
	f.st.secrets.secrets.Ascend(func(it secretItem) bool {
		if SelectorMatches(it.secret.GetLabels(), selector) {
			out = append(out, publicSecret(it.secret))
		}
		return true
	})
	return out
}

// Secret returns the secret name without its ciphertext, or false.
func (f *FSM) Secret(name string) (*pb.Secret, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	sc, ok := f.st.secrets.get(name)
	if !ok {
		return nil, false
	}
	return publicSecret(sc), true
}

// SecretFor returns the stored secret name, ciphertext and all, for an
// attempt of the job spec: the leader decrypts it to dispatch. The secret
// must exist and the job's labels must include the secret's (ErrNotFound
// otherwise, naming the secret only), so that a job of one scope never
// reads a secret of another. The value is shared: callers only read it.
func (f *FSM) SecretFor(spec *pb.JobSpec, name string) (*pb.Secret, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	sc, ok := f.st.secrets.get(name)
	if !ok {
		return nil, fail(ErrNotFound, "secret %q not found", name)
	}
	if !SpecHasLabels(spec, sc.GetLabels()) {
		return nil, fail(ErrNotFound, "secret %q not found in the scope of job %q (its labels must include the secret's)", name, spec.GetName())
	}
	return sc, nil
}

// SpecHasLabels reports whether spec, plain or in stored form (the specs
// StoredJobs and fire results hand out), carries every label of want.
func SpecHasLabels(spec *pb.JobSpec, want map[string]string) bool {
	if len(spec.GetLabels()) > 0 {
		return SelectorMatches(spec.GetLabels(), want)
	}
	return hasLabels(spec, want)
}

// SealedSecrets returns every stored secret, ciphertext and all, by name,
// for a rotation (which re-seals them) and a node's check that it holds
// their keys. The values are shared: callers only read them.
func (f *FSM) SealedSecrets() []*pb.Secret {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*pb.Secret, 0, f.st.secrets.secrets.Len())
	f.st.secrets.secrets.Ascend(func(it secretItem) bool {
		out = append(out, it.secret)
		return true
	})
	return out
}
