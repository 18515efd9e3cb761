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
	// ServerCPU is the CPU the server used, in cores: the Parley nodes'
	// process_cpu_seconds_total, or the process Options.ServerPID from
	// /proc (0 when neither is available).
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
	s := usageSample{at: time.Now(), client: OwnCPU(), server: -1, load1: loadAvg()}
	if r.o.ServerPID > 0 {
		s.server = ProcessCPU(r.o.ServerPID)
	} else if r.o.Target == TargetParley {
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

// OwnCPU returns the CPU time, user and system, this process has used.
func OwnCPU() time.Duration {
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

// ProcessCPU reads the user + system CPU seconds of a local process from
// /proc/PID/stat (Linux); -1 when it cannot.
func ProcessCPU(pid int) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name may hold spaces: the fields start after its ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux platform Go supports.
const clockTicks = 100
