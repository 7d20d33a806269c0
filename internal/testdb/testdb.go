// Package testdb starts throwaway PostgreSQL and MariaDB servers for tests: Debian's
// binaries, a temporary data directory, a loopback port, fsync off, and (when the test
// runs as root, as CI does) an unprivileged user, since neither server runs as root.
// The Go tests call Postgres and MariaDB; the client kits' tests get a server through
// the withdb command (cmd/withdb).
package testdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" driver
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// User is the account the servers run as when the tests run as root; .ci/run creates
// it. RAFTCRON_TEST_DB_USER names another.
const User = "raftcron-test"

// PostgresBin is where Debian's postgresql-15 puts initdb and postgres.
const PostgresBin = "/usr/lib/postgresql/15/bin"

// ErrUnavailable says this machine cannot run the server: a binary or the user is
// missing. Tests skip on it locally and fail under CI.
var ErrUnavailable = errors.New("testdb: unavailable")

// startTimeout bounds a server's start, initialisation included.
const startTimeout = 60 * time.Second

// Server is a running database server.
type Server struct {
	// Driver and DSN open its administrative database with database/sql.
	Driver, DSN string
	// URL is the libpq-style URL (PostgreSQL only), for the kits' drivers.
	URL string
	// Host and Port are its loopback address.
	Host string
	Port int

	kind string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	log  *bytes.Buffer
}

// StartPostgres initialises and starts a PostgreSQL 15 server, trusting local
// connections as user postgres.
func StartPostgres() (*Server, error) {
	initdb, postgres := filepath.Join(PostgresBin, "initdb"), filepath.Join(PostgresBin, "postgres")
	if err := need(initdb, postgres); err != nil {
		return nil, err
	}
	return start("postgres", func(s *Server, cred *syscall.Credential) (*exec.Cmd, error) {
		data := filepath.Join(s.dir, "data")
		if out, err := command(cred, initdb, "-D", data, "-U", "postgres", "--auth=trust",
			"--no-sync", "-E", "UTF8", "--locale=C.UTF-8").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %v: %s", err, out)
		}
		s.Driver = "pgx"
		s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
		s.DSN = s.URL
		return command(cred, postgres, "-D", data, "-p", strconv.Itoa(s.Port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"), nil
	})
}

// StartMariaDB initialises and starts a MariaDB server; root connects from loopback
// without a password.
func StartMariaDB() (*Server, error) {
	if err := need("mariadb-install-db", "mariadbd"); err != nil {
		return nil, err
	}
	return start("mariadb", func(s *Server, cred *syscall.Credential) (*exec.Cmd, error) {
		data := filepath.Join(s.dir, "data")
		args := []string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
			"--skip-test-db"}
		if cred != nil {
			args = append(args, "--user="+userName())
		}
		if out, err := command(cred, "mariadb-install-db", args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("mariadb-install-db: %v: %s", err, out)
		}
		s.Driver = "mysql"
		s.DSN = fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.Port)
		return command(cred, "mariadbd", "--no-defaults", "--datadir="+data,
			"--bind-address=127.0.0.1", "--port="+strconv.Itoa(s.Port),
			"--socket="+filepath.Join(s.dir, "mariadb.sock"), "--skip-name-resolve",
			"--innodb-flush-log-at-trx-commit=0", "--skip-log-bin", "--innodb-buffer-pool-size=32M"), nil
	})
}

func need(programs ...string) error {
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%w: %s is not installed (Debian: apt-get install postgresql mariadb-server)", ErrUnavailable, p)
		}
	}
	return nil
}

func userName() string {
	if u := os.Getenv("RAFTCRON_TEST_DB_USER"); u != "" {
		return u
	}
	return User
}

// credential is who the server runs as: nil (this process's user) unless root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(userName())
	if err != nil {
		return nil, fmt.Errorf("%w: running as root, and the servers refuse root: create the user "+
			"(useradd --system %s) or name one in RAFTCRON_TEST_DB_USER: %v", ErrUnavailable, userName(), err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command runs as cred, in its own process group, and is killed if this process dies.
func command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TZ=UTC"}
	return cmd
}

// start makes the data directory (owned by the server's user), lets prepare initialise
// it and build the server's command, starts it on a free loopback port and waits until
// it answers. A port taken between the probe and the start is retried.
func start(kind string, prepare func(*Server, *syscall.Credential) (*exec.Cmd, error)) (*Server, error) {
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 {
		s, err := startOnce(kind, cred, prepare)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func startOnce(kind string, cred *syscall.Credential, prepare func(*Server, *syscall.Credential) (*exec.Cmd, error)) (*Server, error) {
	dir, err := os.MkdirTemp("", "raftcron-testdb-"+kind+"-")
	if err != nil {
		return nil, err
	}
	s := &Server{kind: kind, dir: dir, Host: "127.0.0.1", log: &bytes.Buffer{}, done: make(chan struct{})}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if s.Port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.cmd, err = prepare(s, cred); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.startLocked(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// startLocked starts the server from a goroutine locked to its OS thread, which then
// waits for it. Pdeathsig fires when the thread that forked the child ends, not the
// process (golang/go#27505), and Go ends a thread when a goroutine locked to it returns:
// started from a test's goroutine, the server would die whenever that thread later ran
// such a goroutine (internal/proc starts every child from one).
func (s *Server) startLocked() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the server
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait()
		close(s.done)
	}()
	return <-started
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady pings the server until it answers, it exits, or startTimeout passes.
func (s *Server) waitReady() error {
	db, err := sql.Open(s.Driver, s.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s exited at start: %s", s.kind, s.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s: %v", s.kind, startTimeout, err)
		}
	}
}

// NewDatabase creates a database of its own for one test and returns its DSN (and, for
// PostgreSQL, URL).
func (s *Server) NewDatabase(name string) (dsn, url string, err error) {
	db, err := sql.Open(s.Driver, s.DSN)
	if err != nil {
		return "", "", err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	if s.kind == "postgres" {
		url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, name)
		return url, url, nil
	}
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.Port, name), "", nil
}

// Stop ends the server (a fast shutdown, then SIGKILL to its process group after 10 s)
// and removes its data directory.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		sig := syscall.SIGTERM
		if s.kind == "postgres" {
			sig = syscall.SIGINT // fast shutdown: no waiting for clients
		}
		_ = s.cmd.Process.Signal(sig)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	os.RemoveAll(s.dir)
}
