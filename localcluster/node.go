package localcluster

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
)

// Bounds of the waits for a node's process to end.
const (
	// KillTimeout bounds the wait for a SIGKILLed node to be reaped.
	KillTimeout = 20 * time.Second
	// StopTimeout bounds a node's graceful stop (SIGTERM): serve bounds
	// each of its steps; past it the node gets SIGKILL.
	StopTimeout = 15 * time.Second
)

// State is where a node's process stands.
type State int

const (
	Down    State = iota // never started, or exited
	Running              // running
	Paused               // stopped by SIGSTOP (Pause) until Resume
)

func (s State) String() string {
	return [...]string{"down", "running", "paused"}[s]
}

// Node is one `raftcron serve` process, restartable on its ports and data
// dir. Its methods are safe for concurrent use.
type Node struct {
	ID string
	// Index is the node's place in the cluster, from 0 (a Network's
	// index).
	Index int
	// Addr is its --addr (Raft and gRPC), HTTPAddr its --http-addr (the
	// ops port), DebugAddr its --debug-addr ("" without Options.Debug).
	Addr, HTTPAddr, DebugAddr string
	DataDir, LogPath          string

	c *Cluster
	// tls says whether the node gets the cluster's TLS flags.
	tls bool
	// own are the flags Add gave the node, after every other.
	own []string

	// startMu serializes the node's starts.
	startMu sync.Mutex

	// mu guards the fields below, which change on every (re)start.
	mu         sync.Mutex
	bin        string
	membership []string // --peers or --join and its value
	proc       *proc.Process
	paused     bool
	startedAt  time.Time
}

// start launches the node's process with its current flags; its output is
// appended to its log (internal/proc). The flags are asked for outside mu:
// Options.NodeArgs may look at the node.
func (n *Node) start() error {
	n.startMu.Lock()
	defer n.startMu.Unlock()
	if n.State() != Down {
		return fmt.Errorf("start %s: %w", n.ID, ErrStillRunning)
	}
	n.mu.Lock()
	bin, membership := n.bin, n.membership
	n.mu.Unlock()
	args := n.c.args(n, membership)
	cmd := n.c.net.Command(n.Index, bin, args...)
	cmd.Env = proc.Environ()
	if n.c.opts.NodeEnv != nil {
		cmd.Env = append(cmd.Env, n.c.opts.NodeEnv(n)...)
	}
	start := time.Now()
	p, err := startTracked(cmd, n.LogPath)
	if err != nil {
		return fmt.Errorf("start %s: %w", n.ID, err)
	}
	n.mu.Lock()
	n.proc, n.paused, n.startedAt = p, false, start
	n.mu.Unlock()
	return nil
}

// SetBinary makes the node run bin from its next start on (a rolling
// upgrade replaces the binary node by node).
func (n *Node) SetBinary(bin string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bin = bin
}

// Binary is the binary the node runs, or runs at its next start.
func (n *Node) Binary() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.bin
}

// Process is the node's current process (running or exited), nil before
// its first start: its PID, its Done channel and how it ended.
func (n *Node) Process() *proc.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Pid of the current process, 0 if it is down.
func (n *Node) Pid() int {
	if n.State() == Down {
		return 0
	}
	return n.Process().Pid()
}

// StartedAt is when the current process was started.
func (n *Node) StartedAt() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startedAt
}

// State is where the node's process stands.
func (n *Node) State() State {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.proc == nil || n.proc.Exited():
		return Down
	case n.paused:
		return Paused
	default:
		return Running
	}
}

// Running reports whether the node's process runs (and is not paused).
func (n *Node) Running() bool { return n.State() == Running }

// Signal sends sig to the current process. SIGSTOP and SIGCONT are Pause
// and Resume, which the node's State follows.
func (n *Node) Signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.Exited() {
		return fmt.Errorf("signal %s: %w", n.ID, errDown)
	}
	if err := n.proc.Signal(sig); err != nil {
		return fmt.Errorf("signal %s: %w", n.ID, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return nil
}

var errDown = fmt.Errorf("the node is down")

// Pause stops the node's process (SIGSTOP): it answers nothing, and its
// peers elect another leader once their election timeout passes.
func (n *Node) Pause() error { return n.Signal(syscall.SIGSTOP) }

// Resume continues a paused node (SIGCONT).
func (n *Node) Resume() error { return n.Signal(syscall.SIGCONT) }

// Kill sends SIGKILL and waits until the process is reaped; it returns
// when the signal was sent (zero if the node was down).
func (n *Node) Kill() (time.Time, error) {
	p := n.Process()
	if p == nil || p.Exited() {
		return time.Time{}, nil
	}
	at := time.Now()
	_ = p.Signal(syscall.SIGKILL)
	if !p.Wait(KillTimeout) {
		return at, fmt.Errorf("%s (pid %d) not reaped within %s of SIGKILL: %w", n.ID, p.Pid(), KillTimeout, ErrStillRunning)
	}
	return at, nil
}

// Stop asks the node to stop gracefully (SIGTERM; a leader hands over
// first) and waits up to timeout; a node still running then is killed,
// and Stop says so.
func (n *Node) Stop(timeout time.Duration) error {
	p := n.Process()
	if p == nil || p.Exited() {
		return nil
	}
	if n.State() == Paused {
		_ = n.Resume() // a stopped process cannot act on SIGTERM
	}
	_ = p.Signal(syscall.SIGTERM)
	if p.Wait(timeout) {
		return nil
	}
	if _, err := n.Kill(); err != nil {
		return err
	}
	return fmt.Errorf("%s did not stop within %s of SIGTERM (killed): %w", n.ID, timeout, ErrStillRunning)
}

// WaitExit waits up to timeout for the current process to end by itself
// and returns its exit status (-1: a signal ended it).
func (n *Node) WaitExit(timeout time.Duration) (int, error) {
	p := n.Process()
	if p == nil {
		return 0, fmt.Errorf("%s was never started", n.ID)
	}
	if !p.Wait(timeout) {
		return 0, fmt.Errorf("%s did not exit within %s: %w", n.ID, timeout, ErrStillRunning)
	}
	return p.ExitCode(), nil
}

// LastLog is the last line the node wrote into its log, cut to 300 bytes:
// what it said as it stopped.
func (n *Node) LastLog() string {
	f, err := os.Open(n.LogPath)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, proc.LogHeader) {
			last = line
		}
	}
	const maxLen = 300
	if len(last) > maxLen {
		last = last[:maxLen] + "..."
	}
	return last
}
