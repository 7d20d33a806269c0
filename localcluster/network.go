package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
)

// loopback is the Network of a cluster that was given none: every node on
// 127.0.0.1, its ports bound by this process until the nodes start.
type loopback struct {
	addrs, https, debugs []string
	held                 []net.Listener
	dialer               net.Dialer
}

// bindLoopback binds the ports of n nodes: from base on, or free ones.
func bindLoopback(n, base int, debug bool) (*loopback, error) {
	count := 2 * n
	if debug {
		count += n
	}
	l := &loopback{}
	for i := range count {
		addr := "127.0.0.1:0"
		if base != 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", base+i)
		}
		ln, err := listen(addr)
		if err != nil {
			l.release()
			return nil, err
		}
		l.held = append(l.held, ln)
	}
	for i, ln := range l.held {
		addr := ln.Addr().String()
		switch {
		case i < n:
			l.addrs = append(l.addrs, addr)
		case i < 2*n:
			l.https = append(l.https, addr)
		default:
			l.debugs = append(l.debugs, addr)
		}
	}
	return l, nil
}

func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s: %w", addr, ErrPortTaken)
	}
	return ln, err
}

// release closes the ports held, for the nodes to bind them. The kernel
// could give one away in between; the node then says so as it exits.
func (l *loopback) release() {
	for _, ln := range l.held {
		_ = ln.Close()
	}
	l.held = nil
}

// add picks free ports for one more node and returns its index.
func (l *loopback) add(debug bool) (int, error) {
	count := 2
	if debug {
		count = 3
	}
	var picked []string
	for range count {
		ln, err := listen("127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		picked = append(picked, ln.Addr().String())
		defer ln.Close()
	}
	l.addrs, l.https = append(l.addrs, picked[0]), append(l.https, picked[1])
	if debug {
		l.debugs = append(l.debugs, picked[2])
	}
	return len(l.addrs) - 1, nil
}

func (l *loopback) Addr(i int) string     { return l.addrs[i] }
func (l *loopback) HTTPAddr(i int) string { return l.https[i] }

// debugAddr is node i's --debug-addr, "" without Options.Debug.
func (l *loopback) debugAddr(i int) string {
	if i < len(l.debugs) {
		return l.debugs[i]
	}
	return ""
}

func (l *loopback) Peers(_ int, ids []string) string {
	peers := make([]string, len(ids))
	for j, id := range ids {
		peers[j] = id + "=" + l.addrs[j]
	}
	return strings.Join(peers, ",")
}

func (l *loopback) Command(_ int, bin string, args ...string) *exec.Cmd {
	return exec.Command(bin, args...)
}

func (l *loopback) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return l.dialer.DialContext(ctx, network, addr)
}
