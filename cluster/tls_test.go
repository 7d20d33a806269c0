package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/pki"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const certValidity = 24 * time.Hour

// testCA issues certificates into files, as `raftcron tls` does.
type testCA struct {
	ca     *pki.CA
	dir    string
	caFile string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	pair, err := pki.NewCA(365 * 24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCA(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := pki.Write(dir, "ca", pair)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca: ca, dir: dir, caFile: paths.Cert}
}

// nodeFiles writes a fresh node certificate for id into a directory of its
// own; the CA file is this CA's.
func (c *testCA) nodeFiles(t *testing.T, id string) pki.Files {
	t.Helper()
	pair, err := c.ca.NodeCert(id, nil, certValidity)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := pki.Write(t.TempDir(), "node-"+id, pair)
	if err != nil {
		t.Fatal(err)
	}
	return pki.Files{Cert: paths.Cert, Key: paths.Key, CA: c.caFile}
}

func (c *testCA) bundle(t *testing.T, id string) *pki.Bundle {
	t.Helper()
	b, err := pki.LoadBundle(c.nodeFiles(t, id))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (c *testCA) clientCert(t *testing.T, name string) *tls.Certificate {
	t.Helper()
	pair, err := c.ca.ClientCert(name, certValidity)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &cert
}

func (c *testCA) roots(t *testing.T) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(c.caFile)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(pem)
	return p
}

func listenTLS(t *testing.T, src TLSSource) *Mux {
	t.Helper()
	m, err := ListenTLS("127.0.0.1:0", TLSConfig{Source: src, Logger: testLogger()})
	if err != nil {
		t.Fatalf("ListenTLS: %v", err)
	}
	return m
}

// newTLSCluster starts nodes n1..nN with certificates from the given CAs,
// one per node.
func newTLSCluster(t *testing.T, cas []*testCA, opts ...nodeOpts) (*testCluster, []*pki.Bundle) {
	t.Helper()
	muxes := make([]*Mux, len(cas))
	bundles := make([]*pki.Bundle, len(cas))
	for i, ca := range cas {
		bundles[i] = ca.bundle(t, nodeID(i))
		muxes[i] = listenTLS(t, bundles[i])
	}
	return clusterOn(t, muxes, opts...), bundles
}

func nodeID(i int) string { return "n" + string(rune('1'+i)) }

// clientTLS is what an API client or a forger brings: cert may be nil. It
// sends cert whatever CAs the server asks for (crypto/tls would otherwise
// leave out one the server cannot verify).
func clientTLS(roots *x509.CertPool, cert *tls.Certificate, proto string) *tls.Config {
	cfg := &tls.Config{RootCAs: roots, ServerName: pki.NodeSAN, NextProtos: []string{proto}, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg
}

func grpcClient(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// expectClosedUnanswered reads from c and wants the peer to have closed it
// without sending a single byte.
func expectClosedUnanswered(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s: connection still open after 5s, want it closed", what)
	case n > 0:
		t.Errorf("%s: got %d bytes of answer, want none", what, n)
	}
}

func TestTLSClusterElectsAndReplicates(t *testing.T) {
	ca := newTestCA(t)
	c, _ := newTLSCluster(t, []*testCA{ca, ca, ca})
	leader := c.waitLeader(10 * time.Second)
	follower := c.followers(leader)[0]
	// Through a follower: forwarded to the leader over TLS with the
	// follower's node certificate.
	put(t, follower.node, "billing", "@hourly")
	for _, tn := range c.nodes {
		readBarrier(t, tn.node)
		if got, ok := tn.fsm.get("billing"); !ok || got != "@hourly" {
			t.Errorf("%s: billing = %q, %v; want @hourly", tn.id, got, ok)
		}
	}
}

func TestTLSPortClosesPlaintextUnanswered(t *testing.T) {
	ca := newTestCA(t)
	c, _ := newTLSCluster(t, []*testCA{ca})
	c.waitLeader(10 * time.Second)
	addr := c.nodes[0].addr

	for what, first := range map[string][]byte{
		"HTTP/2 preface": []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
		"Raft byte":      {raftByte, 0, 0, 0, 0},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(first); err != nil {
			t.Fatal(err)
		}
		expectClosedUnanswered(t, conn, what)
		conn.Close()
	}

	// A plaintext gRPC client gets nowhere.
	cc := grpcClient(t, addr, insecure.NewCredentials())
	ctx := ctxTimeout(t, 5*time.Second)
	_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext gRPC call: %v, want Unavailable", err)
	}
}

func TestTLSRaftIsForNodeCertificatesOnly(t *testing.T) {
	ca := newTestCA(t)
	m := listenTLS(t, ca.bundle(t, "n1"))
	defer m.Close()
	addr := m.Addr().String()
	routed := make(chan net.Conn, 4)
	go func() {
		for {
			conn, err := m.raft.Accept()
			if err != nil {
				return
			}
			routed <- conn
		}
	}()

	// A client certificate of the right CA, offering Raft: the handshake
	// succeeds (it may use the API) but the connection is closed unanswered.
	conn, err := tls.Dial("tcp", addr, clientTLS(ca.roots(t), ca.clientCert(t, "alice"), alpnRaft))
	if err != nil {
		t.Fatalf("handshake with a client certificate: %v", err)
	}
	conn.Write([]byte{0}) // what raft would send first: an RPC type
	expectClosedUnanswered(t, conn, "Raft with a client certificate")
	conn.Close()

	// No certificate at all: the same.
	conn, err = tls.Dial("tcp", addr, clientTLS(ca.roots(t), nil, alpnRaft))
	if err != nil {
		t.Fatalf("handshake without a certificate: %v", err)
	}
	expectClosedUnanswered(t, conn, "Raft without a certificate")
	conn.Close()

	// Another node's stream layer is let through.
	peer := &streamLayer{tls: &TLSConfig{Source: ca.bundle(t, "n2")}}
	out, err := peer.Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatalf("node dial: %v", err)
	}
	defer out.Close()
	select {
	case in := <-routed:
		in.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a node's Raft connection was not routed")
	}
	select {
	case <-routed:
		t.Fatal("a connection without a node certificate reached Raft")
	default:
	}
}

