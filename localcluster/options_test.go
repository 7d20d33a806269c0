package localcluster

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestOptionsRefuseWhatCannotWork(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]Options{
		"no binary":                {Dir: "d"},
		"no dir":                   {Binary: "b"},
		"negative size":            {Binary: "b", Dir: "d", Nodes: -1},
		"client certs without TLS": {Binary: "b", Dir: "d", VerifyClients: true},
		"TLS dir without TLS":      {Binary: "b", Dir: "d", TLSDir: "t"},
		"base port on a network":   {Binary: "b", Dir: "d", BasePort: 7001, Network: &loopback{}},
	} {
		if _, err := Launch(o); !errors.Is(err, ErrOptions) {
			t.Errorf("%s: %v, want ErrOptions", name, err)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	o := Options{Binary: "b", Dir: "d"}
	if err := o.check(); err != nil || o.Nodes != 3 || o.ClientName != defaultClientName {
		t.Fatalf("defaults: %+v, %v; want 3 nodes and client %q", o, err, defaultClientName)
	}
}

// A taken port of the base range fails before any node starts.
func TestBasePortTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	_, err = Launch(Options{Binary: "/nonexistent/raftcron", Dir: t.TempDir(), BasePort: taken})
	if !errors.Is(err, ErrPortTaken) || !strings.Contains(err.Error(), ":"+strconv.Itoa(taken)) {
		t.Fatalf("launch from port %d, which is taken: %v, want ErrPortTaken naming it", taken, err)
	}
}
