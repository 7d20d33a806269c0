package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/proto/codec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// peerConns caches one gRPC connection per peer address: the leader changes
// rarely, and dialing per request would cost a handshake each time.
type peerConns struct {
	// creds are TLS with the node's certificate, or plaintext.
	creds credentials.TransportCredentials
	// iso, when set (tests only), can cut the node's dials (fault.go).
	iso *Isolation

	mu     sync.Mutex // guards conns and closed
	conns  map[string]*grpc.ClientConn
	closed bool
}

func newPeerConns(iso *Isolation, t *TLSConfig) *peerConns {
	var creds credentials.TransportCredentials = peerCreds{t}
	if t == nil {
		creds = insecure.NewCredentials()
	}
	return &peerConns{creds: creds, iso: iso, conns: make(map[string]*grpc.ClientConn)}
}

// reconnect keeps the backoff short: a restarted leader must be reachable
// again within seconds, not gRPC's default two minutes.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}

func (p *peerConns) client(addr string) (pb.InternalServiceClient, error) {
	cc, err := p.conn(addr)
	if err != nil {
		return nil, err
	}
	return pb.NewInternalServiceClient(cc), nil
}

func (p *peerConns) conn(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrShutdown
	}
	cc, ok := p.conns[addr]
	if !ok {
		var err error
		opts := []grpc.DialOption{
			grpc.WithTransportCredentials(p.creds),
			grpc.WithConnectParams(reconnect),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec.Client)),
		}
		if iso := p.iso; iso != nil {
			opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
				return iso.dial(ctx, &net.Dialer{}, a)
			}))
		}
		cc, err = grpc.NewClient(addr, opts...)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		p.conns[addr] = cc
	}
	return cc, nil
}

func (p *peerConns) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, cc := range p.conns {
		cc.Close()
		delete(p.conns, addr)
	}
}

// leaderClient returns a client for the current leader, which must be
// another node.
func (n *Node) leaderClient() (pb.InternalServiceClient, *pb.ServerRef, error) {
	if n.closed.Load() {
		return nil, nil, ErrShutdown
	}
	id, addr := n.Leader()
	if addr == "" || id == n.cfg.ID {
		// Raft names us leader but we are not (any more): wait for news.
		return nil, nil, n.noLeader(nil)
	}
	c, err := n.peers.client(addr)
	if err != nil {
		return nil, nil, err
	}
	return c, &pb.ServerRef{Id: id, Address: addr}, nil
}

// LeaderConn is a client connection to the current leader, for requests
// that only the leader can serve and that are not Raft commands. It fails
// with a *NoLeaderError when no other node is known to lead.
func (n *Node) LeaderConn() (*grpc.ClientConn, error) {
	if n.closed.Load() {
		return nil, ErrShutdown
	}
	id, addr := n.Leader()
	if addr == "" || id == n.cfg.ID {
		return nil, n.noLeader(nil)
	}
	return n.peers.conn(addr)
}

// forwardError maps a gRPC error from the leader back to this package's
// errors, the inverse of statusError.
func forwardError(leader *pb.ServerRef, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("forward to %s: %w", name(leader), err)
	}
	info := errorInfo(st)
	switch {
	case st.Code() == codes.Unavailable && info != nil && info.Reason == ReasonNotLeader:
		return &NoLeaderError{
			LeaderID:   info.Metadata[MetadataLeaderID],
			LeaderAddr: info.Metadata[MetadataLeaderAddress],
			Err:        fmt.Errorf("%s is not the leader", name(leader)),
		}
	case st.Code() == codes.Unavailable && info != nil && info.Reason == reasonShutdown:
		return &NoLeaderError{LeaderID: leader.Id, LeaderAddr: leader.Address, Err: errors.New("it is shutting down")}
	case st.Code() == codes.Unavailable:
		// Unreachable leader: the caller may retry once a leader is known.
		return &NoLeaderError{LeaderID: leader.Id, LeaderAddr: leader.Address, Err: errors.New(st.Message())}
	case st.Code() == codes.Aborted && info != nil && info.Reason == reasonIndeterminate:
		return fmt.Errorf("%s: %w: %s", name(leader), ErrIndeterminate, st.Message())
	case st.Code() == codes.DeadlineExceeded:
		return fmt.Errorf("forward to %s: %w", name(leader), context.DeadlineExceeded)
	case st.Code() == codes.Canceled:
		return fmt.Errorf("forward to %s: %w", name(leader), context.Canceled)
	case st.Code() == codes.NotFound:
		return fmt.Errorf("%w: %s", ErrNotFound, st.Message())
	case st.Code() == codes.AlreadyExists:
		return fmt.Errorf("%w: %s", ErrServerExists, st.Message())
	case st.Code() == codes.InvalidArgument:
		return invalidf("%s", st.Message())
	case st.Code() == codes.FailedPrecondition:
		return &unsupportedError{msg: st.Message()}
	default:
		return fmt.Errorf("%s: %w", name(leader), err)
	}
}

// name is how errors refer to a node: "n1 at host:port", or the address
// alone when the ID is not known.
func name(r *pb.ServerRef) string {
	if r.GetId() == "" {
		return r.GetAddress()
	}
	return r.GetId() + " at " + r.GetAddress()
}
