package jobspec

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	MaxURLLen  = 2048
	MaxBodyLen = 64 << 10 // bytes; the body travels in the Raft log
)

var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// reservedHeaderPrefix and reservedHeaders are set by raftcron on every
// request; a job header of the same name would be silently replaced.
const reservedHeaderPrefix = "x-raftcron-"

var reservedHeaders = map[string]bool{"idempotency-key": true}

func checkTarget(v *violations, spec *pb.JobSpec) {
	h, e, w := spec.GetHttp(), spec.GetExec(), spec.GetWorker()
	if n := btoi(h != nil) + btoi(e != nil) + btoi(w != nil) + btoi(spec.GetCheckin() != nil); n != 1 {
		v.add("http", "exactly one of http, exec, worker or checkin must be set")
	}
	if h != nil {
		checkHTTP(v, h)
	}
	if e != nil {
		checkCommand(v, "exec", e.GetCommand(), e.GetEnv(), e.GetDir())
		positiveDuration(v, "exec.timeout", e.GetTimeout())
	}
	if w != nil {
		checkWorker(v, w)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkHTTP(v *violations, h *pb.HttpTarget) {
	checkURL(v, h.GetUrl())
	if m := h.GetMethod(); m != "" && !httpMethods[m] {
		v.add("http.method", "must be one of GET, POST, PUT, PATCH, DELETE")
	}
	for _, name := range sortedKeys(h.GetHeaders()) {
		checkHeader(v, name, h.GetHeaders()[name])
	}
	if body := h.GetBody(); len(body) > MaxBodyLen {
		v.add("http.body", fmt.Sprintf("must be at most %d bytes", MaxBodyLen))
	} else if !utf8.ValidString(body) {
		v.add("http.body", "must be valid UTF-8")
	}
	positiveDuration(v, "http.timeout", h.GetTimeout())
	for i, code := range h.GetSuccessCodes() {
		if code < 100 || code > 599 {
			v.add(fmt.Sprintf("http.success_codes[%d]", i), fmt.Sprintf("%d is not an HTTP status code (100..599)", code))
		}
	}
}

func checkURL(v *violations, raw string) {
	const rule = "must be an absolute http or https URL with a host"
	if raw == "" {
		v.add("http.url", "required")
		return
	}
	if len(raw) > MaxURLLen {
		v.add("http.url", fmt.Sprintf("must be at most %d bytes", MaxURLLen))
		return
	}
	u, err := urlWithoutRefs(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		v.add("http.url", rule)
	}
}

func checkHeader(v *violations, name, value string) {
	switch {
	case !isToken(name):
		v.add("http.headers", "header name "+quote(name)+" is not a valid HTTP token")
	case strings.HasPrefix(strings.ToLower(name), reservedHeaderPrefix) || reservedHeaders[strings.ToLower(name)]:
		v.add("http.headers", "header "+quote(name)+" is set by raftcron on every request")
	case !validHeaderValue(value):
		v.add("http.headers", "value of "+quote(name)+" must be valid UTF-8 without control characters")
	}
}

// isToken reports whether s is an RFC 9110 token (a valid header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || !(isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// validHeaderValue allows visible characters, spaces and tabs.
func validHeaderValue(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != '\t' && (r < 0x20 || r == 0x7f) {
			return false
		}
	}
	return true
}

// checkCommand checks the command of an exec or worker target, whose
// fields are under prefix.
func checkCommand(v *violations, prefix string, cmd []string, env map[string]string, dir string) {
	if len(cmd) == 0 {
		v.add(prefix+".command", "must not be empty")
	} else if cmd[0] == "" {
		v.add(prefix+".command[0]", "must name the program to run")
	} else if !filepath.IsAbs(cmd[0]) || filepath.Clean(cmd[0]) != cmd[0] {
		// The --exec-allow patterns of a node or a worker match the path as
		// written: a relative one would depend on a PATH, ".." could leave
		// an allowed directory.
		v.add(prefix+".command[0]", "must be an absolute path without . or .. elements, like /usr/local/bin/prune")
	}
	for i, arg := range cmd {
		if !validArg(arg) {
			v.add(fmt.Sprintf("%s.command[%d]", prefix, i), "must be valid UTF-8 without NUL")
		}
	}
	for _, k := range sortedKeys(env) {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00") || !utf8.ValidString(k):
			v.add(prefix+".env", "variable name "+quote(k)+" must be non-empty, without '=' or NUL")
		case !validArg(env[k]):
			v.add(prefix+".env", "value of "+quote(k)+" must be valid UTF-8 without NUL")
		}
	}
	// A relative directory would depend on each machine's working directory.
	if dir != "" && (!filepath.IsAbs(dir) || !validArg(dir)) {
		v.add(prefix+".dir", "must be an absolute path")
	}
}

// MaxPayloadLen bounds a handler's payload: it travels in the Raft log.
const MaxPayloadLen = 64 << 10

// Bounds of worker.lease: an HTTP worker heartbeats every third of it, so
// below a second the heartbeats would compete with the network's jitter;
// beyond an hour a dead worker would hold its attempts for longer than the
// default limit of an attempt.
const (
	MinWorkerLease = time.Second
	MaxWorkerLease = time.Hour
)

// checkWorker checks a worker target's syntax. Whether a command may run
// is the worker's own policy (its --exec-allow), not the nodes'.
func checkWorker(v *violations, w *pb.WorkerTarget) {
	switch p := w.GetPool(); {
	case p == "":
		v.add("worker.pool", "required")
	case !validName(p):
		v.add("worker.pool", NameRule)
	}
	checkLabels(v, "worker.tags", w.GetTags())
	switch {
	case len(w.GetCommand()) > 0 && w.GetHandler() != "":
		v.add("worker.command", "exactly one of command or handler must be set")
	case w.GetHandler() != "":
		checkHandler(v, w)
	default:
		checkCommand(v, "worker", w.GetCommand(), w.GetEnv(), w.GetDir())
		if w.GetPayload() != "" {
			v.add("worker.payload", "is for a handler; a command takes env")
		}
	}
	positiveDuration(v, "worker.timeout", w.GetTimeout())
	if l := w.GetLease(); positiveDuration(v, "worker.lease", l) && l != nil &&
		(l.AsDuration() < MinWorkerLease || l.AsDuration() > MaxWorkerLease) {
		v.add("worker.lease", fmt.Sprintf("must be between %s and %s", MinWorkerLease, MaxWorkerLease))
	}
}

func checkHandler(v *violations, w *pb.WorkerTarget) {
	if !validLabelKey(w.GetHandler()) {
		v.add("worker.handler", HandlerRule)
	}
	if p := w.GetPayload(); len(p) > MaxPayloadLen {
		v.add("worker.payload", fmt.Sprintf("must be at most %d bytes", MaxPayloadLen))
	} else if !utf8.ValidString(p) {
		v.add("worker.payload", "must be valid UTF-8")
	}
	if len(w.GetEnv()) > 0 || w.GetDir() != "" {
		v.add("worker.env", "env and dir are for a command; a handler takes payload")
	}
}

func validArg(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
