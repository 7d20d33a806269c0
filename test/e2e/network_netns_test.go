//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Namespaces of this suite are named nsPrefix-<pid>-<n>-..., so that a
// later run can delete those a killed run left behind.
const nsPrefix = "rce2e"

// Addresses inside the namespaces: the hub (where the test's own sockets
// live) and one address per node, on a bridge in the hub. Nothing outside
// the namespaces sees them.
const (
	hubIP      = "10.77.0.1"
	nodeBase   = 11 // node i has 10.77.0.(11+i)
	workerBase = 41 // worker k has 10.77.0.(41+k)
	raftPort   = "7000"
	httpPort   = "8000"
)

var nsSeq atomic.Int64

// netnsNetwork runs every node in a network namespace of its own, joined
// by veth pairs to a bridge in a hub namespace where the test's sockets
// are made. A cut is an ip rule blackhole in the sending node's namespace.
type netnsNetwork struct {
	hub   string
	nodes []string // namespace of node i

	// mu guards prefs, workers and workerPrefs: the ip rule preferences
	// added per node and per worker namespace, and the workers'
	// namespaces, made on first use.
	mu          sync.Mutex
	prefs       map[int][]int
	workers     map[int]string
	workerPrefs map[int][]int
}

func newNetnsNetwork(n int) (_ *netnsNetwork, err error) {
	name := fmt.Sprintf("%s-%d-%d", nsPrefix, os.Getpid(), nsSeq.Add(1))
	nw := &netnsNetwork{hub: name + "-hub", prefs: map[int][]int{}, workers: map[int]string{}, workerPrefs: map[int][]int{}}
	defer func() {
		if err != nil {
			_ = nw.Close()
		}
	}()
	steps := [][]string{
		{"netns", "add", nw.hub},
		{"-n", nw.hub, "link", "set", "lo", "up"},
		{"-n", nw.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", nw.hub, "link", "set", "br0", "up"},
		{"-n", nw.hub, "addr", "add", hubIP + "/24", "dev", "br0"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return nil, err
		}
	}
	for i := range n {
		if err := nw.addNode(name, i); err != nil {
			return nil, err
		}
	}
	return nw, nil
}

func (nw *netnsNetwork) addNode(name string, i int) error {
	ns := fmt.Sprintf("%s-n%d", name, i+1)
	nw.nodes = append(nw.nodes, ns)
	return nw.addHost(ns, fmt.Sprintf("v%d", i+1), nw.ip(i))
}

// addHost makes namespace ns, joined to the bridge by veth, at ip.
func (nw *netnsNetwork) addHost(ns, veth, ip string) error {
	steps := [][]string{
		{"netns", "add", ns},
		{"-n", nw.hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", nw.hub, "link", "set", veth, "master", "br0"},
		{"-n", nw.hub, "link", "set", veth, "up"},
		{"-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return err
		}
	}
	return nil
}

func workerIP(k int) string { return "10.77.0." + strconv.Itoa(workerBase+k) }

// WorkerCommand runs worker k in a namespace of its own, made on first
// use, so that it can be cut off without cutting the test's clients.
func (nw *netnsNetwork) WorkerCommand(k int, bin string, args ...string) (*exec.Cmd, error) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	ns, ok := nw.workers[k]
	if !ok {
		ns = strings.TrimSuffix(nw.hub, "-hub") + fmt.Sprintf("-w%d", k+1)
		if err := nw.addHost(ns, fmt.Sprintf("vw%d", k+1), workerIP(k)); err != nil {
			return nil, err
		}
		nw.workers[k] = ns
	}
	return exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...), nil
}

// CutWorker blackholes worker k's packets to every node (the sink, in the
// hub, stays reachable).
func (nw *netnsNetwork) CutWorker(k int) error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	ns, ok := nw.workers[k]
	if !ok {
		return fmt.Errorf("worker %d was never started", k)
	}
	for i := range nw.nodes {
		pref := 10 + len(nw.workerPrefs[k])
		if err := ipCmd("-n", ns, "rule", "add", "pref", strconv.Itoa(pref), "to", nw.ip(i), "blackhole"); err != nil {
			return err
		}
		nw.workerPrefs[k] = append(nw.workerPrefs[k], pref)
	}
	return nil
}

