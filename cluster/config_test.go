package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParsePeers(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Peer
		errHas   string
	}{
		{name: "good", in: "n1=127.0.0.1:7001,n2=127.0.0.1:7002", want: []Peer{{"n1", "127.0.0.1:7001"}, {"n2", "127.0.0.1:7002"}}},
		{name: "spaces", in: " n1 = host-a:7001 , n2=host-b:7001 ", want: []Peer{{"n1", "host-a:7001"}, {"n2", "host-b:7001"}}},
		{name: "empty", in: "", want: nil},
		{name: "missing equals", in: "n1=127.0.0.1:7001,127.0.0.1:7002", errHas: `"127.0.0.1:7002": missing '='`},
		{name: "empty id", in: "=127.0.0.1:7001", errHas: "empty ID"},
		{name: "bad id", in: "n 1=127.0.0.1:7001", errHas: "may contain only"},
		{name: "missing port", in: "n1=127.0.0.1", errHas: "want HOST:PORT"},
		{name: "port zero", in: "n1=127.0.0.1:0", errHas: "port must be a number in 1..65535"},
		{name: "empty host", in: "n1=:7001", errHas: "empty host"},
		{name: "empty entry", in: "n1=127.0.0.1:7001,,n2=127.0.0.1:7002", errHas: "entry 2 is empty"},
		{name: "duplicate id", in: "n1=127.0.0.1:7001,n1=127.0.0.1:7002", errHas: `duplicate ID "n1"`},
		{name: "duplicate address", in: "n1=127.0.0.1:7001,n2=127.0.0.1:7001", errHas: "duplicate address 127.0.0.1:7001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePeers(tc.in)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.HasPrefix(err.Error(), "--peers") {
					t.Fatalf("ParsePeers(%q) = %v, %v; want an error naming --peers and containing %q", tc.in, got, err, tc.errHas)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("error %v does not match ErrInvalidConfig", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParsePeers(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	mux := listen(t, "127.0.0.1:0")
	defer mux.Close()
	self := mux.Addr().String()
	good := func(dir string) Config {
		return Config{ID: "n1", Addr: self, DataDir: dir, FSM: newKVFSM(), Logger: testLogger(), NoSync: true,
			Peers: []Peer{{"n1", self}, {"n2", "127.0.0.1:1"}}}
	}
	for _, tc := range []struct {
		name   string
		mod    func(*Config)
		errHas string
	}{
		{"peers without id", func(c *Config) { c.Peers = c.Peers[1:] }, "--peers must contain --id n1"},
		{"peers address differs", func(c *Config) { c.Peers[0].Addr = "127.0.0.1:2" }, "--peers gives n1 the address 127.0.0.1:2 but --addr is"},
		{"peers duplicate", func(c *Config) { c.Peers = append(c.Peers, Peer{"n2", "127.0.0.1:3"}) }, `duplicate ID "n2"`},
		{"peers and join", func(c *Config) { c.Join = []string{"127.0.0.1:1"} }, "--peers and --join are mutually exclusive"},
		{"join only self", func(c *Config) { c.Peers = nil; c.Join = []string{self} }, "--join must name at least one node other than --addr"},
		{"join bad address", func(c *Config) { c.Peers = nil; c.Join = []string{"nowhere"} }, "--join: address \"nowhere\""},
		{"empty id", func(c *Config) { c.ID = "" }, "--id: empty ID"},
		{"bad id", func(c *Config) { c.ID = "n=1" }, "--id: ID \"n=1\" may contain only"},
		{"empty data dir", func(c *Config) { c.DataDir = "" }, "--data-dir must not be empty"},
		{"nil fsm", func(c *Config) { c.FSM = nil }, "Config.FSM must not be nil"},
		{"unspecified addr", func(c *Config) { c.Addr = "0.0.0.0:7001"; c.Peers = nil }, "--addr 0.0.0.0:7001: peers must be able to dial it"},
		{"addr without port", func(c *Config) { c.Addr = "host" }, "--addr: address \"host\""},
		{"negative heartbeat", func(c *Config) { c.HeartbeatTimeout = -time.Second }, "--raft-heartbeat -1s: must not be negative"},
		{"tiny election", func(c *Config) { c.ElectionTimeout = time.Millisecond }, "--raft-election 1ms: must be at least 5ms"},
		{"lease over heartbeat", func(c *Config) { c.HeartbeatTimeout, c.LeaderLeaseTimeout = time.Second, 2*time.Second }, "--raft-lease 2s must not exceed --raft-heartbeat 1s"},
		{"election under heartbeat", func(c *Config) { c.HeartbeatTimeout, c.ElectionTimeout = 2*time.Second, time.Second }, "--raft-election 1s must be at least --raft-heartbeat 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			cfg := good(dir)
			tc.mod(&cfg)
			n, err := New(cfg, mux)
			if err == nil {
				n.Shutdown(t.Context())
				t.Fatalf("New accepted %s", tc.name)
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("New: %v; want ErrInvalidConfig containing %q", err, tc.errHas)
			}
			if cfg.DataDir != "" {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("refused config still created %s", dir)
				}
			}
		})
	}
	if _, err := New(good(t.TempDir()), nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New with nil mux: %v, want ErrInvalidConfig", err)
	}
}

func TestRaftConfigTimings(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		hb, el, lease             time.Duration
		wantHB, wantEl, wantLease time.Duration
	}{
		{"defaults", 0, 0, 0, time.Second, time.Second, 500 * time.Millisecond},
		{"short heartbeat clamps the unset lease to half", 200 * time.Millisecond, 0, 0, 200 * time.Millisecond, time.Second, 100 * time.Millisecond},
		{"500ms heartbeat: lease below it, so a crashed leader can be replaced early", 500 * time.Millisecond, 0, 0, 500 * time.Millisecond, time.Second, 250 * time.Millisecond},
		{"the lease never goes under raft's floor", 6 * time.Millisecond, 0, 0, 6 * time.Millisecond, time.Second, 5 * time.Millisecond},
		{"long heartbeat raises the unset election", 2 * time.Second, 0, 0, 2 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{"all set", 300 * time.Millisecond, 400 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ID: "n1", HeartbeatTimeout: tc.hb, ElectionTimeout: tc.el, LeaderLeaseTimeout: tc.lease, Logger: testLogger()}
			rc, err := cfg.raftConfig()
			if err != nil {
				t.Fatalf("raftConfig: %v", err)
			}
			if rc.HeartbeatTimeout != tc.wantHB || rc.ElectionTimeout != tc.wantEl || rc.LeaderLeaseTimeout != tc.wantLease {
				t.Errorf("heartbeat/election/lease = %s/%s/%s, want %s/%s/%s", rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout, tc.wantHB, tc.wantEl, tc.wantLease)
			}
			if !rc.ShutdownOnRemove || rc.TrailingLogs != trailingLogs || string(rc.LocalID) != "n1" {
				t.Errorf("ShutdownOnRemove %v, TrailingLogs %d, LocalID %q", rc.ShutdownOnRemove, rc.TrailingLogs, rc.LocalID)
			}
		})
	}
}
