package fsm

import (
	"strconv"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Actions of the audit records of secret writes.
const (
	AuditSecretPut    = "secret_put"
	AuditSecretDelete = "secret_delete"
	AuditSecretRotate = "secret_rotate"
)

// The audited secret handlers record a secret write in the same Apply.
// The record keeps the secret without its ciphertext: a value's change
// reads "changed", never the value, not even sealed.

func auditedPutSecret(s *state, c *pb.Command, e entry) (outcome, error) {
	name := c.GetPutSecret().GetSecret().GetName()
	before, _ := s.secrets.get(name)
	o, err := putSecret(s, c, e)
	if err == nil && s.audit.on() {
		after, _ := s.secrets.get(name)
		s.appendSecretRecord(e, AuditSecretPut, before, after)
	}
	return o, err
}

func auditedDeleteSecret(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.secrets.get(c.GetDeleteSecret().GetName())
	o, err := deleteSecret(s, c, e)
	if err == nil && s.audit.on() {
		s.appendSecretRecord(e, AuditSecretDelete, before, nil)
	}
	return o, err
}

// auditedRotateSecrets records a rotation that changed something: how
// many secrets it re-sealed and with which key (the last one's, in the
// command's order), as rendered words.
func auditedRotateSecrets(s *state, c *pb.Command, e entry) (outcome, error) {
	in := c.GetRotateSecrets().GetSecrets()
	before := make([]*pb.Secret, len(in))
	for i, sc := range in {
		before[i], _ = s.secrets.get(sc.GetName())
	}
	o, err := rotateSecrets(s, c, e)
	if err != nil || !o.changed || !s.audit.on() {
		return o, err
	}
	n, key := 0, ""
	for i, sc := range in {
		if now, _ := s.secrets.get(sc.GetName()); before[i] != nil && now != before[i] {
			n, key = n+1, now.GetKeyId()
		}
	}
	s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: AuditSecretRotate, Changes: []*pb.AuditChange{
		{Field: "secrets", After: strconv.Itoa(n) + " re-encrypted"},
		{Field: "key_id", After: strconv.Quote(key)},
	}}})
	return o, nil
}

func (s *state) appendSecretRecord(e entry, action string, before, after *pb.Secret) {
	r := &pb.AuditRecord{Action: action, Secret: before.GetName(),
		VersionBefore: before.GetVersion(), VersionAfter: after.GetVersion()}
	if after != nil {
		r.Secret = after.GetName()
	}
	ae := &pb.AuditEntry{Record: r}
	if before != nil {
		ae.SecretBefore = publicSecret(before)
	}
	if after != nil {
		ae.SecretAfter = publicSecret(after)
	}
	s.appendEntry(e, ae)
}

// secretChanges renders a secret record's diff on read: its labels and
// key as set, changed or cleared, and the value as "changed" (or "set",
// "removed"), never the value.
func secretChanges(before, after *pb.Secret) []*pb.AuditChange {
	var d differ
	b, a := hideChange(presence(before), presence(after))
	d.out = append(d.out, &pb.AuditChange{Field: "value", Before: b, After: a})
	d.labels(mapLabels(before.GetLabels()), mapLabels(after.GetLabels()))
	if kb, ka := before.GetKeyId(), after.GetKeyId(); kb != ka {
		d.add("key_id", quoted(kb), quoted(ka))
	}
	return capChanges(d.out)
}

// presence stands for a secret's value in a diff: set or not, never what.
func presence(sc *pb.Secret) string {
	if sc == nil {
		return ""
	}
	return hiddenValue
}

func quoted(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}
