package main

import (
	"bufio"
	"debug/buildinfo"
	"debug/elf"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestComposeFile checks what can be checked of deploy/compose.yaml
// without a Docker engine: it parses, has the services of docs/operations.md's
// Packaging section, and every file it names exists.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("../../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image   string
			Build   *struct{ Context, Dockerfile string }
			Volumes []string
			Env     map[string]string        `yaml:"environment"`
			Health  *struct{ Test []string } `yaml:"healthcheck"`
		}
		Volumes map[string]any
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	var names []string
	for n := range c.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"grafana", "nginx", "node1", "node2", "node3", "postgres", "prometheus", "rabbitmq", "redis"}
	if !slices.Equal(names, want) {
		t.Errorf("services %v, want %v", names, want)
	}
	for name, s := range c.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s has neither image nor build", name)
		}
		if s.Build != nil && (s.Health == nil || len(s.Health.Test) < 3 || !slices.Equal(s.Health.Test[:3], []string{"CMD", "/usr/local/bin/parley", "healthcheck"})) {
			t.Errorf("node %s: health check %+v, want [CMD /usr/local/bin/parley healthcheck ...] (no shell in the image)", name, s.Health)
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join("../../deploy", s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("service %s builds from a missing Dockerfile: %v", name, err)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") {
				if _, ok := c.Volumes[src]; !ok {
					t.Errorf("service %s mounts the undeclared volume %q", name, src)
				}
				continue
			}
			if _, err := os.Stat(filepath.Join("../../deploy", src)); err != nil {
				t.Errorf("service %s mounts a missing file: %v", name, err)
			}
		}
		if strings.HasPrefix(name, "node") {
			for _, k := range []string{"PARLEY_STORE", "PARLEY_BROKER", "PARLEY_REDIS", "PARLEY_NODE_ID"} {
				if s.Env[k] == "" {
					t.Errorf("service %s lacks %s", name, k)
				}
			}
			if s.Env["PARLEY_NODE_ID"] != name {
				t.Errorf("service %s has node id %q", name, s.Env["PARLEY_NODE_ID"])
			}
		}
	}
	if !slices.ContainsFunc(c.Services["grafana"].Volumes, func(v string) bool { return strings.HasPrefix(v, "./grafana/parley.json:") }) {
		t.Error("grafana does not provision deploy/grafana/parley.json")
	}
}

// TestComposeNginxConf: deploy/compose/nginx.conf is deploy/nginx.conf for
// the compose services, as scripts/cluster.sh nginx-conf writes it, and
// cluster.sh writes it for any BASE_PORT and node count.
func TestComposeNginxConf(t *testing.T) {
	gen := func(env ...string) string {
		cmd := exec.Command("bash", "../../scripts/cluster.sh", "nginx-conf")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cluster.sh nginx-conf %v: %v", env, err)
		}
		return string(out)
	}
	compose, err := os.ReadFile("../../deploy/compose/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	if got := gen("NGINX_UPSTREAMS=node1:8080 node2:8080 node3:8080", "NGINX_LISTEN=8080"); got != string(compose) {
		t.Errorf("deploy/compose/nginx.conf is stale: regenerate it with\n  NGINX_UPSTREAMS=\"node1:8080 node2:8080 node3:8080\" NGINX_LISTEN=8080 scripts/cluster.sh nginx-conf > deploy/compose/nginx.conf")
	}
	deploy, _ := os.ReadFile("../../deploy/nginx.conf")
	if got := gen("BASE_PORT=8081"); got != string(deploy) {
		t.Error("cluster.sh nginx-conf with the default BASE_PORT is not deploy/nginx.conf")
	}
	conf := gen("BASE_PORT=9101", "NODES=2")
	servers := regexp.MustCompile(`server (\S+) max_fails`).FindAllStringSubmatch(conf, -1)
	if len(servers) != 2 || servers[0][1] != "127.0.0.1:9101" || servers[1][1] != "127.0.0.1:9102" || !strings.Contains(conf, "listen 127.0.0.1:9100;") {
		t.Errorf("BASE_PORT=9101 NODES=2: servers %v, want 9101 and 9102 and listen 9100", servers)
	}
	if nginx := os.Getenv("PARLEY_TEST_NGINX"); nginx != "" {
		dir := t.TempDir()
		path := filepath.Join(dir, "nginx.conf")
		os.WriteFile(path, []byte(conf), 0o644)
		if out, err := exec.Command(nginx, "-t", "-c", path, "-p", dir+"/").CombinedOutput(); err != nil {
			t.Errorf("nginx -t of the generated file: %v\n%s", err, out)
		}
	}
}

