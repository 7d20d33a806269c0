//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"

	"github.com/raftcron/raftcron/internal/testutil"
)

// network is where the nodes run and how links between them are cut.
// Node indexes count from 0; a link cut is healed only by HealAll.
type network interface {
	Name() string
	// Addr and HTTPAddr are node i's --addr and --http-addr.
	Addr(i int) string
	HTTPAddr(i int) string
	// Peers is the --peers list node i bootstraps with, given every node's
	// ID.
	Peers(i int, ids []string) string
	// Command runs bin as node i.
	Command(i int, bin string, args ...string) *exec.Cmd
	// Dial and Listen are the test process's own connections (clients,
	// the sink), made where the nodes can reach them.
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
	Listen() (net.Listener, error)
	// SenderIP is the source address of node i's outgoing connections,
	// or "" if the network cannot tell nodes apart.
	SenderIP(i int) string
	// Cut stops traffic between a and b; CutOneWay only from a to b (a
	// cannot open connections to b, b still reaches a).
	Cut(a, b int) error
	CutOneWay(a, b int) error
	// WorkerCommand runs bin as remote worker k, where it reaches every
	// node and the test's own sockets (the sink).
	WorkerCommand(k int, bin string, args ...string) (*exec.Cmd, error)
	// CutWorker stops traffic between worker k and every node; the sink
	// stays reachable. errNoWorkerCut if the network cannot.
	CutWorker(k int) error
	HealAll() error
	Close() error
}

// errNoWorkerCut: this network cannot cut a worker off alone.
var errNoWorkerCut = errors.New("cutting a worker off needs network namespaces (root and ip(8))")

// newNetwork picks network namespaces when running as root with ip(8)
// available, and per-link TCP proxies otherwise. E2E_NETWORK=proxy forces
// the proxies. Under CI=true the proxies, which cut less, are taken only
// when asked for: a missing root or ip(8) is an error there.
func newNetwork(n int) (network, error) {
	switch {
	case netnsAvailable():
		return newNetnsNetwork(n)
	case testutil.InCI() && os.Getenv("E2E_NETWORK") != "proxy":
		return nil, errors.New("CI=true: the scenarios run in network namespaces, which need root and ip(8) (iproute2); " +
			"E2E_NETWORK=proxy runs them over proxies instead")
	}
	return newProxyNetwork(n)
}

// netnsAvailable reports whether scenarios run in network namespaces.
func netnsAvailable() bool {
	if os.Getenv("E2E_NETWORK") == "proxy" || os.Geteuid() != 0 {
		return false
	}
	_, err := exec.LookPath("ip")
	return err == nil
}

// ipCmd runs ip(8) and returns its error with its output.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
