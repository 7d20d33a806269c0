package server

import (
	"log/slog"
	"net"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/policy"
	"github.com/raftcron/raftcron/scheduler/dispatch"
)

// Policy is what a node allows its jobs to do. Every node of a cluster
// should have the same: the receiving node checks exec jobs at
// registration, the leader checks again before it runs them. The zero
// Policy is the secure default: no exec jobs, the default egress deny-list,
// unsigned dispatches.
type Policy struct {
	Exec      *policy.Exec   // nil or empty: no exec jobs, and the default env rules
	ExecUser  *proc.User     // nil: children run as the node's user
	HTTPDeny  *policy.Egress // nil: policy.DefaultHTTPDeny; empty: webhooks may dial anything but the node itself
	FenceKeys *fence.Keys    // nil: dispatches are not signed

	// OwnListeners are ports of the process that the server does not bind
	// (pprof's --debug-addr). Webhooks may not reach them, nor the ports
	// the server binds (egressFor).
	OwnListeners []net.Addr
}

// withDefaults fills the nil fields that have a default.
func (p Policy) withDefaults() (Policy, error) {
	var err error
	if p.Exec == nil {
		if p.Exec, err = policy.NewExec(nil); err != nil {
			return p, err
		}
	}
	if p.HTTPDeny == nil {
		if p.HTTPDeny, err = policy.NewEgress(policy.DefaultHTTPDeny); err != nil {
			return p, err
		}
	}
	return p, nil
}

// signer signs the node's dispatches, its own and its workers' offers; nil
// when they are not signed. It signs v2 once the cluster version says every
// voter does (fsm.SignaturesV2Version), v1 until then.
func (p Policy) signer(clusterVersion func() uint32) *dispatch.Signer {
	if p.FenceKeys == nil {
		return nil
	}
	return dispatch.NewSigner(p.FenceKeys, func() bool { return clusterVersion() >= fsm.SignaturesV2Version })
}

// executor delivers the attempts of this node's scheduler under its policy.
func (p Policy) executor(signer *dispatch.Signer) dispatch.Executor {
	return dispatch.NewRouter(
		dispatch.NewHTTPExecutorWith(dispatch.HTTPConfig{Egress: p.HTTPDeny, Signer: signer}),
		dispatch.NewExecExecutor(dispatch.ExecConfig{Allow: p.Exec, User: p.ExecUser, Signer: signer}),
	)
}

// log says at start what jobs may do here, since it is easy to forget a
// flag on one node of several.
func (p Policy) log(log *slog.Logger) {
	user := ""
	if p.ExecUser != nil {
		user = p.ExecUser.Name
	}
	containment := ""
	if p.Exec.Enabled() {
		containment = proc.Containment() // decides it: a subreaper from the start
	}
	log.Info("dispatch policy", "exec_enabled", p.Exec.Enabled(), "exec_user", user,
		"exec_env_allow", p.Exec.Env().String(), "exec_containment", containment,
		"http_deny", p.HTTPDeny.String(), "http_allow", p.HTTPDeny.Allowed(), "http_own_ports", p.HTTPDeny.OwnPorts(),
		"signed", p.FenceKeys != nil)
	if p.Exec.Enabled() && p.ExecUser != nil && p.ExecUser.UID == 0 {
		log.Warn("exec jobs run as root (--exec-user root): an allowed program owns this machine, its data dir included")
	}
}

// egressFor is the egress check of a node whose own port (--addr) is bound
// at node and whose other listeners are at others: the node's ports are
// never reached, nor this host's addresses unless the node is on loopback.
func egressFor(e *policy.Egress, node net.Addr, others ...net.Addr) *policy.Egress {
	self := policy.Self{Loopback: isLoopback(node)}
	for _, a := range append([]net.Addr{node}, others...) {
		if tcp, ok := a.(*net.TCPAddr); ok {
			self.Ports = append(self.Ports, uint16(tcp.Port))
		}
	}
	return e.ForNode(self)
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
