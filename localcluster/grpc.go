package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/backoff"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Dial is a gRPC client of n as the cluster's callers connect: through the
// network, over TLS trusting the cluster's CA (with its client certificate
// when there is one), plaintext otherwise. gRPC connects lazily.
func (c *Cluster) Dial(n *Node, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if c.roots != nil {
		cfg := &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}
		if f := c.tls; f.ClientCert != "" {
			cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
			if err != nil {
				return nil, fmt.Errorf("client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(cfg)
	}
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return c.net.Dial(ctx, "tcp", addr)
		}),
	}, opts...)
	return grpc.NewClient("passthrough:///"+n.Addr, opts...)
}

// WithToken sends the management token (Token) with a call.
func (c *Cluster) WithToken(ctx context.Context) context.Context {
	token := c.Token()
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// Token is the secret of the management token BootstrapACL made; empty
// before, and without Options.ACL.
func (c *Cluster) Token() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// BootstrapACL makes the cluster's management token, as `raftcron acl
// bootstrap` does, through the first node, and returns its name; Token is
// its secret from then on. Start calls it with Options.ACL; a cluster
// from Launch calls it once its nodes are ready.
func (c *Cluster) BootstrapACL(ctx context.Context) (string, error) {
	conn, err := c.Dial(c.Nodes()[0])
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	var resp *pb.BootstrapAclResponse
	// NOT_LEADER means nothing was proposed: asking again during an
	// election cannot bootstrap twice.
	err = backoff.Retry(ctx, 50*time.Millisecond, time.Second, isNotLeader, func() error {
		resp, err = pb.NewAclServiceClient(conn).BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("acl bootstrap: %w", err)
	}
	c.mu.Lock()
	c.token = resp.GetSecret()
	c.mu.Unlock()
	return resp.GetToken().GetName(), nil
}

func isNotLeader(err error) bool {
	_, ok := cluster.NotLeaderInfo(err)
	return ok
}
