package fsm_test

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// commandGen produces a reproducible mix of commands over a small pool of
// names, so that creates collide, versions go stale, deletes are followed
// by re-creates and identical puts happen, plus malformed entries.
type commandGen struct {
	rng  *rand.Rand
	now  int64
	pool []string
}

func newCommandGen(seed uint64) *commandGen {
	return &commandGen{
		rng:  rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		now:  baseTime.UnixNano(),
		pool: []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"},
	}
}

func (g *commandGen) pick(options ...string) string { return options[g.rng.IntN(len(options))] }

func (g *commandGen) name() string { return g.pool[g.rng.IntN(len(g.pool))] }

func (g *commandGen) version() uint64 {
	if g.rng.IntN(3) > 0 {
		return 0
	}
	return uint64(g.rng.IntN(4) + 1)
}

func (g *commandGen) spec() *pb.JobSpec {
	s := &pb.JobSpec{
		Name:     g.name(),
		Schedule: g.pick("@hourly", "@daily", "*/5 * * * *"),
		Timezone: g.pick("UTC", "Europe/Berlin"),
		Labels:   map[string]string{"team": g.pick("billing", "ops")},
		Paused:   g.rng.IntN(5) == 0,
		Catchup:  &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
	}
	if g.rng.IntN(2) == 0 {
		s.Labels["env"] = g.pick("prod", "dev")
	}
	if g.rng.IntN(4) == 0 {
		s.Exec = &pb.ExecTarget{Command: []string{"/bin/" + g.pick("true", "date")}, Env: map[string]string{"A": "b", "C": "d"}}
	} else {
		s.Http = &pb.HttpTarget{Url: "http://" + g.pick("a", "b") + ".test/", Headers: map[string]string{"X-A": "1", "X-B": "2"}}
	}
	return s
}

// next returns the data of the next log entry.
func (g *commandGen) next() []byte {
	g.now += int64(time.Second) + g.rng.Int64N(int64(time.Second))
	var c *pb.Command
	switch n := g.rng.IntN(100); {
	case n < 40:
		mode := pb.PutMode(g.rng.IntN(3) + 1)
		c = putCmd(mode, g.spec(), g.version())
	case n < 55:
		c = deleteCmd(g.name(), g.version())
	case n < 75:
		c = pauseCmd(g.name(), g.rng.IntN(2) == 0, g.pick("", "maintenance", "incident"))
	default:
		return g.malformed()
	}
	c.ProposedAtUnixNano = g.now
	data, err := proto.Marshal(c)
	if err != nil {
		panic(err) // the generator builds valid messages only
	}
	return data
}

func (g *commandGen) malformed() []byte {
	var c *pb.Command
	switch g.rng.IntN(6) {
	case 0:
		b := make([]byte, g.rng.IntN(24)+1)
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		return b
	case 1:
		c = &pb.Command{}
	case 2:
		c = &pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Mode: pb.PutMode_PUT_MODE_UPSERT}}}
	case 3:
		s := g.spec()
		s.Name = ""
		c = upsertCmd(s)
	case 4:
		c = deleteCmd("", 0)
	default:
		c = pauseCmd("", true, "x")
	}
	c.ProposedAtUnixNano = g.now
	data, _ := proto.Marshal(c)
	return data
}