func (nw *netnsNetwork) ip(i int) string { return "10.77.0." + strconv.Itoa(nodeBase+i) }

func (nw *netnsNetwork) Name() string {
	return fmt.Sprintf("netns (one namespace per node on a bridge; cuts are ip rule blackholes; hub %s)", nw.hub)
}

func (nw *netnsNetwork) Addr(i int) string     { return net.JoinHostPort(nw.ip(i), raftPort) }
func (nw *netnsNetwork) HTTPAddr(i int) string { return net.JoinHostPort(nw.ip(i), httpPort) }
func (nw *netnsNetwork) SenderIP(i int) string { return nw.ip(i) }

func (nw *netnsNetwork) Peers(_ int, ids []string) string {
	var parts []string
	for j, id := range ids {
		parts = append(parts, id+"="+nw.Addr(j))
	}
	return strings.Join(parts, ",")
}

func (nw *netnsNetwork) Command(i int, bin string, args ...string) *exec.Cmd {
	// ip netns exec replaces itself with bin: the process is the node.
	return exec.Command("ip", append([]string{"netns", "exec", nw.nodes[i], bin}, args...)...)
}

// inHub runs fn on an OS thread moved into the hub namespace. Sockets
// keep the namespace they were made in, so what fn opens may be used from
// anywhere afterwards.
func (nw *netnsNetwork) inHub(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + nw.hub)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", nw.hub, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and ends with this goroutine: no
			// other goroutine ever runs in the wrong namespace.
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func (nw *netnsNetwork) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := nw.inHub(func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

func (nw *netnsNetwork) Listen() (net.Listener, error) {
	var ln net.Listener
	err := nw.inHub(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(hubIP, "0"))
		return err
	})
	return ln, err
}

// rule adds an ip rule in node i's namespace under a preference of its
// own, remembered for HealAll.
func (nw *netnsNetwork) rule(i int, selector ...string) error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	pref := 10 + len(nw.prefs[i])
	args := append([]string{"-n", nw.nodes[i], "rule", "add", "pref", strconv.Itoa(pref)}, selector...)
	if err := ipCmd(append(args, "blackhole")...); err != nil {
		return err
	}
	nw.prefs[i] = append(nw.prefs[i], pref)
	return nil
}

func (nw *netnsNetwork) Cut(a, b int) error {
	if err := nw.rule(a, "to", nw.ip(b)); err != nil {
		return err
	}
	return nw.rule(b, "to", nw.ip(a))
}

func (nw *netnsNetwork) CutOneWay(a, b int) error {
	// a's packets to b's listening port are dropped; b's connections to
	// a and a's replies on them (from a's port) still flow.
	return nw.rule(a, "to", nw.ip(b), "ipproto", "tcp", "dport", raftPort)
}

func (nw *netnsNetwork) HealAll() error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var errs []error
	for i, prefs := range nw.prefs {
		for _, p := range prefs {
			if err := ipCmd("-n", nw.nodes[i], "rule", "del", "pref", strconv.Itoa(p)); err != nil {
				errs = append(errs, err)
			}
		}
		delete(nw.prefs, i)
	}
	for k, prefs := range nw.workerPrefs {
		for _, p := range prefs {
			if err := ipCmd("-n", nw.workers[k], "rule", "del", "pref", strconv.Itoa(p)); err != nil {
				errs = append(errs, err)
			}
		}
		delete(nw.workerPrefs, k)
	}
	return errors.Join(errs...)
}

// Close deletes every namespace of the network (the veth pairs go with
// them). The nodes must have exited.
func (nw *netnsNetwork) Close() error {
	var errs []error
	all := append([]string(nil), nw.nodes...)
	nw.mu.Lock()
	for _, ns := range nw.workers {
		all = append(all, ns)
	}
	nw.mu.Unlock()
	for _, ns := range append(all, nw.hub) {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			continue
		}
		if err := ipCmd("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteStaleNamespaces removes namespaces left by runs of this suite
// whose process is gone.
func deleteStaleNamespaces() {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if len(parts) < 3 || parts[0] != nsPrefix {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) == nil {
			continue
		}
		_ = ipCmd("netns", "del", e.Name())
	}
}