func TestTLSInternalServiceRefusesClientCertificates(t *testing.T) {
	ca := newTestCA(t)
	c, _ := newTLSCluster(t, []*testCA{ca})
	leader := c.waitLeader(10 * time.Second)
	ctx := ctxTimeout(t, 10*time.Second)

	alice := grpcClient(t, leader.addr, credentials.NewTLS(clientTLS(ca.roots(t), ca.clientCert(t, "alice"), alpnGRPC)))
	// The public API is open to it...
	if _, err := healthpb.NewHealthClient(alice).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health check with a client certificate: %v", err)
	}
	// ...every InternalService method is not, and nothing is written.
	desc := pb.InternalService_ServiceDesc
	if len(desc.Streams) > 0 {
		t.Fatal("InternalService has streams: guard them in guardedInternal too")
	}
	forged, err := proto.Marshal(putCmd("forged", "@daily"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range desc.Methods {
		method := "/" + desc.ServiceName + "/" + m.MethodName
		err := alice.Invoke(ctx, method, &pb.ApplyRequest{Command: forged}, &pb.ApplyResponse{})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s with a client certificate: %v, want PermissionDenied", method, err)
		}
	}
	anon := grpcClient(t, leader.addr, credentials.NewTLS(clientTLS(ca.roots(t), nil, alpnGRPC)))
	_, err = pb.NewInternalServiceClient(anon).ReadIndex(ctx, &pb.ReadIndexRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("ReadIndex without a certificate: %v, want Unauthenticated", err)
	}
	// A node certificate is admitted.
	node := grpcClient(t, leader.addr, peerCreds{&TLSConfig{Source: ca.bundle(t, "n9")}})
	if _, err := pb.NewInternalServiceClient(node).ReadIndex(ctx, &pb.ReadIndexRequest{}); err != nil {
		t.Errorf("ReadIndex with a node certificate: %v", err)
	}
	readBarrier(t, leader.node)
	if _, ok := leader.fsm.get("forged"); ok {
		t.Error("a client certificate committed a command through InternalService")
	}
}

