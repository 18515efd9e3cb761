package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// metricRE finds the metric names in a PromQL expression.
var metricRE = regexp.MustCompile(`\b(?:parley|go|process)_[a-z0-9_]+\b`)

// dashboardMetrics returns every metric name the Grafana dashboard
// queries, with the panel titles that query it.
func dashboardMetrics(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/grafana/parley.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		Panels []json.RawMessage
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("deploy/grafana/parley.json: %v", err)
	}
	type panel struct {
		Title   string
		Type    string
		Panels  []json.RawMessage
		Targets []struct{ Expr string }
	}
	names := map[string][]string{}
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("panel: %v", err)
			}
			walk(p.Panels)
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q queries nothing", p.Title)
			}
			for _, tg := range p.Targets {
				found := metricRE.FindAllString(tg.Expr, -1)
				if len(found) == 0 {
					t.Errorf("panel %q: expression %q names no metric", p.Title, tg.Expr)
				}
				for _, n := range found {
					names[n] = append(names[n], p.Title)
				}
			}
		}
	}
	walk(dash.Panels)
	if len(names) < 20 {
		t.Fatalf("the dashboard queries only %d metrics", len(names))
	}
	return names
}

// scrapedNames returns the sample names a node exposes on /metrics
// (histograms as their _bucket, _sum and _count series).
func scrapedNames(t *testing.T, m *Main) map[string]bool {
	t.Helper()
	resp, err := http.Get("http://" + m.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		names[name] = true
	}
	return names
}

// converse carries a conversation on m: sign-ups, a room, REST and STOMP
// sends, a delivery, a history page and a room list.
func converse(t *testing.T, m *Main, prefix string) {
	t.Helper()
	alice, _ := mustSignUp(t, m.Addr(), prefix+"alice")
	bob, _ := mustSignUp(t, m.Addr(), prefix+"bob")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "dash"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil)
	sc := dialStompAt(t, "websocket", m.Addr(), bob.token)
	sc.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:sub\n\n\x00")
	sc.expect("RECEIPT", "receipt-id:sub")
	alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "hello"}, nil)
	sc.expect("MESSAGE", "seq:1")
	alice.do("GET", "/api/rooms/"+r.ID+"/messages", nil, nil)
	bob.do("GET", "/api/me/rooms", nil, nil)
}

// TestDashboardMetricsExist checks that every metric the Grafana dashboard
// queries is registered by a real node that has carried a conversation:
// a single node, and, with the cluster's services, a cluster node for the
// metrics only cluster mode registers.
func TestDashboardMetricsExist(t *testing.T) {
	want := dashboardMetrics(t)
	m := MustOpenMain(t)
	converse(t, m, "")
	have := scrapedNames(t, m)
	var missing []string
	for n := range want {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	if len(missing) == 0 {
		return
	}
	t.Run("cluster", func(t *testing.T) {
		env := needCluster(t)
		node := startNode(t, env, "dash", oneAddress)
		converse(t, node, "c")
		have := scrapedNames(t, node)
		for _, n := range missing {
			if !have[n] {
				t.Errorf("the dashboard queries %s (panels %q), which neither a single node nor a cluster node registers", n, want[n])
			}
		}
	})
}

// TestPrometheusConfig: deploy/prometheus.yml parses and scrapes the
// nodes scripts/cluster.sh starts by default.
func TestPrometheusConfig(t *testing.T) {
	data, err := os.ReadFile("../../deploy/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("deploy/prometheus.yml: %v", err)
	}
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			targets = append(targets, s.Targets...)
		}
	}
	want := []string{"127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"}
	if !slices.Equal(targets, want) {
		t.Errorf("deploy/prometheus.yml scrapes %v, want scripts/cluster.sh's %v", targets, want)
	}
}
