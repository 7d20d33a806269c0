package fsm

import "testing"

// A oneof case added to Command without a handler would make every node
// answer MALFORMED to it; catch that at test time instead.
func TestEveryCommandKindHasAHandler(t *testing.T) {
	fields := kindOneof.Fields()
	for i := range fields.Len() {
		if _, ok := handlers[fields.Get(i).Name()]; !ok {
			t.Errorf("command kind %s has no handler", fields.Get(i).Name())
		}
	}
	if len(handlers) != fields.Len() {
		t.Errorf("%d handlers for %d command kinds", len(handlers), fields.Len())
	}
}
