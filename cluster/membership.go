package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	joinTimeout = 30 * time.Second
	joinAttempt = 5 * time.Second
	joinBackoff = 500 * time.Millisecond
)

// AddVoter adds a voting member, through the leader. Adding a member that
// is already a voter at the same address succeeds without change.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	if err := ValidateID(id); err != nil {
		return invalidf("add voter: ID %v", err)
	}
	if err := ValidateAddr(addr); err != nil {
		return invalidf("add voter %s: address %v", id, err)
	}
	err := n.addVoterLocal(ctx, id, addr)
	if !errors.Is(err, ErrNotLeader) {
		return err
	}
	c, leader, err := n.leaderClient()
	if err != nil {
		return err
	}
	if _, err := c.AddVoter(ctx, &pb.AddVoterRequest{Id: id, Address: addr}); err != nil {
		return forwardError(leader, err)
	}
	return nil
}

func (n *Node) addVoterLocal(ctx context.Context, id, addr string) error {
	if err := n.leaderCheck(); err != nil {
		return err
	}
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		sameID, sameAddr := string(s.ID) == id, string(s.Address) == addr
		switch {
		case sameID && sameAddr && s.Suffrage == raft.Voter:
			return nil
		case sameID && !sameAddr:
			return fmt.Errorf("add voter %s at %s: %w: it has address %s (remove it first)", id, addr, ErrServerExists, s.Address)
		case sameAddr && !sameID:
			return fmt.Errorf("add voter %s at %s: %w: server %s has that address", id, addr, ErrServerExists, s.ID)
		}
	}
	f := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, raftTimeout(ctx))
	if err := waitFuture(ctx, f); err != nil {
		return fmt.Errorf("add voter %s: %w", id, raftError(err))
	}
	n.log.Info("added voter", "id", id, "addr", addr)
	return nil
}

// RemoveServer removes a member, through the leader. The removed node shuts
// its Raft down by itself (ShutdownOnRemove) and never leads alone.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	// Only presence is checked: a server in the configuration stays
	// removable whatever its ID looks like.
	if id == "" {
		return invalidf("remove server: ID required")
	}
	err := n.removeServerLocal(ctx, id)
	if !errors.Is(err, ErrNotLeader) {
		return err
	}
	c, leader, err := n.leaderClient()
	if err != nil {
		return err
	}
	if _, err := c.RemoveServer(ctx, &pb.RemoveServerRequest{Id: id}); err != nil {
		return forwardError(leader, err)
	}
	return nil
}

func (n *Node) removeServerLocal(ctx context.Context, id string) error {
	if err := n.leaderCheck(); err != nil {
		return err
	}
	if _, ok := n.server(id); !ok {
		return fmt.Errorf("remove server %q: %w", id, ErrNotFound)
	}
	f := n.raft.RemoveServer(raft.ServerID(id), 0, raftTimeout(ctx))
	if err := waitFuture(ctx, f); err != nil {
		return fmt.Errorf("remove server %s: %w", id, raftError(err))
	}
	n.log.Info("removed server", "id", id)
	return nil
}

// TransferLeadership hands leadership to voter id, or to the most
// up-to-date voter if id is empty, and returns the new leader.
func (n *Node) TransferLeadership(ctx context.Context, id string) (*pb.ServerRef, error) {
	ref, err := n.transferLocal(ctx, id)
	if !errors.Is(err, ErrNotLeader) {
		return ref, err
	}
	c, leader, err := n.leaderClient()
	if err != nil {
		return nil, err
	}
	resp, err := c.TransferLeadership(ctx, &pb.InternalServiceTransferLeadershipRequest{Id: id})
	if err != nil {
		return nil, forwardError(leader, err)
	}
	return &pb.ServerRef{Id: resp.GetId(), Address: resp.GetAddress()}, nil
}

func (n *Node) transferLocal(ctx context.Context, id string) (*pb.ServerRef, error) {
	if err := n.leaderCheck(); err != nil {
		return nil, err
	}
	if id == n.cfg.ID {
		return &pb.ServerRef{Id: n.cfg.ID, Address: n.cfg.Addr}, nil
	}
	var f raft.Future
	if id == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		s, ok := n.server(id)
		if !ok {
			return nil, fmt.Errorf("transfer leadership to %q: %w", id, ErrNotFound)
		}
		if s.Suffrage != raft.Voter {
			return nil, fmt.Errorf("transfer leadership to %q: %w", id, raft.ErrNotVoter)
		}
		f = n.raft.LeadershipTransferToServer(s.ID, s.Address)
	}
	if err := waitFuture(ctx, f); err != nil {
		return nil, fmt.Errorf("transfer leadership: %w", raftError(err))
	}
	return n.awaitOtherLeader(ctx)
}

// awaitOtherLeader waits until a leader other than this node is known: the
// transfer future returns once the target was told to campaign, before it
// has won.
func (n *Node) awaitOtherLeader(ctx context.Context) (*pb.ServerRef, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if id, addr := n.Leader(); addr != "" && id != n.cfg.ID {
			return &pb.ServerRef{Id: id, Address: addr}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("transfer leadership: waiting for the new leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (n *Node) leaderCheck() error {
	if n.closed.Load() {
		return ErrShutdown
	}
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return nil
}

func (n *Node) server(id string) (raft.Server, bool) {
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if string(s.ID) == id {
			return s, true
		}
	}
	return raft.Server{}, false
}

// join asks the listed nodes, in turn, to add this one as a voter; a node
// that is not the leader names it, and the leader is asked next. It retries while no leader answers, up to
// joinTimeout or until ctx ends; a refusal (conflicting ID or address)
// ends it at once.
func (n *Node) join(ctx context.Context) error {
	deadline := time.Now().Add(joinTimeout)
	var last error
	for {
		for _, addr := range n.cfg.Join {
			if addr == n.cfg.Addr {
				continue
			}
			err := n.joinVia(ctx, addr)
			var nl *NoLeaderError
			if errors.As(err, &nl) && nl.LeaderAddr != "" && nl.LeaderAddr != addr && nl.LeaderAddr != n.cfg.Addr {
				// Not the leader but it knows one: ask that one directly,
				// so the request still travels a single hop.
				addr = nl.LeaderAddr
				err = n.joinVia(ctx, addr)
			}
			if err == nil {
				n.log.Info("joined cluster", "via", addr)
				return nil
			}
			if errors.Is(err, ErrServerExists) || errors.Is(err, ErrInvalidConfig) {
				return &ConfigError{Field: FieldJoin, Rule: fmt.Sprintf("%s refused this node: %v", addr, err), Err: err}
			}
			last = err
			n.log.Warn("join attempt failed", "via", addr, "error", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("join: no node of %v added this node within %s: %w", n.cfg.Join, joinTimeout, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("join: %w (last attempt: %v)", ctx.Err(), last)
		case <-time.After(joinBackoff):
		}
	}
}

func (n *Node) joinVia(ctx context.Context, addr string) error {
	c, err := n.peers.client(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, joinAttempt)
	defer cancel()
	_, err = c.AddVoter(ctx, &pb.AddVoterRequest{Id: n.cfg.ID, Address: n.cfg.Addr})
	if err != nil {
		return forwardError(&pb.ServerRef{Address: addr}, err)
	}
	return nil
}
