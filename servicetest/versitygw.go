package servicetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// VersityGW is a private versitygw, an S3-compatible server, with its
// posix back-end in a temporary directory.
type VersityGW struct {
	// Endpoint is its http://127.0.0.1:port.
	Endpoint string
	// AccessKey and SecretKey are its root account's.
	AccessKey, SecretKey string
}

// StartVersityGW starts a private versitygw, killed at the end of the
// test. It skips the test unless PARLEY_TEST_VERSITYGW names the
// versitygw binary (or is "1": versitygw on the PATH); .ci/run installs
// it (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0).
func StartVersityGW(t testing.TB) *VersityGW {
	t.Helper()
	bin := os.Getenv("PARLEY_TEST_VERSITYGW")
	switch bin {
	case "":
		t.Skip("set PARLEY_TEST_VERSITYGW to the versitygw binary (or 1 for the one on the PATH) to test the S3 store against it")
	case "1":
		bin = "versitygw"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("PARLEY_TEST_VERSITYGW=%s: %v", bin, err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	must(t, os.MkdirAll(data, 0o750))
	port := FreePort(t)
	g := &VersityGW{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), AccessKey: "parleytest", SecretKey: "parleytestsecret"}
	logPath := filepath.Join(dir, "versitygw.log")
	log, err := os.Create(logPath)
	must(t, err)
	defer log.Close()
	cmd := exec.Command(bin, "--access", g.AccessKey, "--secret", g.SecretKey,
		"--port", fmt.Sprintf("127.0.0.1:%d", port), "posix", data)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	if err := WaitPort(port, 20*time.Second); err != nil {
		t.Fatalf("versitygw: %v\n%s", err, LastLines(readFile(logPath), 10))
	}
	return g
}