// The leader asks every voter which command version it applies (NodeInfo)
// before committing a newer command. On a TLS cluster the question passes
// the node guard because the leader asks with its node certificate, while
// an API client's certificate gets no answer.
func TestTLSNodeInfoAnswersNodesOnly(t *testing.T) {
	ca := newTestCA(t)
	c, _ := newTLSCluster(t, []*testCA{ca, ca, ca}, withVersions(map[string]uint32{"n1": 2, "n2": 2, "n3": 2}))
	leader := c.waitLeader(10 * time.Second)
	ctx := ctxTimeout(t, 10*time.Second)

	alice := grpcClient(t, leader.addr, credentials.NewTLS(clientTLS(ca.roots(t), ca.clientCert(t, "alice"), alpnGRPC)))
	if _, err := pb.NewInternalServiceClient(alice).NodeInfo(ctx, &pb.NodeInfoRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("NodeInfo with a client certificate: %v, want PermissionDenied", err)
	}
	// A voter the leader could not ask would count as not applying
	// version 2, and the command would be refused.
	if res, err := applyRetrying(t, leader.node, putCmd("v2-token", "@daily")); err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("version 2 command on a TLS cluster where every voter applies it: %v, %v", res, err)
	}
}

// failedHeartbeats reports the peers a node failed to send heartbeats to.
func failedHeartbeats(n *Node) <-chan raft.ServerID {
	ch := make(chan raft.Observation, 64)
	n.raft.RegisterObserver(raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.FailedHeartbeatObservation)
		return ok
	}))
	out := make(chan raft.ServerID, 64)
	go func() {
		for o := range ch {
			select {
			case out <- o.Data.(raft.FailedHeartbeatObservation).PeerID:
			default:
			}
		}
	}()
	return out
}

func TestTLSNodeOfAnotherCACannotReplicateVoteOrJoin(t *testing.T) {
	ours, foreign := newTestCA(t), newTestCA(t)
	c, _ := newTLSCluster(t, []*testCA{ours, ours, foreign})
	stranger := c.nodes[2]
	leader := c.waitLeaderAmong(10*time.Second, c.nodes[:2])
	failed := failedHeartbeats(leader.node)
	put(t, leader.node, "billing", "@hourly")

	// The leader tried to reach the stranger and could not.
	deadline := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case id := <-failed:
			seen = string(id) == stranger.id
		case <-deadline:
			t.Fatal("no failed heartbeat to the node of another CA within 10s")
		}
	}
	// Nothing replicated to it (its log holds only the bootstrap
	// configuration), it never led, and our leader kept leading.
	if last := stranger.node.raft.LastIndex(); last > 1 {
		t.Errorf("stranger's last log index %d: entries reached it", last)
	}
	if _, ok := stranger.fsm.get("billing"); ok {
		t.Error("the write reached the node of another CA")
	}
	if leader.node.raft.State() != raft.Leader || stranger.node.raft.State() == raft.Leader {
		t.Errorf("leader %s is %v, stranger is %v", leader.id, leader.node.raft.State(), stranger.node.raft.State())
	}

	// A node of another CA asking to join is refused before it is heard;
	// one of ours, asking the same way, gets in.
	joiner := startNode(t, "n4", t.TempDir(), listenTLS(t, foreign.bundle(t, "n4")))
	if err := joiner.node.joinVia(ctxTimeout(t, 10*time.Second), leader.addr); err == nil {
		t.Fatal("a node of another CA joined")
	}
	if _, ok := leader.node.server("n4"); ok {
		t.Error("n4 is in the configuration")
	}
	ourMux := listenTLS(t, ours.bundle(t, "n5"))
	startNode(t, "n5", t.TempDir(), ourMux, func(c *Config) { c.Join = []string{leader.addr} })
	if _, ok := leader.node.server("n5"); !ok {
		t.Error("n5, a node of our CA, did not join")
	}
}

