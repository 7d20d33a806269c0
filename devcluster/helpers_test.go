package devcluster

import (
	"io"
	"testing"
	"time"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// exitTimeout bounds the wait for dev's nodes to end.
const exitTimeout = 20 * time.Second

func TestMain(m *testing.M) { testutil.Main(m) }

// run runs one command line of dev in this process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Execute(cli.NewRoot("test", stdin, stdout, stderr, NewCommand()), args)
}

// runCLIEnv runs the binary once with env added to the clean environment.
func runCLIEnv(t testing.TB, env []string, stdin string, args ...string) clustertest.Result {
	t.Helper()
	return clustertest.Run(t, env, stdin, args...)
}

var (
	expectOK      = clustertest.ExpectOK
	expectFailure = clustertest.ExpectFailure
)
