package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/pki"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// withTLS gives every node a certificate of one CA, the way serve's TLS
// flags do; it returns the CA's roots and a client certificate of it.
func withTLS(t *testing.T) (opt func(*Config), roots *x509.CertPool, client tls.Certificate) {
	t.Helper()
	dir := t.TempDir()
	caPair, err := pki.NewCA(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCA(caPair.CertPEM, caPair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPair.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AppendCertsFromPEM(caPair.CertPEM)
	alice, err := ca.ClientCert("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if client, err = tls.X509KeyPair(alice.CertPEM, alice.KeyPEM); err != nil {
		t.Fatal(err)
	}
	opt = func(c *Config) {
		pair, err := ca.NodeCert(c.ID, nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		paths, err := pki.Write(dir, "node-"+c.ID, pair)
		if err != nil {
			t.Fatal(err)
		}
		bundle, err := pki.LoadBundle(pki.Files{Cert: paths.Cert, Key: paths.Key, CA: caFile})
		if err != nil {
			t.Fatal(err)
		}
		c.TLS = &cluster.TLSConfig{Source: bundle}
	}
	return opt, roots, client
}

// With Config.TLS the node's port is TLS only, as serve's TLS flags make
// it: the API answers a TLS client (and forwards its write to the leader
// with the node's own certificate), a plaintext client is not served, and
// node-to-node forwarding refuses a client certificate.
func TestTLSServersServeTLSOnly(t *testing.T) {
	opt, roots, alice := withTLS(t)
	servers := startCluster(t, 3, opt)
	leader, followers := leaderOf(t, servers)
	ctx := t.Context()

	creds := credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{alice}})
	conn, err := grpc.NewClient(followers[0].Addr(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	spec := &pb.JobSpec{Name: "hourly", Schedule: "@hourly", Http: &pb.HttpTarget{Url: "http://127.0.0.1:1/"}}
	if _, err := pb.NewJobServiceClient(conn).CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatalf("CreateJob over TLS through a follower: %v", err)
	}
	// The leader seen before the create may have lost an election since,
	// and a follower applies the write after it commits: every node holds
	// it once it is applied everywhere.
	for _, s := range servers {
		testutil.WaitFor(t, 10*time.Second, s.cfg.ID+" applies the job created through a follower", func() bool {
			_, err := s.FSM().StoredJob("hourly")
			return err == nil
		})
	}
	_, err = pb.NewInternalServiceClient(conn).ReadIndex(ctx, &pb.ReadIndexRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("InternalService with a client certificate: %v, want PermissionDenied", err)
	}

	plain, err := grpc.NewClient(leader.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Close() }()
	_, err = pb.NewJobServiceClient(plain).GetJob(ctx, &pb.GetJobRequest{Name: "hourly"})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("GetJob in plaintext from a TLS node: %v, want Unavailable (connection closed)", err)
	}
}

// A TLS configuration without its source of certificates is refused,
// naming the field.
func TestValidateRefusesTLSWithoutSource(t *testing.T) {
	cfg := Config{ID: "n1", DataDir: t.TempDir(), Addr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:0", TLS: &cluster.TLSConfig{}}
	err := cfg.Validate()
	var ce *cluster.ConfigError
	if !errors.As(err, &ce) || ce.Field != FieldTLS || !errors.Is(err, cluster.ErrInvalidConfig) || !strings.Contains(err.Error(), "Source") {
		t.Fatalf("Validate: %v; want a ConfigError naming %s", err, FieldTLS)
	}
}
