package jobfile

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// FuzzDecode: no input panics, and whatever decodes survives encoding in
// both formats, and the generic form, unchanged.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte(`{"name":"a","schedule":"@hourly","http":{"url":"http://x/","timeout":"1s"},"labels":{"a":"b"}}`))
	f.Add([]byte("- name: a\n  schedule: '@hourly'\n- name: b\n  exec: {command: [ls, -l]}\n  retry: {max_attempts: 2, initial_backoff: 1.5s}\n"))
	f.Add([]byte("name: a\n---\nname: b\nstart_at: 2026-01-02T03:04:05.678+02:00\n"))
	f.Add([]byte("name: x\ncatchup: {window: 5 minutes}\n"))
	f.Add([]byte("\x00\xff{[}: - &a *a"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte(""))
	f.Add([]byte("overlap: OVERLAP_SKIP\ncatchup: {policy: CATCHUP_POLICY_ALL, window: 1.5s}\nlabels: {1: 2.50, true: x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := Decode(data)
		if err != nil {
			return
		}
		for i, spec := range specs {
			m, err := ToMap(spec)
			if err != nil {
				t.Fatalf("decoded %q but ToMap fails: %v", data, err)
			}
			if again, err := FromMap(m); err != nil || !proto.Equal(again, spec) {
				t.Fatalf("generic form of spec %d of %q: got %v, %v; want %v", i, data, again, err, spec)
			}
		}
		for _, encode := range []func(...*pb.JobSpec) ([]byte, error){EncodeYAML, EncodeJSON} {
			out, err := encode(specs...)
			if err != nil {
				t.Fatalf("decoded %q but cannot encode it: %v", data, err)
			}
			again, err := Decode(out)
			if err != nil {
				t.Fatalf("re-encoded file does not decode: %v\ninput: %q\nencoded:\n%s", err, data, out)
			}
			if len(again) != len(specs) {
				t.Fatalf("round trip: %d specs became %d", len(specs), len(again))
			}
			for i := range specs {
				if !proto.Equal(specs[i], again[i]) {
					t.Fatalf("round trip changed spec %d\ninput: %q\nencoded:\n%s\ngot  %v\nwant %v", i, data, out, again[i], specs[i])
				}
			}
		}
	})
}
