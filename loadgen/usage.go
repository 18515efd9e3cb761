package loadgen

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Resources says how busy the machine was during the measurement, so that
// a figure can be read against what limited it: on a machine shared by the
// server and the load generator, a server short of CPU and a load generator
// short of CPU look alike from the latencies alone.
type Resources struct {
	// ServerCPU is the CPU the Parley nodes used, in cores, from
	// process_cpu_seconds_total (0 when not available).
	ServerCPU float64 `json:"server_cpu_cores"`
	// ClientCPU is the CPU the load generator used, in cores.
	ClientCPU float64 `json:"client_cpu_cores"`
	// Load1 is the machine's one-minute load average at the start and at
	// the end of the measurement (Linux only).
	Load1Start float64 `json:"load1_start"`
	Load1End   float64 `json:"load1_end"`
}

// usageSample is a reading of the counters behind Resources.
type usageSample struct {
	at     time.Time
	client time.Duration // own user + system CPU
	server float64       // sum of process_cpu_seconds_total, -1 if unknown
	load1  float64
}

func (r *run) sampleUsage() usageSample {
	s := usageSample{at: time.Now(), client: ownCPU(), server: -1, load1: loadAvg()}
	if r.o.Target == TargetParley {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if vals, err := r.sumMetrics(ctx); err == nil {
			if v, ok := vals["process_cpu_seconds_total"]; ok {
				s.server = v
			}
		}
	}
	return s
}

// until returns the resources used from s to e.
func (s usageSample) until(e usageSample) Resources {
	span := e.at.Sub(s.at).Seconds()
	res := Resources{Load1Start: s.load1, Load1End: e.load1}
	if span <= 0 {
		return res
	}
	res.ClientCPU = (e.client - s.client).Seconds() / span
	if s.server >= 0 && e.server >= 0 {
		res.ServerCPU = (e.server - s.server) / span
	}
	return res
}

func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg reads the one-minute load average on Linux; 0 elsewhere.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
