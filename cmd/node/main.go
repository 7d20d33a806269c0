// Command raftcron is the raftcron node (serve) and its command-line
// client. This package is the node's side alone: serve's flags, environment
// and config file into a server.Config, its signals and its exit; the
// client commands are package cli, the local demo cluster package
// devcluster.
package main

import (
	"io"
	"os"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/devcluster"
)

// version is set at build time with -ldflags '-X main.version=...'.
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command line and returns its exit status (cli.Execute:
// 0, 1 or 2, every error one line on stderr).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := cli.NewRoot(version, stdin, stdout, stderr, newServeCmd(), devcluster.NewCommand())
	return cli.Execute(root, args)
}
