package main

import (
	"io/fs"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestMemoryLimitSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value string
		want  memoryLimit
	}{
		{"auto", memoryLimit{auto: true}},
		{"AUTO", memoryLimit{auto: true}},
		{"off", memoryLimit{bytes: math.MaxInt64}},
		{"1800MiB", memoryLimit{bytes: 1800 << 20}},
		{"2GiB", memoryLimit{bytes: 2 << 30}},
		{"1TiB", memoryLimit{bytes: 1 << 40}},
		{"65536KiB", memoryLimit{bytes: 64 << 20}},
		{"134217728", memoryLimit{bytes: 128 << 20}},
		{"134217728B", memoryLimit{bytes: 128 << 20}},
	}
	for _, c := range cases {
		got, err := parseMemoryLimit(c.value)
		if err != nil || got != c.want {
			t.Errorf("parseMemoryLimit(%q) = %+v, %v; want %+v", c.value, got, err, c.want)
		}
	}
	for _, bad := range []string{"2GB", "lots", "-1GiB", "1.5GiB", "1MiB", "0", "9999999TiB"} {
		if _, err := parseMemoryLimit(bad); err == nil || !strings.HasPrefix(err.Error(), "--memory-limit:") {
			t.Errorf("parseMemoryLimit(%q): err = %v, want a --memory-limit error", bad, err)
		}
	}
}

func TestServeConfigMemoryLimitFromFlagEnvAndFile(t *testing.T) {
	cfg, err := loadForTest(t, minimal...)
	if err != nil || cfg.MemoryLimit != (memoryLimit{auto: true}) {
		t.Fatalf("default: %+v, %v; want auto", cfg.MemoryLimit, err)
	}
	path := writeConfig(t, "memory-limit: 1GiB\n")
	cfg, _ = loadForTest(t, append(minimal, "--config", path)...)
	if cfg.MemoryLimit.bytes != 1<<30 {
		t.Errorf("from file: %+v, want 1GiB", cfg.MemoryLimit)
	}
	t.Setenv("RAFTCRON_MEMORY_LIMIT", "1500MiB")
	cfg, _ = loadForTest(t, append(minimal, "--config", path)...)
	if cfg.MemoryLimit.bytes != 1500<<20 {
		t.Errorf("env over file: %+v, want 1500MiB", cfg.MemoryLimit)
	}
	cfg, _ = loadForTest(t, append(minimal, "--config", path, "--memory-limit", "off")...)
	if cfg.MemoryLimit.bytes != math.MaxInt64 {
		t.Errorf("flag over env: %+v, want off", cfg.MemoryLimit)
	}
	if _, err := loadForTest(t, append(minimal, "--memory-limit", "2GB")...); err == nil {
		t.Error("--memory-limit 2GB (not GOMEMLIMIT's syntax) was accepted")
	}
}

func TestMemoryLimitResolution(t *testing.T) {
	t.Parallel()
	auto := memoryLimit{auto: true}
	cases := []struct {
		name       string
		setting    memoryLimit
		gomemlimit string
		cgroup     int64
		machine    int64
		bytes      int64
		source     string
	}{
		{"explicit wins over GOMEMLIMIT and cgroup", memoryLimit{bytes: 1 << 30}, "3GiB", 4 << 30, 8 << 30, 1 << 30, "--memory-limit"},
		{"explicit off", memoryLimit{bytes: math.MaxInt64}, "3GiB", 0, 8 << 30, math.MaxInt64, "--memory-limit"},
		{"auto leaves GOMEMLIMIT to the runtime", auto, "3GiB", 4 << 30, 8 << 30, -1, "GOMEMLIMIT"},
		{"auto takes 90% of the cgroup limit", auto, "", 4 << 30, 8 << 30, 4 << 30 / 10 * 9, "cgroup"},
		{"a cgroup limit above the machine's memory is none", auto, "", 16 << 30, 8 << 30, 8 << 30 / 10 * 9, "machine"},
		{"auto without a cgroup limit takes 90% of the machine", auto, "", 0, 8 << 30, 8 << 30 / 10 * 9, "machine"},
		{"auto knowing neither sets none", auto, "", 0, 0, math.MaxInt64, "none"},
	}
	for _, c := range cases {
		bytes, source := c.setting.resolve(c.gomemlimit, c.cgroup, c.machine)
		if bytes != c.bytes || source != c.source {
			t.Errorf("%s: got %d from %s, want %d from %s", c.name, bytes, source, c.bytes, c.source)
		}
	}
}

// fakeFiles reads from a map, as a stand-in for /proc and /sys.
func fakeFiles(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 own cgroup", map[string]string{
			"/proc/self/cgroup": "0::/system.slice/raftcron.service\n",
			"/sys/fs/cgroup/system.slice/raftcron.service/memory.max": "2147483648\n",
		}, 2 << 30},
		{"v2 unlimited", map[string]string{
			"/proc/self/cgroup":                    "0::/user.slice\n",
			"/sys/fs/cgroup/user.slice/memory.max": "max\n",
		}, 0},
		{"v2 in a container namespace", map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30},
		{"v1 memory controller", map[string]string{
			"/proc/self/cgroup": "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n",
			"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "536870912\n",
		}, 512 << 20},
		{"v1 unlimited", map[string]string{
			"/proc/self/cgroup":                           "4:memory:/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"no cgroup file system", map[string]string{"/proc/self/cgroup": "0::/\n"}, 0},
		{"not linux", map[string]string{}, 0},
	}
	for _, c := range cases {
		if got := cgroupMemoryLimit(fakeFiles(c.files)); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestApplyMemoryLimitSetsTheRuntimeLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	got, source := applyMemoryLimit(memoryLimit{bytes: 3 << 30})
	if got != 3<<30 || source != "--memory-limit" || debug.SetMemoryLimit(-1) != 3<<30 {
		t.Fatalf("applied %d from %s; runtime has %d; want 3GiB", got, source, debug.SetMemoryLimit(-1))
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30) // what the runtime did with GOMEMLIMIT at start
	if got, source := applyMemoryLimit(memoryLimit{auto: true}); got != 1<<30 || source != "GOMEMLIMIT" {
		t.Fatalf("auto with GOMEMLIMIT: %d from %s, want GOMEMLIMIT's 1GiB kept", got, source)
	}
}

func TestMachineMemory(t *testing.T) {
	meminfo := "MemTotal:       24576000 kB\nMemFree:         1000 kB\n"
	if got := machineMemory(fakeFiles(map[string]string{"/proc/meminfo": meminfo})); got != 24576000<<10 {
		t.Errorf("MemTotal 24576000 kB read as %d bytes", got)
	}
	if got := machineMemory(fakeFiles(map[string]string{})); got != 0 {
		t.Errorf("without /proc/meminfo: %d, want 0", got)
	}
	if got := machineMemory(fakeFiles(map[string]string{"/proc/meminfo": "MemTotal: lots\n"})); got != 0 {
		t.Errorf("malformed MemTotal: %d, want 0", got)
	}
}
