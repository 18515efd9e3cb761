package accept

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"parley/loadgen"
)

// BenchmarkHTTPKeepAlive: GETs of an 11 KB answer over keep-alive
// loopback connections (one per parallel client) from a net/http server
// with read, write and idle timeouts, its connections' deadlines on the
// socket or swept (Sweeper); and from one without timeouts, the floor.
// Client and server share the process: the difference between the runs
// is the server's deadlines.
func BenchmarkHTTPKeepAlive(b *testing.B) {
	body := make([]byte, 11<<10)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	for _, tc := range []struct {
		name     string
		timeouts bool
		sweep    bool
	}{{"no-timeouts", false, false}, {"socket", true, false}, {"swept", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := &http.Server{Handler: handler}
			if tc.timeouts {
				srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = 10*time.Second, 10*time.Second, 30*time.Second, 2*time.Minute
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var sw *Sweeper
			if tc.sweep {
				sw = NewSweeper(SweepPeriod(10 * time.Second))
				defer sw.Close()
				srv.ConnState = func(c net.Conn, s http.ConnState) {
					if s == http.StateHijacked {
						Exact(c)
					}
				}
			}
			go srv.Serve(New(ln, Config{Sweeper: sw}))
			defer srv.Close()
			url := "http://" + ln.Addr().String() + "/"
			tr := &http.Transport{MaxIdleConnsPerHost: 1024}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			b.SetParallelism(8)
			cpu0 := loadgen.OwnCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.ReportMetric(float64((loadgen.OwnCPU()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}
