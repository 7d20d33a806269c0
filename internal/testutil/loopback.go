package testutil

import (
	"fmt"
	"math/rand/v2"
	"runtime"
)

// LoopbackHost is an address in 127.0.0.0/8 other than 127.0.0.1, drawn at
// random, for servers a test stops and starts again on the same port (on
// systems other than Linux, which route only 127.0.0.1, it is 127.0.0.1).
// A port freed on 127.0.0.1 may be given to an outgoing connection before
// the restart binds it again: the kernel takes their local ports from the
// range a listener's port 0 comes from, and on 127.0.0.1, the source of the
// loopback route. No connection takes a port on this address.
func LoopbackHost() string {
	if runtime.GOOS != "linux" {
		return "127.0.0.1"
	}
	return fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
}
