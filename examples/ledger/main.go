// Command ledger is a small service for raftcron to call: it keeps a ledger of applied runs
// in bbolt, fenced by each run's token and de-duplicated by its idempotency key, and shows
// every accepted and refused delivery at GET /.
//
//	ledger --addr 127.0.0.1:9000 --data ledger.db [--scope job|run] [--fence-key-file FILE]
//
// With --fence-key-file (the nodes' key file) it takes only deliveries signed v2 with
// one of its keys.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/ledger"
)

// errUsage marks a bad command line: exit status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "ledger:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "ledger:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9000", "`HOST:PORT` to listen on")
	data := fs.String("data", "", "the ledger's bbolt `FILE` (required)")
	scopeFlag := fs.String("scope", string(ledger.ScopeJob), "what a token fences: `job` (all runs of a job) or run (the attempts of one run)")
	keyFile := fs.String("fence-key-file", "", "the nodes' fence key `FILE`: take only deliveries signed v2 with its keys")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *data == "" {
		return fmt.Errorf("%w: --data: required", errUsage)
	}
	scope, err := ledger.ParseScope(*scopeFlag)
	if err != nil {
		return fmt.Errorf("%w: --scope: %v", errUsage, err)
	}

	var opts []ledger.Option
	if *keyFile != "" {
		keys, err := fence.LoadKeys(*keyFile)
		if err != nil {
			return fmt.Errorf("%w: --fence-key-file: %v", errUsage, err)
		}
		opts = append(opts, ledger.WithVerifier(fence.NewVerifier(keys)))
	}
	l, err := ledger.Open(*data, scope)
	if err != nil {
		return err
	}
	defer l.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: ledger.NewServer(l, stdout, opts...), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "ledger: listening on http://%s (data %s, scope %s)\n", ln.Addr(), *data, scope)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