// waitLeaderAmong waits until one of nodes leads and returns it.
func (tc *testCluster) waitLeaderAmong(timeout time.Duration, nodes []*testNode) *testNode {
	tc.tb.Helper()
	var leader *testNode
	testutil.WaitFor(tc.tb, timeout, "a leader", func() bool {
		for _, tn := range nodes {
			if tn.node.raft.State() == raft.Leader {
				leader = tn
				return true
			}
		}
		return false
	})
	return leader
}

// servedSerial is the serial of the certificate addr serves now, read
// from a fresh handshake.
func servedSerial(t *testing.T, ca *testCA, addr string) *big.Int {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, clientTLS(ca.roots(t), nil, alpnGRPC))
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

// replace moves src over dst, as an operator installs a renewed file.
func replace(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(dst), ".new")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// TestTLSReloadRotatesCertificatesAndCAWhileTheClusterWorks rotates every
// node to a new CA the way an operator would, with reloads only: trust
// both CAs, then switch each node's certificate, then drop the old CA. The
// node's connections are cut after each step, so the cluster must reconnect
// with what was reloaded.
func TestTLSReloadRotatesCertificatesAndCAWhileTheClusterWorks(t *testing.T) {
	oldCA, newCA := newTestCA(t), newTestCA(t)
	n := 3
	files := make([]pki.Files, n)
	bundles := make([]*pki.Bundle, n)
	muxes := make([]*Mux, n)
	isos := make([]*Isolation, n)
	for i := range n {
		files[i] = oldCA.nodeFiles(t, nodeID(i))
		// Each node owns its CA file, as on separate hosts.
		ownCA := filepath.Join(filepath.Dir(files[i].Cert), "ca.pem")
		replace(t, oldCA.caFile, ownCA)
		files[i].CA = ownCA
		b, err := pki.LoadBundle(files[i])
		if err != nil {
			t.Fatal(err)
		}
		bundles[i], muxes[i], isos[i] = b, listenTLS(t, b), NewIsolation()
		muxes[i].SetIsolation(isos[i])
	}
	c := clusterOn(t, muxes)
	c.waitLeader(10 * time.Second)

	both := filepath.Join(t.TempDir(), "both.pem")
	oldPEM, _ := os.ReadFile(oldCA.caFile)
	newPEM, _ := os.ReadFile(newCA.caFile)
	if err := os.WriteFile(both, append(oldPEM, newPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	step := func(name string, install func(i int)) {
		t.Helper()
		for i := range n {
			install(i)
			if err := bundles[i].Reload(); err != nil {
				t.Fatalf("%s: reload %s: %v", name, nodeID(i), err)
			}
			// New connections only: cut the old ones.
			isos[i].Cut()
			isos[i].Heal()
		}
		put(t, c.nodes[0].node, name, "@hourly")
		for _, tn := range c.nodes {
			readBarrier(t, tn.node)
			if _, ok := tn.fsm.get(name); !ok {
				t.Fatalf("%s: %s lacks the write", name, tn.id)
			}
		}
	}

	step("trust-both", func(i int) { replace(t, both, files[i].CA) })
	before := servedSerial(t, oldCA, c.nodes[0].addr)
	step("new-certs", func(i int) {
		renewed := newCA.nodeFiles(t, nodeID(i))
		replace(t, renewed.Cert, files[i].Cert)
		replace(t, renewed.Key, files[i].Key)
	})
	if after := servedSerial(t, newCA, c.nodes[0].addr); after.Cmp(before) == 0 {
		t.Fatal("n1 still serves the certificate it had before the reload")
	}
	step("new-ca-only", func(i int) { replace(t, newCA.caFile, files[i].CA) })

	// The old CA is no longer trusted: a client of it is refused.
	conn, err := tls.Dial("tcp", c.nodes[0].addr, clientTLS(newCA.roots(t), oldCA.clientCert(t, "old"), alpnGRPC))
	if err == nil {
		// TLS 1.3 reports the client certificate's rejection on the
		// first read.
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a certificate of the dropped CA was accepted: %v", err)
	}
}
