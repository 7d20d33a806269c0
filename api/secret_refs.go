package api

import (
	"context"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// Job specs reference secrets as ${secret:NAME}; the leader fills them in
// only when it dispatches an attempt. At registration every reference must
// name a secret that exists, that the caller may see, and whose labels the
// job carries: otherwise InvalidArgument names the field and the secret.
// (A secret deleted later fails the job's runs with reason
// secret_missing.) Read tokens never see a value of those fields that is
// not a reference (redactSpec).

// secretRefs checks the references of the specs of one call. It reads the
// state after one barrier, taken for the first spec with references, so
// that a secret put a moment ago through another node counts.
type secretRefs struct {
	store   SecretStore
	barrier Barrier // nil once taken
	// channels and version check a spec's alert settings (alert_refs.go).
	channels ChannelLookup
	version  func() uint32
}

// barrierOnce takes the call's barrier the first time it is needed.
func (c *secretRefs) barrierOnce(ctx context.Context) error {
	if c.barrier == nil {
		return nil
	}
	err := statusOf(c.barrier.ReadBarrier(ctx))
	if err == nil {
		c.barrier = nil
	}
	return err
}

// check refuses spec's references that do not resolve; prefix names the
// spec in the fields it reports ("specs[3]" in a bulk call, "" otherwise).
func (c *secretRefs) check(ctx context.Context, prefix string, spec *pb.JobSpec) error {
	if err := c.checkAlerts(ctx, prefix, spec); err != nil {
		return err
	}
	refs := jobspec.SecretRefs(spec)
	if len(refs) == 0 {
		return nil
	}
	if err := c.barrierOnce(ctx); err != nil {
		return err
	}
	store := c.store
	p := PrincipalFrom(ctx)
	var violations []*errdetails.BadRequest_FieldViolation
	first := ""
	for _, r := range refs {
		rule := unresolved(store, p, spec, r.Name)
		if rule == "" {
			continue
		}
		field := joinField(prefix, r.Field)
		if first == "" {
			first = field + ": " + rule
		}
		violations = append(violations, &errdetails.BadRequest_FieldViolation{Field: field, Description: rule})
	}
	if len(violations) == 0 {
		return nil
	}
	return badRequest(first, violations...)
}

// unresolved says why the reference to name does not resolve for a job
// of spec written by p, or "".
func unresolved(store SecretStore, p Principal, spec *pb.JobSpec, name string) string {
	var sc *pb.Secret
	ok := false
	if store != nil {
		sc, ok = store.Secret(name)
	}
	switch {
	case !ok || !p.sees(sc.GetLabels()):
		// Outside the caller's scope reads as missing, as a job does.
		return fmt.Sprintf("secret %q not found: put it first (raftcron secret put %s)", name, name)
	case !fsm.SelectorMatches(spec.GetLabels(), sc.GetLabels()):
		return fmt.Sprintf("secret %q is labelled %s: a job that references it must carry those labels", name, FormatSelector(sc.GetLabels()))
	}
	return ""
}

func joinField(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// redactFor hides the values of secret-bearing fields from a read token
// (and any role but write and management): it may see that a job sends an
// Authorization header, not what it sends. Write and management tokens get
// the spec as written, so that `job get -o yaml | job apply -f -`
// round-trips. job is the caller's copy.
func redactFor(ctx context.Context, job *pb.Job) *pb.Job {
	switch PrincipalFrom(ctx).Role {
	case pb.AclRole_ACL_ROLE_WRITE, pb.AclRole_ACL_ROLE_MANAGEMENT:
	default:
		if job != nil {
			redactSpec(job.GetSpec())
		}
	}
	return job
}

// redactSpec replaces every value of spec's secret-bearing fields that is
// not a reference with "<redacted>" (for a URL: its user information only).
func redactSpec(spec *pb.JobSpec) {
	_ = jobspec.RewriteSecretFields(spec, func(path, value string) (string, error) {
		switch {
		case value == "" || secret.HasRef(value):
			return value, nil
		case path == jobspec.FieldURL:
			return secret.RedactURL(value, secret.Redacted), nil
		default:
			return secret.Redacted, nil
		}
	})
}
