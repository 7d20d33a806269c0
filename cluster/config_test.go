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
		{name: "empty id", in: "=127.0.0.1:7001", errHas: "entry =127.0.0.1:7001: required"},
		{name: "bad id", in: "n 1=127.0.0.1:7001", errHas: `"n 1" must match [a-z0-9][a-z0-9._-]{0,62}`},
		{name: "capital id", in: "N1=127.0.0.1:7001", errHas: `"N1" must match`},
		{name: "missing port", in: "n1=127.0.0.1", errHas: "is not HOST:PORT"},
		{name: "port zero", in: "n1=127.0.0.1:0", errHas: "needs a port between 1 and 65535"},
		{name: "empty host", in: "n1=:7001", errHas: "needs a host"},
		{name: "empty entry", in: "n1=127.0.0.1:7001,,n2=127.0.0.1:7002", errHas: "entry 2 is empty"},
		{name: "duplicate id", in: "n1=127.0.0.1:7001,n1=127.0.0.1:7002", errHas: `duplicate ID "n1"`},
		{name: "duplicate address", in: "n1=127.0.0.1:7001,n2=127.0.0.1:7001", errHas: "duplicate address 127.0.0.1:7001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePeers(tc.in)
			if tc.errHas != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Field != FieldPeers || !strings.Contains(ce.Rule, tc.errHas) {
					t.Fatalf("ParsePeers(%q) = %v, %v; want a ConfigError naming the Peers field and containing %q", tc.in, got, err, tc.errHas)
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
		{"peers without id", func(c *Config) { c.Peers = c.Peers[1:] }, "Peers: must contain this node's ID n1"},
		{"peers address differs", func(c *Config) { c.Peers[0].Addr = "127.0.0.1:2" }, "Peers: n1=127.0.0.1:2 does not match this node's address"},
		{"peers duplicate", func(c *Config) { c.Peers = append(c.Peers, Peer{"n2", "127.0.0.1:3"}) }, `Peers: duplicate ID "n2"`},
		{"peers and join", func(c *Config) { c.Join = []string{"127.0.0.1:1"} }, "Join: cannot be combined with a bootstrap set of peers"},
		{"join only self", func(c *Config) { c.Peers = nil; c.Join = []string{self} }, "Join: must name at least one node other than this one"},
		{"join bad address", func(c *Config) { c.Peers = nil; c.Join = []string{"nowhere"} }, `Join: "nowhere" is not HOST:PORT`},
		{"join unspecified address", func(c *Config) { c.Peers = nil; c.Join = []string{"0.0.0.0:7001"} }, "Join: 0.0.0.0:7001 is not reachable"},
		{"empty id", func(c *Config) { c.ID = "" }, "ID: required"},
		{"bad id", func(c *Config) { c.ID = "n=1" }, `ID: "n=1" must match [a-z0-9][a-z0-9._-]{0,62}`},
		{"empty data dir", func(c *Config) { c.DataDir = "" }, "DataDir: required"},
		{"nil fsm", func(c *Config) { c.FSM = nil }, "Config.FSM must not be nil"},
		{"unspecified addr", func(c *Config) { c.Addr = "0.0.0.0:7001"; c.Peers = nil }, "Addr: 0.0.0.0:7001 is not reachable: the other nodes dial it"},
		{"addr without port", func(c *Config) { c.Addr = "host" }, `Addr: "host" is not HOST:PORT`},
		{"negative heartbeat", func(c *Config) { c.HeartbeatTimeout = -time.Second }, "HeartbeatTimeout: -1s must not be negative"},
		{"tiny election", func(c *Config) { c.ElectionTimeout = time.Millisecond }, "ElectionTimeout: 1ms must be at least 5ms"},
		{"lease over heartbeat", func(c *Config) { c.HeartbeatTimeout, c.LeaderLeaseTimeout = time.Second, 2*time.Second }, "LeaderLeaseTimeout: 2s must not exceed the heartbeat timeout 1s"},
		{"election under heartbeat", func(c *Config) { c.HeartbeatTimeout, c.ElectionTimeout = 2*time.Second, time.Second }, "ElectionTimeout: 1s must be at least the heartbeat timeout 2s"},
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

// Validate reports every broken rule at once, each as a ConfigError naming
// the Config field, and names no command-line flag: mapping fields to flags
// is the caller's business.
func TestValidateReportsEveryRuleByField(t *testing.T) {
	cfg := Config{ID: "Bad", Addr: "0.0.0.0:7001", HeartbeatTimeout: -time.Second,
		Peers: []Peer{{"n2", "127.0.0.1:7002"}}, Join: []string{"127.0.0.1:7003"}}
	err := cfg.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate: %v, want ErrInvalidConfig", err)
	}
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		if !errors.As(e, &ce) {
			t.Fatalf("%v is no ConfigError", e)
		}
		if strings.Contains(ce.Rule, "--") {
			t.Errorf("rule %q names a flag", ce.Rule)
		}
		fields = append(fields, ce.Field)
	}
	want := []string{FieldID, FieldDataDir, FieldAddr, FieldJoin, FieldHeartbeatTimeout}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("fields %v, want %v (%v)", fields, want, err)
	}
	if err := (Config{ID: "n1", DataDir: "/d", Addr: "127.0.0.1:7001"}).Validate(); err != nil {
		t.Errorf("a valid config: %v", err)
	}
}
