package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	dir := flag.String("dir", "", "a directory on the filesystem to measure (required)")
	sizes := flag.String("sizes", "4,16,64", "sizes of the deleted files, in MB, comma-separated")
	rounds := flag.Int("rounds", 4, "rounds of each size")
	flag.Parse()
	if *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	var mbs []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			log.Fatalf("unlinkprobe: bad size %q", s)
		}
		mbs = append(mbs, n)
	}
	probePath := filepath.Join(*dir, ".unlinkprobe-probe")
	bigPath := filepath.Join(*dir, ".unlinkprobe-big")
	f, err := os.Create(probePath)
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(probePath)
	defer os.Remove(bigPath)
	report("quiet", probe(f, time.Second), 0)
	for range *rounds {
		for _, mb := range mbs {
			if err := fill(bigPath, mb); err != nil {
				log.Fatal(err)
			}
			done := make(chan []time.Duration)
			go func() { done <- probe(f, time.Second) }()
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			if err := os.Remove(bigPath); err != nil {
				log.Fatal(err)
			}
			unlink := time.Since(start)
			report(fmt.Sprintf("delete %d MB", mb), <-done, unlink)
		}
	}
}

// fill writes a file of mb MiB at path and syncs it, so that its blocks
// are allocated before it is deleted.
func fill(path string, mb int) error {
	g, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for range mb {
		if _, err := g.Write(buf); err != nil {
			g.Close()
			return err
		}
	}
	if err := g.Sync(); err != nil {
		g.Close()
		return err
	}
	return g.Close()
}

// probe writes and fdatasyncs 4 KiB of f every 2 ms for d, and returns
// each write's time.
func probe(f *os.File, d time.Duration) []time.Duration {
	var took []time.Duration
	buf := make([]byte, 4096)
	for off, end := int64(0), time.Now().Add(d); time.Now().Before(end); off = (off + 4096) % (1 << 20) {
		start := time.Now()
		if _, err := f.WriteAt(buf, off); err != nil {
			log.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			log.Fatal(err)
		}
		took = append(took, time.Since(start))
		time.Sleep(2 * time.Millisecond)
	}
	return took
}

func report(name string, took []time.Duration, unlink time.Duration) {
	slices.Sort(took)
	q := func(p float64) time.Duration { return took[int(p*float64(len(took)-1))].Round(10 * time.Microsecond) }
	fmt.Printf("%-14s unlink %-9v fdatasync p50 %-9v p99 %-9v max %v (%d)\n", name, unlink.Round(10*time.Microsecond), q(0.5), q(0.99), q(1), len(took))
}
