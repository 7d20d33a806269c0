package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
)

// Options describe a cluster to start.
type Options struct {
	// Binary is the raftcron binary the nodes run (required).
	Binary string
	// Dir holds every node's data dir (Dir/ID) and log (Dir/ID.log), and
	// the TLS material Start makes (Dir/tls); it is created if missing.
	Dir string
	// Nodes is the cluster's size; 0 means 3. The nodes are n1, n2, ...
	Nodes int
	// BasePort puts the nodes on consecutive loopback ports from it: the
	// gRPC/Raft ports of every node, then their HTTP ports, then (Debug)
	// their pprof ports. 0: free ports. Every port is bound before any node
	// starts, so that a taken one fails fast (ErrPortTaken).
	BasePort int
	// Network places the nodes somewhere other than on loopback (network
	// namespaces, proxies between them); nil: loopback.
	Network Network
	// Args are serve flags of every node. They come after the flags the
	// cluster sets (--id, --data-dir, --addr, --http-addr, --debug-addr,
	// --peers or --join, the TLS flags and --acl), so they may override.
	Args []string
	// NodeArgs, if set, gives more flags of a node, after Args. It is
	// asked again at every start of the node: a node's flags may change
	// with its binary (SetBinary).
	NodeArgs func(n *Node) []string
	// NodeEnv, if set, gives more environment of a node, asked at every
	// start. No node inherits RAFTCRON_* from this process.
	NodeEnv func(n *Node) []string
	// Debug serves pprof on a loopback port of every node's own
	// (--debug-addr, Node.DebugAddr).
	Debug bool
	// TLS runs every node with TLS on its one port, and HTTPS on its HTTP
	// port: certificates from TLSDir, or made by Start with a throwaway
	// CA. TLSFiles says where they are.
	TLS bool
	// TLSDir holds the CA and the certificates as `raftcron tls` writes
	// them (ca.pem, node-ID.pem, node-ID-key.pem, client-NAME.pem, ...).
	// Empty, with TLS: Start writes them into Dir/tls, with one client
	// certificate (ClientName).
	TLSDir string
	// ClientName is the common name of the client certificate Start makes
	// (client-NAME.pem); empty means "local".
	ClientName string
	// VerifyClients requires every API client to present a certificate of
	// the CA (--tls-verify-clients); it needs TLS.
	VerifyClients bool
	// ACL makes every node require ACL tokens (--acl); Start bootstraps
	// the ACLs and Token is the management token's secret.
	ACL bool
}

// Network is where the nodes run. Node indexes count from 0.
type Network interface {
	// Addr and HTTPAddr are node i's --addr and --http-addr.
	Addr(i int) string
	HTTPAddr(i int) string
	// Peers is the --peers list node i bootstraps with, given every
	// node's ID.
	Peers(i int, ids []string) string
	// Command runs bin as node i.
	Command(i int, bin string, args ...string) *exec.Cmd
	// Dial connects this process to a node's address.
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
}

// Errors of Start, Launch and Add.
var (
	// ErrPortTaken: a port the cluster needs is in use.
	ErrPortTaken = errors.New("address already in use")
	// ErrOptions: the Options contradict themselves or miss a field.
	ErrOptions = errors.New("localcluster: bad options")
	// ErrStillRunning: a node asked to start runs already, or one that was
	// signalled to end did not within its bound.
	ErrStillRunning = errors.New("still running")
	// ErrNoNode: no node has that ID.
	ErrNoNode = errors.New("no such node")
)

const defaultClientName = "local"

func (o *Options) check() error {
	switch {
	case o.Binary == "":
		return fmt.Errorf("%w: Binary is required", ErrOptions)
	case o.Dir == "":
		return fmt.Errorf("%w: Dir is required", ErrOptions)
	case o.Nodes < 0:
		return fmt.Errorf("%w: Nodes is %d", ErrOptions, o.Nodes)
	case o.VerifyClients && !o.TLS:
		return fmt.Errorf("%w: VerifyClients needs TLS", ErrOptions)
	case o.TLSDir != "" && !o.TLS:
		return fmt.Errorf("%w: TLSDir needs TLS", ErrOptions)
	case o.Network != nil && (o.BasePort != 0 || o.Debug):
		return fmt.Errorf("%w: BasePort and Debug are for the loopback network, not a Network of the caller's", ErrOptions)
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.ClientName == "" {
		o.ClientName = defaultClientName
	}
	return nil
}
