// Command fencedworker is a raftcron worker with one handler, deliver,
// which hands each run's payload to a fenced downstream service
// (examples/ledger): the service admits each run's token and records its
// idempotency key in the same transaction as the write, so neither a
// re-dispatch after a lost worker nor a paused worker waking up late can
// apply a run twice.
//
//	fencedworker --id w1 --addr 127.0.0.1:7001 --pool billing --to http://127.0.0.1:9000/run
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/raftcron/raftcron/examples/fencedworker/deliver"
	"github.com/raftcron/raftcron/worker"
)

// errUsage marks a bad command line: exit status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "fencedworker:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "fencedworker:", err)
		os.Exit(1)
	}
}

// run works until ctx is done.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fencedworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "", "this worker's `ID`")
	addr := fs.String("addr", "127.0.0.1:7001", "`HOST:PORT,...` of raftcron nodes")
	pool := fs.String("pool", "billing", "the `POOL` it works for")
	to := fs.String("to", "http://127.0.0.1:9000/run", "the fenced service's `URL`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	w, err := worker.New(worker.Config{
		ID: *id, Pool: *pool, Addrs: strings.Split(*addr, ","),
		Logger: slog.New(slog.NewTextHandler(stderr, nil)),
	})
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if err := w.Handle(deliver.HandlerName, deliver.Handler(client, *to)); err != nil {
		return err
	}
	return w.Run(ctx)
}
