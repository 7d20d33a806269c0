package server

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/policy"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/dispatch"
)

// A webhook aimed at the node's own ports — the ops port's /status, the
// probe port, the API port, pprof — fails egress_denied, although the node
// is on loopback and so reaches other loopback services; nothing of the
// node comes back in the run.
func TestAWebhookToTheNodesOwnPortsIsDenied(t *testing.T) {
	debug, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = debug.Close() }()
	s := startCluster(t, 1, func(c *Config) {
		c.HealthAddr = "127.0.0.1:0"
		c.Policy.OwnListeners = []net.Addr{debug.Addr()}
	})[0]
	leaderOf(t, []*Server{s})
	conn := dialPlain(t, s.Addr())
	targets := map[string]string{
		"ops":    "http://" + s.HTTPAddr() + "/status",
		"health": "http://" + s.HealthAddr() + "/readyz",
		"api":    "http://" + s.Addr() + "/",
		"debug":  "http://" + debug.Addr().String() + "/debug/pprof/cmdline",
	}
	for name, url := range targets {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := pb.NewJobServiceClient(conn).CreateJob(ctx, &pb.CreateJobRequest{Spec: &pb.JobSpec{
			Name: name, Schedule: "@every 1s", Http: &pb.HttpTarget{Url: url, Method: "GET", KeepResponse: true}}})
		cancel()
		if err != nil {
			t.Fatalf("CreateJob %s: %v", name, err)
		}
	}
	for name, url := range targets {
		testutil.WaitFor(t, 15*time.Second, "a run of "+name+" ("+url+") finished", func() bool {
			for _, r := range s.FSM().ListRuns(name, 10) {
				if r.GetState() == pb.RunState_RUN_STATE_DISPATCHED || r.GetState() == pb.RunState_RUN_STATE_UNSPECIFIED {
					continue
				}
				last := &pb.Attempt{}
				if n := len(r.GetAttempts()); n > 0 {
					last = r.GetAttempts()[n-1]
				}
				if r.GetReason() != dispatch.ReasonEgressDenied || len(last.GetOutput()) != 0 {
					t.Fatalf("a run of %s to %s ended %s, reason %q, detail %q, output %q: want egress_denied",
						name, url, r.GetState(), r.GetReason(), last.GetDetail(), last.GetOutput())
				}
				return true
			}
			return false
		})
	}
}

// egressFor: a node off loopback refuses this host in every form; its ports
// are refused at any address of the host.
func TestEgressForANodeOffLoopback(t *testing.T) {
	base, err := policy.NewEgress(policy.DefaultHTTPDeny)
	if err != nil {
		t.Fatal(err)
	}
	e := egressFor(base, &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 7001},
		&net.TCPAddr{IP: net.IPv4zero, Port: 8001}, &net.TCPAddr{IP: net.IPv6unspecified, Port: 8081})
	for _, ap := range []string{"[::ffff:127.0.0.1]:443", "0.0.0.0:443", "127.0.0.1:443", "[::1]:443", "[::]:443",
		"[fd00:ec2::254]:80", "100.100.100.200:80", "[::ffff:127.0.0.1]:8001", "0.0.0.0:7001", "127.0.0.1:8081"} {
		if err := e.Allow(netip.MustParseAddrPort(ap)); !errors.Is(err, policy.ErrEgressDenied) {
			t.Errorf("%s: %v, want denied", ap, err)
		}
	}
	if err := e.Allow(netip.MustParseAddrPort("192.0.2.99:8001")); err != nil {
		t.Errorf("another host's port 8001: %v", err)
	}
	if got := e.OwnPorts(); got != "7001,8001,8081" {
		t.Errorf("own ports %q", got)
	}
	lo := egressFor(base, &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 7001})
	if err := lo.Allow(netip.MustParseAddrPort("127.0.0.1:9000")); err != nil {
		t.Errorf("a node on loopback reaches other loopback services: %v", err)
	}
}
