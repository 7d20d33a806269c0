package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/internal/testutil"
)

// loadForTest parses args into serve's flag set and loads the configuration.
func loadForTest(t *testing.T, args ...string) (serveConfig, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	addServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return loadServeConfig(fs)
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	return testutil.WriteFile(t, "raftcron.yaml", body)
}

// minimal is the smallest valid command line apart from what a case sets.
var minimal = []string{"--id", "n1", "--data-dir", "/tmp/x"}

func TestServeConfigPrecedenceFlagsOverEnvOverFile(t *testing.T) {
	file := "data-dir: /from/file\nraft-heartbeat: 700ms\nhttp-addr: 127.0.0.1:9101\nlog-level: warn\n"
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		dataDir string
		beat    time.Duration
		http    string
		level   string
	}{
		{name: "file only", args: []string{"--id", "n1"},
			dataDir: "/from/file", beat: 700 * time.Millisecond, http: "127.0.0.1:9101", level: "WARN"},
		{name: "env over file", env: map[string]string{"RAFTCRON_DATA_DIR": "/from/env", "RAFTCRON_RAFT_HEARTBEAT": "800ms"},
			args: []string{"--id", "n1"}, dataDir: "/from/env", beat: 800 * time.Millisecond, http: "127.0.0.1:9101", level: "WARN"},
		{name: "flag over env", env: map[string]string{"RAFTCRON_DATA_DIR": "/from/env", "RAFTCRON_RAFT_HEARTBEAT": "800ms"},
			args:    []string{"--id", "n1", "--data-dir", "/from/flag", "--raft-heartbeat", "900ms"},
			dataDir: "/from/flag", beat: 900 * time.Millisecond, http: "127.0.0.1:9101", level: "WARN"},
		{name: "flag over file", args: []string{"--id", "n1", "--http-addr", "127.0.0.1:9102", "--log-level", "debug"},
			dataDir: "/from/file", beat: 700 * time.Millisecond, http: "127.0.0.1:9102", level: "DEBUG"},
		{name: "id from env", env: map[string]string{"RAFTCRON_ID": "n7"}, args: nil,
			dataDir: "/from/file", beat: 700 * time.Millisecond, http: "127.0.0.1:9101", level: "WARN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, file)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := loadForTest(t, append(tc.args, "--config", path)...)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if cfg.DataDir != tc.dataDir || cfg.HeartbeatTimeout != tc.beat || cfg.HTTPAddr != tc.http || cfg.LogLevel.String() != tc.level {
				t.Fatalf("got data-dir %q heartbeat %s http-addr %q level %s; want %q %s %q %s",
					cfg.DataDir, cfg.HeartbeatTimeout, cfg.HTTPAddr, cfg.LogLevel, tc.dataDir, tc.beat, tc.http, tc.level)
			}
		})
	}
}

func TestServeConfigDefaultsWhenNothingSet(t *testing.T) {
	t.Parallel()
	cfg, err := loadForTest(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:7001" || cfg.HTTPAddr != "127.0.0.1:8001" || cfg.HeartbeatTimeout != 0 ||
		cfg.ElectionTimeout != 0 || cfg.LeaderLeaseTimeout != 0 || cfg.LogFormat != "text" || cfg.LogLevel.String() != "INFO" ||
		cfg.AuditLimit != 10_000 || cfg.WorkerLease != 10*time.Second {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestServeConfigFileFromEnvAndLists(t *testing.T) {
	path := writeConfig(t, "id: n2\ndata-dir: /d\naddr: 127.0.0.1:7002\n"+
		"peers: [n1=127.0.0.1:7001, n2=127.0.0.1:7002]\n")
	t.Setenv("RAFTCRON_CONFIG", path)
	cfg, err := loadForTest(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Peers) != 2 || cfg.Peers[1].ID != "n2" {
		t.Fatalf("peers %v", cfg.Peers)
	}
	path = writeConfig(t, "id: n2\ndata-dir: /d\naddr: 127.0.0.1:7002\njoin:\n  - 127.0.0.1:7001\n  - 127.0.0.1:7003\n")
	t.Setenv("RAFTCRON_CONFIG", path)
	if cfg, err = loadForTest(t); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Join) != 2 || cfg.Join[0] != "127.0.0.1:7001" || cfg.Join[1] != "127.0.0.1:7003" {
		t.Fatalf("join %v", cfg.Join)
	}
}

func TestServeConfigUnknownFileKeyIsRejected(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "id: n1\ndata-dir: /d\nraft:\n  heartbeat: 1s\n")
	_, err := loadForTest(t, "--config", path)
	if err == nil || !strings.Contains(err.Error(), `unknown key "raft.heartbeat"`) {
		t.Fatalf("err = %v, want unknown key raft.heartbeat", err)
	}
}

func TestServeConfigIgnoresUnrelatedEnv(t *testing.T) {
	t.Setenv("RAFTCRON_BIN", "/somewhere/raftcron")
	t.Setenv("RAFTCRON_NO_SUCH_FLAG", "x")
	if _, err := loadForTest(t, minimal...); err != nil {
		t.Fatal(err)
	}
}

func TestServeConfigPeersMustContainID(t *testing.T) {
	t.Parallel()
	_, err := loadForTest(t, append(minimal, "--peers", "n2=127.0.0.1:7002,n3=127.0.0.1:7003")...)
	if err == nil || err.Error() != "--peers: must contain this node's ID n1" {
		t.Fatalf("err = %v", err)
	}
}

func TestServeConfigRejectsBadValues(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "no id", args: []string{"--data-dir", "/d"}, want: "--id: required"},
		{name: "id with capitals", args: []string{"--id", "Node1", "--data-dir", "/d"}, want: "--id:"},
		{name: "no data dir", args: []string{"--id", "n1"}, want: "--data-dir: required"},
		{name: "addr without port", args: append(minimal, "--addr", "localhost"), want: "--addr:"},
		{name: "addr unspecified", args: append(minimal, "--addr", "0.0.0.0:7001"), want: "--addr:"},
		{name: "http-addr bad port", args: append(minimal, "--http-addr", "127.0.0.1:99999"), want: "--http-addr:"},
		{name: "peers address differs from addr", args: append(minimal, "--peers", "n1=127.0.0.1:7009"), want: "--peers: n1=127.0.0.1:7009 does not match this node's address 127.0.0.1:7001"},
		{name: "peers malformed", args: append(minimal, "--peers", "n1"), want: "--peers"},
		{name: "join malformed", args: append(minimal, "--join", "nohost"), want: "--join:"},
		{name: "negative duration", args: append(minimal, "--raft-heartbeat", "-1s"), want: "--raft-heartbeat: -1s must not be negative"},
		{name: "election under heartbeat", args: append(minimal, "--raft-heartbeat", "2s", "--raft-election", "1s"), want: "--raft-election: 1s must be at least the heartbeat timeout 2s"},
		{name: "join unspecified host", args: append(minimal, "--join", "0.0.0.0:7001"), want: "--join: 0.0.0.0:7001 is not reachable"},
		{name: "peers and join", args: append(minimal, "--peers", "n1=127.0.0.1:7001", "--join", "127.0.0.1:7002"), want: "--join: cannot be combined with a bootstrap set of peers"},
		{name: "env duration typo", env: map[string]string{"RAFTCRON_RAFT_ELECTION": "1 second"}, args: minimal, want: "--raft-election:"},
		{name: "log level", args: append(minimal, "--log-level", "loud"), want: "--log-level:"},
		{name: "log format", args: append(minimal, "--log-format", "xml"), want: "--log-format:"},
		{name: "audit limit zero", args: append(minimal, "--audit-limit", "0"), want: "--audit-limit: \"0\" is not a whole number from 1 to"},
		{name: "audit limit too high", env: map[string]string{"RAFTCRON_AUDIT_LIMIT": "100001"}, args: minimal, want: "--audit-limit: 100001 is more than the 100000 records the audit trail may keep"},
		{name: "worker lease too short", args: append(minimal, "--worker-lease", "10ms"), want: "--worker-lease: must be at least 100ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := loadForTest(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans several lines: %q", err)
			}
		})
	}
}

