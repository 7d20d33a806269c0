package server

import (
	"fmt"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
)

// FieldAuditLimit names the AuditLimit field in a *cluster.ConfigError.
const FieldAuditLimit = "AuditLimit"

// checkAuditLimit: the FSM refuses a limit beyond fsm.MaxAuditLimit, so a
// node must not start with one it could never put in force.
func checkAuditLimit(n int) error {
	var rule string
	switch {
	case n < 0:
		rule = fmt.Sprintf("%d must not be negative", n)
	case n > fsm.MaxAuditLimit:
		rule = fmt.Sprintf("%d is more than the %d records the audit trail may keep", n, fsm.MaxAuditLimit)
	default:
		return nil
	}
	return &cluster.ConfigError{Field: FieldAuditLimit, Rule: rule, Err: cluster.ErrInvalidConfig}
}

// auditLimit is the limit in force while this node leads.
func (cfg Config) auditLimit() uint32 {
	if cfg.AuditLimit == 0 {
		return api.DefaultAuditLimit
	}
	return uint32(cfg.AuditLimit)
}

// auditSwitch turns the cluster's audit trail on before the writes this
// node takes, with this node's limit while it leads.
func (s *Server) auditSwitch() *api.AuditSwitch {
	return api.NewAuditSwitch(s.node, s.state, s.cfg.auditLimit(), s.node, s.cfg.Now)
}
