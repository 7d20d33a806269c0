//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
)

// proxyNetwork runs the nodes on 127.0.0.1 and puts a TCP proxy on every
// directed link: node i reaches node j through proxy (i,j). Each node
// bootstraps with a --peers list naming, for every other node, the proxy
// of its own link to it; Raft keeps each node's bootstrap configuration
// entry as it is (all have index 1 of term 1), so every node dials its
// peers through its own proxies. A cut closes a link's proxy.
//
// Limits, compared with namespaces: requests a follower forwards to the
// leader go to the address the leader advertises and bypass the proxies;
// a membership change or an installed snapshot replaces a node's view of
// the addresses with the leader's; the sink cannot tell nodes apart.
type proxyNetwork struct {
	addrs, https []string
	links        map[[2]int]*linkProxy
}

func newProxyNetwork(n int) (_ *proxyNetwork, err error) {
	nw := &proxyNetwork{links: map[[2]int]*linkProxy{}}
	defer func() {
		if err != nil {
			_ = nw.Close()
		}
	}()
	// Pick ports by listening on port 0; the nodes bind them again.
	for range n {
		for _, dst := range []*[]string{&nw.addrs, &nw.https} {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			*dst = append(*dst, ln.Addr().String())
			_ = ln.Close()
		}
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			p, err := newLinkProxy(nw.addrs[j])
			if err != nil {
				return nil, err
			}
			nw.links[[2]int{i, j}] = p
		}
	}
	return nw, nil
}

func (nw *proxyNetwork) Name() string {
	return "proxy (per-link TCP proxies on 127.0.0.1; not root or E2E_NETWORK=proxy)"
}

func (nw *proxyNetwork) Addr(i int) string     { return nw.addrs[i] }
func (nw *proxyNetwork) HTTPAddr(i int) string { return nw.https[i] }
func (nw *proxyNetwork) SenderIP(int) string   { return "" }

func (nw *proxyNetwork) Peers(i int, ids []string) string {
	var parts []string
	for j, id := range ids {
		addr := nw.addrs[j]
		if j != i {
			addr = nw.links[[2]int{i, j}].addr()
		}
		parts = append(parts, id+"="+addr)
	}
	return strings.Join(parts, ",")
}

func (nw *proxyNetwork) Command(_ int, bin string, args ...string) *exec.Cmd {
	return exec.Command(bin, args...)
}

func (nw *proxyNetwork) WorkerCommand(_ int, bin string, args ...string) (*exec.Cmd, error) {
	return exec.Command(bin, args...), nil
}

func (nw *proxyNetwork) CutWorker(int) error { return errNoWorkerCut }

func (nw *proxyNetwork) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (nw *proxyNetwork) Listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func (nw *proxyNetwork) Cut(a, b int) error {
	nw.links[[2]int{a, b}].block(true)
	nw.links[[2]int{b, a}].block(true)
	return nil
}

func (nw *proxyNetwork) CutOneWay(a, b int) error {
	// The link a->b carries a's connections to b: requests from a and
	// b's replies. Closing it stops a from reaching b; b still reaches a
	// over its own link.
	nw.links[[2]int{a, b}].block(true)
	return nil
}

func (nw *proxyNetwork) HealAll() error {
	for _, p := range nw.links {
		p.block(false)
	}
	return nil
}

func (nw *proxyNetwork) Close() error {
	var errs []error
	for _, p := range nw.links {
		errs = append(errs, p.close())
	}
	return errors.Join(errs...)
}

// linkProxy forwards connections to target unless blocked; blocking also
// closes the connections it carries.
type linkProxy struct {
	ln     net.Listener
	target string

	// mu guards blocked and conns.
	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func newLinkProxy(target string) (*linkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("link proxy: %w", err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *linkProxy) addr() string { return p.ln.Addr().String() }

func (p *linkProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *linkProxy) forward(c net.Conn) {
	defer p.wg.Done()
	if !p.track(c) {
		_ = c.Close()
		return
	}
	defer p.untrack(c)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(up) {
		_ = up.Close()
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// track registers c unless the link is blocked.
func (p *linkProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked || p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *linkProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = c.Close()
	delete(p.conns, c)
}

func (p *linkProxy) block(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = on
	if on {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

func (p *linkProxy) close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
