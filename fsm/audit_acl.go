package fsm

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Actions of the audit records of ACL writes.
const (
	AuditACLBootstrap = "acl_bootstrap"
	AuditACLCreate    = "acl_token_create"
	AuditACLDelete    = "acl_token_delete"
)

// The audited ACL handlers record a token write in the same Apply. The
// record keeps the token without its secret hash: the trail is read by
// every management token, and a hash must not reach a reader.

func auditedBootstrapACL(s *state, c *pb.Command, e entry) (outcome, error) {
	o, err := bootstrapACL(s, c, e)
	if err == nil && s.audit.on() {
		s.appendTokenRecord(e, AuditACLBootstrap, c.GetBootstrapAcl().GetToken())
	}
	return o, err
}

func auditedCreateACLToken(s *state, c *pb.Command, e entry) (outcome, error) {
	o, err := createACLToken(s, c, e)
	if err == nil && s.audit.on() {
		s.appendTokenRecord(e, AuditACLCreate, c.GetCreateAclToken().GetToken())
	}
	return o, err
}

func auditedDeleteACLToken(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.acl.token(c.GetDeleteAclToken().GetAccessorId())
	o, err := deleteACLToken(s, c, e)
	if err == nil && s.audit.on() {
		s.appendTokenRecord(e, AuditACLDelete, before)
	}
	return o, err
}

// appendTokenRecord records an ACL write of the stored token t.
func (s *state) appendTokenRecord(e entry, action string, t *pb.AclToken) {
	s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: action}, Token: publicToken(t)})
}

// tokenChanges lists the fields of the token an ACL record keeps, as set
// by a create or cleared by a delete (the other side left empty, not
// rendered as a zero value); rendered on read, like a spec's diff.
func tokenChanges(action string, t *pb.AclToken) []*pb.AuditChange {
	var d differ
	none := (&pb.AclToken{}).ProtoReflect()
	deleted := action == AuditACLDelete
	if deleted {
		d.message("token.", t.ProtoReflect(), none)
	} else {
		d.message("token.", none, t.ProtoReflect())
	}
	for _, c := range d.out {
		if deleted {
			c.After = ""
		} else {
			c.Before = ""
		}
	}
	return capChanges(d.out)
}