// TestSystemdUnit checks the hardening of deploy/systemd/parley.service,
// and with systemd-analyze on the machine, that systemd takes the unit.
func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile("../../deploy/systemd/parley.service")
	if err != nil {
		t.Fatal(err)
	}
	set := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			set[k] = append(set[k], v)
		}
	}
	for k, v := range map[string]string{
		"DynamicUser": "yes", "StateDirectory": "parley", "ProtectSystem": "strict",
		"NoNewPrivileges": "yes", "EnvironmentFile": "/etc/parley/parley.env", "ProtectHome": "yes",
		"PrivateTmp": "yes", "CapabilityBoundingSet": "",
	} {
		if !slices.Contains(set[k], v) {
			t.Errorf("parley.service: %s=%q, want %q", k, set[k], v)
		}
	}
	if len(set["ExecStart"]) != 1 || !strings.Contains(set["ExecStart"][0], "serve --data ${STATE_DIRECTORY}") {
		t.Errorf("ExecStart = %q, want parley serve on the state directory", set["ExecStart"])
	}
	if _, err := os.Stat("../../deploy/systemd/parley.env"); err != nil {
		t.Errorf("the example EnvironmentFile: %v", err)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not found: the unit is not verified by systemd")
		return
	}
	env, _ := filepath.Abs("../../deploy/systemd/parley.env")
	unit := strings.NewReplacer("/etc/parley/parley.env", env, "/usr/local/bin/parley", os.Args[0]).Replace(string(data))
	path := filepath.Join(t.TempDir(), "parley.service")
	os.WriteFile(path, []byte(unit), 0o644)
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDockerfile checks the Dockerfile's shape (no engine here to build
// it): two stages, a CGO_ENABLED=0 build, a non-root user in the final
// image. TestStaticBinary runs the binary such a build makes.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1)); n < 2 {
		t.Errorf("%d FROM lines, want a multi-stage build", n)
	}
	if !strings.Contains(text, "CGO_ENABLED=0 go build") {
		t.Error("the build is not CGO_ENABLED=0")
	}
	users := regexp.MustCompile(`(?m)^USER (\S+)`).FindAllStringSubmatch(text, -1)
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "0") || strings.HasPrefix(users[len(users)-1][1], "root") {
		t.Errorf("USER lines %v: the final image must run as a non-root user", users)
	}
	if _, err := os.Stat("../../.dockerignore"); err != nil {
		t.Error(err)
	}
	// The image has no shell: its health check is the binary itself.
	if !regexp.MustCompile(`(?m)^HEALTHCHECK (?:.*\\\n)*.*CMD \["/usr/local/bin/parley", "healthcheck"`).MatchString(text) {
		t.Error(`no HEALTHCHECK ... CMD ["/usr/local/bin/parley", "healthcheck", ...] (exec form: distroless has no shell)`)
	}
}