func TestServeConfigDiskStallTimeout(t *testing.T) {
	cfg, err := loadForTest(t, minimal...)
	if err != nil || cfg.DiskStallTimeout != 5*time.Second {
		t.Fatalf("default: %v, %v; want 5s", cfg.DiskStallTimeout, err)
	}
	t.Setenv("RAFTCRON_DISK_STALL_TIMEOUT", "2s")
	if cfg, err = loadForTest(t, minimal...); err != nil || cfg.DiskStallTimeout != 2*time.Second {
		t.Fatalf("from the environment: %v, %v; want 2s", cfg.DiskStallTimeout, err)
	}
	t.Setenv("RAFTCRON_DISK_STALL_TIMEOUT", "soon")
	if _, err = loadForTest(t, minimal...); err == nil || !strings.Contains(err.Error(), "--disk-stall-timeout") {
		t.Fatalf("a value that is no duration: %v, want an error naming --disk-stall-timeout", err)
	}
	t.Setenv("RAFTCRON_DISK_STALL_TIMEOUT", "50ms")
	if _, err = loadForTest(t, minimal...); err == nil || !strings.Contains(err.Error(), "--disk-stall-timeout: 50ms must be at least 100ms") {
		t.Fatalf("a value under the minimum: %v, want an error naming --disk-stall-timeout and the rule", err)
	}
}

// Every mistake is reported at once, each named by its flag, on one line.
func TestServeConfigReportsEveryMistakeByFlag(t *testing.T) {
	t.Parallel()
	_, err := loadForTest(t, "--id", "N1", "--addr", "0.0.0.0:7001", "--http-addr", "nohost", "--raft-lease", "-1s")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"--id: ", "--data-dir: required", "--addr: ", "--http-addr: ", "--raft-lease: -1s must not be negative"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	for _, field := range []string{"ID:", "DataDir", "Addr:", "HTTPAddr", "LeaderLeaseTimeout"} {
		if strings.Contains(err.Error(), field) {
			t.Errorf("error %q names the field %s instead of its flag", err, field)
		}
	}
}

func TestServeConfigHealthAddr(t *testing.T) {
	t.Setenv("RAFTCRON_HEALTH_ADDR", "0.0.0.0:8081")
	cfg, err := loadForTest(t, minimal...)
	if err != nil || cfg.HealthAddr != "0.0.0.0:8081" {
		t.Fatalf("RAFTCRON_HEALTH_ADDR: HealthAddr %q, %v; want 0.0.0.0:8081", cfg.HealthAddr, err)
	}
	_, err = loadForTest(t, append(minimal, "--health-addr", "127.0.0.1:99999")...)
	if err == nil || !strings.Contains(err.Error(), "--health-addr: ") || !strings.Contains(err.Error(), "between 0") {
		t.Fatalf("--health-addr 127.0.0.1:99999: %v, want an error naming --health-addr and the port rule", err)
	}
}
