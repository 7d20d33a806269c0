// Command withdb runs a command with throwaway database servers, for the client kits'
// tests: it starts the servers named by its flags (see package testdb), puts their
// addresses in the command's environment, runs it, stops the servers and exits with the
// command's status.
//
//	withdb -postgres -- make -C clients test
//
// sets RAFTCRON_TEST_POSTGRES to a URL such as
// postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable. A server this machine
// cannot run is left out with a message (the kits' tests then skip, or fail under
// CI=true).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/raftcron/raftcron/internal/testdb"
)

func main() {
	pg := flag.Bool("postgres", false, "start PostgreSQL and set RAFTCRON_TEST_POSTGRES")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: withdb [-postgres] -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	os.Exit(run(*pg, flag.Args()))
}

func run(pg bool, args []string) int {
	env := os.Environ()
	if pg {
		srv, err := testdb.StartPostgres()
		switch {
		case errors.Is(err, testdb.ErrUnavailable):
			fmt.Fprintf(os.Stderr, "withdb: no PostgreSQL: %v\n", err)
		case err != nil:
			fmt.Fprintf(os.Stderr, "withdb: %v\n", err)
			return 1
		default:
			defer srv.Stop()
			env = append(env, "RAFTCRON_TEST_POSTGRES="+srv.URL)
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	// The command gets the terminal's signals itself; withdb only outlives it to stop
	// the servers. Caught, not ignored: an ignored signal stays ignored in the command
	// and everything it starts (a JVM then never runs its shutdown hooks on SIGTERM).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM)
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "withdb: %v\n", err)
	return 1
}