// TestStaticBinary builds parley as the Dockerfile does (CGO_ENABLED=0),
// checks that it is static and carries the pure-Go SQLite driver, starts
// it and runs a REST and a STOMP smoke test against it. It needs a build
// of its own, so it runs when PARLEY_TEST_STATIC=1 (.ci/run sets it).
func TestStaticBinary(t *testing.T) {
	if os.Getenv("PARLEY_TEST_STATIC") != "1" {
		t.Skip("PARLEY_TEST_STATIC=1 builds and runs the static binary")
	}
	bin := filepath.Join(t.TempDir(), "parley")
	// Without the Dockerfile's -trimpath: that flag makes every package a
	// new build-cache entry, and a cold build of the pure-Go driver took
	// 7.5 minutes of a loaded CI run. It changes file names in the binary,
	// not what links or how it runs.
	build := exec.Command("go", "build", "-ldflags", "-X main.version=static-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: it is dynamically linked")
		}
	}
	f.Close()
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var drivers []string
	for _, d := range info.Deps {
		if d.Path == "modernc.org/sqlite" || d.Path == "github.com/mattn/go-sqlite3" {
			drivers = append(drivers, d.Path)
		}
	}
	if !slices.Equal(drivers, []string{"modernc.org/sqlite"}) {
		t.Errorf("SQLite drivers linked: %v, want modernc.org/sqlite alone", drivers)
	}
	if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "parley static-test") {
		t.Errorf("parley --version = %q, %v", out, err)
	}

	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--stomp-addr", "127.0.0.1:0", "--data", t.TempDir())
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	serving := make(chan []string, 1)
	go func() {
		re := regexp.MustCompile(`parley serving.* addr=(\S+) stomp_addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				serving <- m
			}
		}
	}()
	var addr, stompAddr string
	select {
	case m := <-serving:
		addr, stompAddr = m[1], m[2]
	case <-time.After(60 * time.Second):
		t.Fatal("the static binary did not start within 60 s")
	}
	alice, _ := mustSignUp(t, addr, "alice")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "static"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "over REST"}, nil); st != http.StatusCreated {
		t.Fatalf("REST send: %d", st)
	}
	sc := dialStompAt(t, "tcp", stompAddr, alice.token)
	sc.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nsince-seq:0\n\n\x00")
	if f := sc.expect("MESSAGE", "seq:1"); string(f.Body) != "over REST" {
		t.Errorf("catch-up body %q", f.Body)
	}
	sc.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:r\n\nover STOMP\x00")
	for got := map[string]bool{}; !got["MESSAGE"] || !got["RECEIPT"]; {
		got[sc.read().Command.String()] = true
	}
}

// TestSystemdInstall runs the install lines of parley.service's header,
// as written, into a temporary root holding what a systemd machine has
// (/usr/local/bin, /etc/systemd/system): a directory Parley brings,
// /etc/parley, must be made by the command (install -D), not assumed.
func TestSystemdInstall(t *testing.T) {
	install, err := exec.LookPath("install")
	if err != nil {
		t.Skip("no install(1) on this machine")
	}
	data, err := os.ReadFile("../../deploy/systemd/parley.service")
	if err != nil {
		t.Fatal(err)
	}
	src, root := t.TempDir(), t.TempDir()
	// The commands run where the README builds: a checkout with the
	// binary beside deploy/.
	if err := os.WriteFile(filepath.Join(src, "parley"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	deploy, _ := filepath.Abs("../../deploy")
	if err := os.Symlink(deploy, filepath.Join(src, "deploy")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/usr/local/bin", "/etc/systemd/system"} {
		if err := os.MkdirAll(root+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var dests []string
	for _, line := range strings.Split(string(data), "\n") {
		cmd, ok := strings.CutPrefix(line, "#   install ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "#") // a trailing comment
		args := strings.Fields(cmd)
		dest := args[len(args)-1]
		if !strings.HasPrefix(dest, "/") {
			t.Fatalf("install line %q: its destination is not absolute", line)
		}
		args[len(args)-1] = root + dest
		c := exec.Command(install, args...)
		c.Dir = src
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("install %s: %v\n%s", cmd, err, out)
		}
		if strings.HasSuffix(dest, "/") {
			dest += filepath.Base(args[len(args)-2])
		}
		dests = append(dests, dest)
	}
	want := []string{"/usr/local/bin/parley", "/etc/systemd/system/parley.service", "/etc/parley/parley.env"}
	if !slices.Equal(dests, want) {
		t.Errorf("install lines put %q, want %q", dests, want)
	}
	for _, d := range want {
		if _, err := os.Stat(root + d); err != nil {
			t.Errorf("after the install lines: %v", err)
		}
	}
}
