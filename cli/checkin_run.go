package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/api"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Exit statuses of a command that could not run, as shells report them.
const (
	exitNotExecutable = 126
	exitNotFound      = 127
	exitSignalBase    = 128
)

// wrap checks in start, runs argv, checks in its end and ends with its
// exit status. A ping that fails is said on stderr and changes nothing
// else: the command runs, and its status is the exit status.
func (o *clientOptions) wrap(cmd *cobra.Command, job string, argv []string) error {
	stderr := cmd.ErrOrStderr()
	start, err := o.ping(cmd.Context(), &pb.CheckinJobRequest{Name: job, Status: "start"})
	var env []string
	if err != nil {
		warnPing(stderr, "the start of job "+job, err, "running "+quoteCommand(argv)+" all the same")
	} else {
		env = checkinEnv(start)
	}
	res := runCommand(argv, cmd.InOrStdin(), cmd.OutOrStdout(), stderr, env)
	code := int32(res.code)
	end := &pb.CheckinJobRequest{Name: job, Status: pingStatus(res.code), ExitCode: &code, Output: res.tail}
	if start != nil {
		end.RunId = start.GetId()
	}
	if _, err := o.ping(cmd.Context(), end); err != nil {
		warnPing(stderr, fmt.Sprintf("the %s of job %s", end.GetStatus(), job), err,
			fmt.Sprintf("exiting with the command's status, %d", res.code))
	}
	return &exitStatus{code: res.code, err: res.err}
}

// commandResult is how a command ended: its exit status (128+N for signal
// N, 126 or 127 when it could not start), the tail of its output, and why
// it did not start.
type commandResult struct {
	code int
	tail string
	err  error
}

// runCommand runs argv with the caller's environment and env, passing its
// output through and keeping the tail of it, and forwards the signals that
// would end this process to it.
func runCommand(argv []string, stdin io.Reader, stdout, stderr io.Writer, env []string) commandResult {
	tail := &tailBuffer{max: api.MaxCheckinOutput}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin = stdin
	c.Stdout, c.Stderr = io.MultiWriter(stdout, tail), io.MultiWriter(stderr, tail)
	c.Env = append(os.Environ(), env...)
	if err := c.Start(); err != nil {
		code := exitNotExecutable
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		err = fmt.Errorf("%s: %w", argv[0], err)
		_, _ = io.WriteString(tail, err.Error())
		return commandResult{code: code, tail: tail.String(), err: err}
	}
	stop := forwardSignals(c.Process)
	_ = c.Wait() // the status says how it ended
	stop()
	code := c.ProcessState.ExitCode()
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = exitSignalBase + int(ws.Signal())
	}
	return commandResult{code: code, tail: tail.String()}
}

// forwardSignals hands p the signals that would end this process while it
// runs, so that a supervisor stopping the check-in stops the command, and
// the check-in still records how it ended. stop ends the forwarding.
func forwardSignals(p *os.Process) (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sig := range ch {
			_ = p.Signal(sig)
		}
	}()
	return func() {
		signal.Stop(ch)
		close(ch)
		<-done
	}
}

// tailBuffer keeps the last max bytes written to it; writes may come from
// two goroutines (stdout and stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is the tail as text: a request carries valid UTF-8 only.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD")
}
