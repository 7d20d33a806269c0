package main

import (
	"context"
	"errors"
	"fmt"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// bootstrapACL makes the demo's management token, as `raftcron acl
// bootstrap` would: dev uses it for the demo job and prints it for a second
// terminal. It runs once every node is ready, so a leader exists. Nothing
// to do with --insecure, whose nodes run without ACLs.
func (d *demo) bootstrapACL(ctx context.Context) error {
	if d.tls == nil {
		return nil
	}
	o := d.client()
	conn, err := o.dial()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	callCtx, cancel := o.callContext(ctx)
	defer cancel()
	resp, err := pb.NewAclServiceClient(conn).BootstrapAcl(callCtx, &pb.BootstrapAclRequest{})
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil // interrupted: stop quietly
	case err != nil:
		return fmt.Errorf("acl bootstrap: %w", o.call("").describe(err))
	}
	d.token = resp.GetSecret()
	d.out.printf("acl        management token %q made by acl bootstrap (RAFTCRON_TOKEN below)", resp.GetToken().GetName())
	return nil
}

// client is how dev calls the nodes: through the first one, with the
// demo's certificates and token unless --insecure.
func (d *demo) client() *clientOptions {
	return &clientOptions{addr: d.nodes[0].addr, timeout: devApplyTimeout, auth: d.tls.auth(d.token)}
}
