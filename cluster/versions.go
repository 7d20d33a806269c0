package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Rolling upgrades (DESIGN §16): the leader proposes a command only when
// every voter applies its version, so no voter meets a kind it cannot
// apply. The leader asks the voters when it needs to know (NodeInfo) rather
// than each node reporting on join: a restarted, upgraded or rolled-back
// node needs no new report, an unreachable one is unknown at the moment it
// matters, and commands of the first version (all that exist before an
// upgrade) ask nothing at all. Nor does a command of a version the cluster
// version already covers: every voter applied that version when it was
// raised, the cluster version never goes back, and a build below it stops
// at its first entry (fsm.ErrVersionTooNew) rather than apply anything.
// So a voter that is down blocks no command the cluster already speaks.
const (
	// baseCommandVersion is what every build applies, including the builds
	// from before nodes advertised versions: commands of it need no check.
	baseCommandVersion uint32 = 1
	// versionTrust bounds how long a voter's answer that it is new enough is
	// believed, so a node rolled back to an older build is noticed within
	// it. An answer that a voter is too old is never believed again: an
	// upgrade is noticed at the next command.
	versionTrust = 5 * time.Second
	// versionAskTimeout bounds one question; a voter that does not answer
	// in time counts as not applying the command.
	versionAskTimeout = 2 * time.Second
)

// voterVersions remembers the voters' answers on the leader.
type voterVersions struct {
	mu   sync.Mutex // guards seen
	seen map[raft.ServerID]seenVersion
}

type seenVersion struct {
	addr    raft.ServerAddress
	version uint32
	at      time.Time
}

// trusted is what s recently said it applies, if that is at least need.
func (vv *voterVersions) trusted(s raft.Server, need uint32, now time.Time) (uint32, bool) {
	vv.mu.Lock()
	defer vv.mu.Unlock()
	v, ok := vv.seen[s.ID]
	if !ok || v.addr != s.Address || v.version < need || now.Sub(v.at) >= versionTrust {
		return 0, false
	}
	return v.version, true
}

func (vv *voterVersions) remember(s raft.Server, version uint32, now time.Time) {
	vv.mu.Lock()
	defer vv.mu.Unlock()
	if vv.seen == nil {
		vv.seen = make(map[raft.ServerID]seenVersion)
	}
	vv.seen[s.ID] = seenVersion{addr: s.Address, version: version, at: now}
}

// admit refuses cmd with ErrUnsupportedCommand unless every voter applies
// its version. It runs on the leader before Raft takes the command, for
// local and forwarded writes alike.
func (n *Node) admit(ctx context.Context, cmd *pb.Command) error {
	need := n.cfg.VersionOf(cmd)
	if need <= max(baseCommandVersion, n.clusterVersion()) {
		return nil
	}
	var voters []raft.Server
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, s)
		}
	}
	got := make([]uint32, len(voters))
	var wg sync.WaitGroup
	for i, s := range voters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = n.voterVersion(ctx, s, need)
		}()
	}
	wg.Wait()
	var behind, unknown []string
	for i, s := range voters {
		switch {
		case got[i] >= need:
		case got[i] == 0:
			unknown = append(unknown, fmt.Sprintf("%s (unreachable)", s.ID))
		default:
			behind = append(behind, fmt.Sprintf("%s (applies version %d)", s.ID, got[i]))
		}
	}
	return versionRefusal(kindName(cmd), need, behind, unknown)
}

// versionRefusal is the refusal of a command of kind that needs version
// need, or nil if no voter is behind or unknown: a voter that answered
// with an older version needs an upgrade, one that did not answer may only
// be down, so the command waits for it.
func versionRefusal(kind string, need uint32, behind, unknown []string) error {
	var parts []string
	if len(behind) > 0 {
		parts = append(parts, fmt.Sprintf("command %s needs command version %d on every voter; upgrade %s",
			kind, need, strings.Join(behind, ", ")))
	}
	if len(unknown) > 0 {
		what := "command " + kind
		if len(behind) > 0 {
			what = "it also"
		}
		parts = append(parts, fmt.Sprintf("%s waits for %s to report command version %d",
			what, strings.Join(unknown, ", "), need))
	}
	if len(parts) == 0 {
		return nil
	}
	return &unsupportedError{msg: strings.Join(parts, "; ")}
}

// voterVersion is the highest command version s applies, 0 if it cannot
// be known now.
func (n *Node) voterVersion(ctx context.Context, s raft.Server, need uint32) uint32 {
	if string(s.ID) == n.cfg.ID {
		return n.cfg.CommandVersion
	}
	if v, ok := n.versions.trusted(s, need, time.Now()); ok {
		return v
	}
	c, err := n.peers.client(string(s.Address))
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, versionAskTimeout)
	defer cancel()
	resp, err := c.NodeInfo(ctx, &pb.NodeInfoRequest{})
	var v uint32
	switch {
	case status.Code(err) == codes.Unimplemented:
		v = baseCommandVersion // a release from before versions: it applies exactly the first
	case err != nil:
		n.log.Debug("voter did not say which command versions it applies", "voter", s.ID, "err", err)
		return 0
	case resp.GetId() != string(s.ID):
		return 0 // another node holds the address now
	default:
		v = resp.GetCommandVersion()
	}
	n.versions.remember(s, v, time.Now())
	return v
}

var commandKind = (&pb.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("kind")

// kindName names cmd's kind for the operator, as command.proto spells it.
func kindName(cmd *pb.Command) string {
	if fd := cmd.ProtoReflect().WhichOneof(commandKind); fd != nil {
		return string(fd.Name())
	}
	return "(of a kind this leader does not know)"
}
