package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/backoff"
)

// nodes is a client's connection to a cluster through the addresses of
// --addr, so that a command survives the loss of any of them. Each call
// goes to the node that answered last (at first, the first address); when
// that node cannot be reached it goes on to the next address at once; when
// a node answers NOT_LEADER, the call is retried until its deadline, at the
// leader the answer names if it names one, else at the next address.
// Neither can apply a change twice: a call that found no node never left
// this process, and NOT_LEADER means nothing was proposed.
type nodes struct {
	addrs []string
	dial  func(addr string, d *dialer) (*grpc.ClientConn, error)

	mu    sync.Mutex // guards the fields below
	conns map[string]*nodeConn
	at    string // the address calls go to first
	last  string // the address of the last attempt, for errors
}

// nodeConn is the connection to one address, with the dialer that saw how
// its connections went.
type nodeConn struct {
	cc *grpc.ClientConn
	d  *dialer
}

var _ grpc.ClientConnInterface = (*nodes)(nil)

func newNodes(addrs []string, dial func(string, *dialer) (*grpc.ClientConn, error)) *nodes {
	return &nodes{addrs: addrs, dial: dial, conns: make(map[string]*nodeConn), at: addrs[0]}
}

// Invoke runs a unary call (grpc.ClientConnInterface).
func (n *nodes) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return backoff.Retry(ctx, 50*time.Millisecond, time.Second, isNotLeader, func() error {
		err := n.try(func(cc *grpc.ClientConn, p *peer.Peer) error {
			return cc.Invoke(ctx, method, args, reply, append(opts, grpc.Peer(p))...)
		})
		n.follow(err)
		return err
	})
}

// NewStream opens a stream (grpc.ClientConnInterface) on the first node
// that can be reached. A stream's NOT_LEADER comes with its messages, so
// its caller retries (onLeader).
func (n *nodes) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	var s grpc.ClientStream
	err := n.try(func(cc *grpc.ClientConn, p *peer.Peer) error {
		var err error
		s, err = cc.NewStream(ctx, desc, method, append(opts, grpc.Peer(p))...)
		return err
	})
	return s, err
}

// try runs call on the node calls go to and, while a node cannot be
// reached, on the next address, each at most once. It returns call's
// error, or an *unreachableError when no address could be reached.
func (n *nodes) try(call func(*grpc.ClientConn, *peer.Peer) error) error {
	var down unreachableError
	for _, addr := range n.order() {
		c, err := n.conn(addr)
		if err != nil {
			return err
		}
		var p peer.Peer
		err = call(c.cc, &p)
		n.mu.Lock()
		n.last = addr
		n.mu.Unlock()
		if !neverSent(err, &p) {
			n.mu.Lock()
			n.at = addr
			n.mu.Unlock()
			return err
		}
		down.nodes = append(down.nodes, downNode{addr: addr, cause: c.cause(err)})
		down.last = err
	}
	return &down
}

// neverSent reports whether err ended a call before any node received it:
// no connection could carry it.
func neverSent(err error, p *peer.Peer) bool {
	return status.Code(err) == codes.Unavailable && p.Addr == nil
}

// order is where a call tries to go: the node calls go to, then the other
// addresses in the order given.
func (n *nodes) order() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string{n.at}, slices.DeleteFunc(slices.Clone(n.addrs), func(a string) bool { return a == n.at })...)
}

// follow points the next call after a NOT_LEADER answer: at the leader
// the answer names, else at the next address after the one that answered.
// A named leader may be stale (dead): then the call finds it unreachable
// and goes on with the addresses.
func (n *nodes) follow(err error) {
	info, ok := cluster.NotLeaderInfo(err)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if leader := info.GetMetadata()[cluster.MetadataLeaderAddress]; leader != "" && leader != n.at {
		n.at = leader
		return
	}
	if i := slices.Index(n.addrs, n.at); i >= 0 {
		n.at = n.addrs[(i+1)%len(n.addrs)]
	} else {
		n.at = n.addrs[0]
	}
}

// lastAddr is the address the last call went to.
func (n *nodes) lastAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == "" {
		return n.at
	}
	return n.last
}

// conn is the connection to addr, made once; gRPC connects lazily.
func (n *nodes) conn(addr string) (*nodeConn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.conns[addr]; c != nil {
		return c, nil
	}
	d := &dialer{timeout: connectTimeout(len(n.addrs))}
	cc, err := n.dial(addr, d)
	if err != nil {
		return nil, err
	}
	c := &nodeConn{cc: cc, d: d}
	n.conns[addr] = c
	return c, nil
}

// connectTimeout bounds one connection attempt when there are other
// addresses to try, so that a host that swallows packets does not take a
// call's whole deadline; with one address the deadline bounds it.
func connectTimeout(addrs int) time.Duration {
	if addrs < 2 {
		return 0
	}
	return 3 * time.Second
}

// Close closes every connection.
func (n *nodes) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for addr, c := range n.conns {
		_ = c.cc.Close()
		delete(n.conns, addr)
	}
	return nil
}

// cause says in a few words why a call found the node unreachable: the
// dialer's error, a node that closed the connection before it said
// anything, or gRPC's message (a certificate the client does not trust).
func (c *nodeConn) cause(err error) string {
	if e := c.d.failure(); e != nil {
		return dialCause(e)
	}
	if c.d.dropped() != nil {
		return fmt.Sprintf("the node closed the connection (does it require TLS, --%s, or a client certificate, --%s?)",
			flagCACert, flagClientCert)
	}
	return status.Convert(err).Message()
}

// unreachableError: no address of --addr could be reached, so the call was
// never sent. Its gRPC status is the last address's.
type unreachableError struct {
	nodes []downNode
	last  error
}

type downNode struct{ addr, cause string }

func (e *unreachableError) Error() string {
	causes := make([]string, len(e.nodes))
	addrs := make([]string, len(e.nodes))
	for i, d := range e.nodes {
		causes[i], addrs[i] = d.cause, d.addr
	}
	if len(slices.Compact(slices.Clone(causes))) == 1 {
		return fmt.Sprintf("cannot reach raftcron at %s: %s", strings.Join(addrs, ", "), causes[0])
	}
	each := make([]string, len(e.nodes))
	for i, d := range e.nodes {
		each[i] = fmt.Sprintf("%s (%s)", d.addr, d.cause)
	}
	return "cannot reach raftcron at " + strings.Join(each, ", ")
}

func (e *unreachableError) GRPCStatus() *status.Status { return status.Convert(e.last) }

func (e *unreachableError) Unwrap() error { return e.last }

func isNotLeader(err error) bool {
	_, ok := cluster.NotLeaderInfo(err)
	return ok
}
