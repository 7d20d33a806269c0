package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/ops"
)

// listenDebug binds --debug-addr; nil when it is not set.
func listenDebug(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			err = cluster.ErrAddrInUse // the words of every other port
		}
		return nil, fmt.Errorf("--%s %s: %w", flagDebugAddr, addr, err)
	}
	return ln, nil
}

// serveDebug serves pprof on ln until stopDebug; nil ln serves nothing.
func serveDebug(ln net.Listener, errc chan<- error) *http.Server {
	if ln == nil {
		return nil
	}
	srv := ops.DebugHTTPServer(ops.DebugHandler())
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("debug server on --%s %s: %w", flagDebugAddr, ln.Addr(), err)
		}
	}()
	return srv
}

// stopDebug cuts running profiles: nobody waits for a debug download when
// the node stops.
func stopDebug(srv *http.Server) {
	if srv != nil {
		_ = srv.Close()
	}
}
