//go:build e2e

package e2e

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testdb"
	"github.com/raftcron/raftcron/internal/testutil"
)

// receiverTimeout bounds a receiver's start (a JVM on a loaded machine included).
const receiverTimeout = 60 * time.Second

// receiver is one kit's slots service: examples/slots (Go) and clients/*/examples
// (Python, Node, Java). Every one takes DATABASE_URL, FENCE_KEY_FILE, PORT and UNFENCED,
// and prints "listening on HOST:PORT".
type receiver struct {
	lang string
	// need skips the test (fails it under CI) when a tool the receiver needs is
	// missing (nil: none can be).
	need func(t *testing.T)
	// build makes the receiver runnable from the repository at root (nil: it is).
	build func(root string) error
	// command runs it from root.
	command func(root string) *exec.Cmd
	// databaseURL is the DATABASE_URL it takes for the database of dsn (testdb's URL).
	databaseURL func(dsn *url.URL) string

	once     sync.Once
	buildErr error
}

// python is Debian's python3, which has python3-psycopg2, when there is one.
func python() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// jdbcJar is Debian's PostgreSQL JDBC driver (libpostgresql-jdbc-java).
const jdbcJar = "/usr/share/java/postgresql.jar"

func libpqURL(dsn *url.URL) string { return dsn.String() }

func makeClients(target string) func(root string) error {
	return func(root string) error { return runIn(root, "make", "-C", "clients", target) }
}

var (
	goReceiver = &receiver{
		lang: "go",
		build: func(root string) error {
			return runIn(root, "go", "build", "-o", "bin/example-slots", "./examples/slots")
		},
		command:     func(root string) *exec.Cmd { return exec.Command(filepath.Join(root, "bin", "example-slots")) },
		databaseURL: libpqURL,
	}
	pythonReceiver = &receiver{
		lang: "python",
		need: func(t *testing.T) {
			if out, err := exec.Command(python(), "-c", "import psycopg2").CombinedOutput(); err != nil {
				testutil.SkipOrFail(t, "%s has no psycopg2 (Debian: apt-get install python3-psycopg2): %v %s", python(), err, out)
			}
		},
		command: func(root string) *exec.Cmd {
			cmd := exec.Command(python(), filepath.Join(root, "clients", "python", "examples", "slots.py"))
			cmd.Env = []string{"PYTHONPATH=" + filepath.Join(root, "clients", "python")}
			return cmd
		},
		databaseURL: libpqURL,
	}
	nodeReceiver = &receiver{
		lang: "node",
		need: func(t *testing.T) {
			testutil.NeedTool(t, "make", "apt-get install make")
			testutil.NeedTool(t, "node", "apt-get install nodejs")
			testutil.NeedTool(t, "npm", "apt-get install npm")
		},
		build: makeClients("node-build"),
		command: func(root string) *exec.Cmd {
			return exec.Command("node", filepath.Join(root, "clients", "node", "dist", "examples", "slots.js"))
		},
		databaseURL: libpqURL,
	}
	javaReceiver = &receiver{
		lang: "java",
		need: func(t *testing.T) {
			testutil.NeedTool(t, "make", "apt-get install make")
			testutil.NeedTool(t, "javac", "apt-get install openjdk-17-jdk-headless")
			if _, err := os.Stat(jdbcJar); err != nil {
				testutil.SkipOrFail(t, "no JDBC driver for PostgreSQL (Debian: apt-get install libpostgresql-jdbc-java): %v", err)
			}
		},
		build: makeClients("java-build"),
		command: func(root string) *exec.Cmd {
			build := filepath.Join(root, "clients", "build", "java")
			cp := strings.Join([]string{filepath.Join(build, "main"), filepath.Join(build, "test"), jdbcJar}, ":")
			return exec.Command("java", "-cp", cp, "dev.raftcron.examples.Slots")
		},
		databaseURL: func(dsn *url.URL) string {
			return fmt.Sprintf("jdbc:postgresql://%s%s?user=%s", dsn.Host, dsn.Path, dsn.User.Username())
		},
	}
)

// runIn runs a build command in dir.
func runIn(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

var listening = regexp.MustCompile(`listening on (127\.0\.0\.1:[0-9]+)`)

// start builds the receiver (once per test binary), starts it with env and waits until
// it listens; it returns its address. It dies with the test, and its output is shown
// if the test fails.
func (r *receiver) start(t *testing.T, dir string, env ...string) string {
	t.Helper()
	if r.need != nil {
		r.need(t)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r.once.Do(func() {
		if r.build == nil {
			return
		}
		begin := time.Now()
		if r.buildErr = r.build(root); r.buildErr == nil {
			fmt.Printf("e2e: built the %s receiver in %s\n", r.lang, time.Since(begin).Round(time.Millisecond))
		}
	})
	if r.buildErr != nil {
		t.Fatalf("build the %s receiver: %v", r.lang, r.buildErr)
	}
	cmd := r.command(root)
	cmd.Env = append(append(proc.Environ(), cmd.Env...), env...)
	logPath := filepath.Join(dir, "receiver-"+r.lang+".log")
	p, err := proc.Start(cmd, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill(exitTimeout)
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("---- the %s receiver ----\n%s", r.lang, out)
		}
	})
	var addr string
	testutil.WaitFor(t, receiverTimeout, "the "+r.lang+" receiver to listen", func() bool {
		out, _ := os.ReadFile(logPath)
		if m := listening.FindSubmatch(out); m != nil {
			addr = string(m[1])
			return true
		}
		if p.Exited() {
			t.Fatalf("the %s receiver exited (%v):\n%s", r.lang, p.Err(), out)
		}
		return false
	})
	return addr
}

// zombieDatabase is a database of the test's own on the test binary's PostgreSQL.
func zombieDatabase(t *testing.T) *url.URL {
	t.Helper()
	dsn, err := url.Parse(testdb.Database(t, testdb.Postgres(t)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
