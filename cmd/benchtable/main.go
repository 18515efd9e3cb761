package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  benchtable summary -name NAME -title TITLE -metric METRIC -a SIDE -b SIDE -out DIR [flags] ROUNDS-FILE
  benchtable table -results DIR [-results DIR...] [-file BENCHMARKS.md] [-quick]
  benchtable quantile -metric NAME [-q 0.99] [-scale 1000] METRICS-FILE
(go doc ./cmd/benchtable tells more)`

// dirs is a repeatable -results flag.
type dirs []string

func (d *dirs) String() string     { return strings.Join(*d, ",") }
func (d *dirs) Set(v string) error { *d = append(*d, v); return nil }

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no subcommand\n%s", usage)
	}
	switch args[0] {
	case "summary":
		return runSummary(args[1:], stdout, stderr)
	case "table":
		return runTable(args[1:], stdout, stderr)
	case "quantile":
		return runQuantile(args[1:], stdout, stderr)
	default:
		return fmt.Errorf("unknown subcommand %q\n%s", args[0], usage)
	}
}

func runSummary(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s Summary
	var out string
	fs.StringVar(&s.Name, "name", "", "the comparison's key and file name (a-z, 0-9, -._)")
	fs.StringVar(&s.Title, "title", "", "what is compared, for the table's first column")
	fs.StringVar(&s.Metric, "metric", "", "the figure compared, e.g. \"p99 (ms)\"")
	fs.StringVar(&s.A, "a", "", "the side whose figure is the ratio's numerator, e.g. Parley")
	fs.StringVar(&s.B, "b", "", "the side whose figure is the denominator, e.g. Centrifugo")
	fs.StringVar(&s.Goal, "goal", "", "the ratio's goal, e.g. \"≤ 1.00\"")
	fs.StringVar(&s.Note, "note", "", "anything else a reader needs, e.g. \"0 lost\"")
	fs.StringVar(&s.Pinned, "pinned", "", "what ran on which core")
	fs.StringVar(&s.Commit, "commit", "", "the build measured")
	fs.StringVar(&s.Command, "command", "", "the exact command that measured it")
	fs.BoolVar(&s.Quick, "quick", false, "a quick try of the script (QUICK=1), not a measurement")
	fs.StringVar(&out, "out", "", "the directory to write NAME.summary.json to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case !validName(s.Name):
		return fmt.Errorf("summary: -name %q: give a name of a-z, 0-9, '-', '.', '_'", s.Name)
	case s.Title == "" || s.Metric == "" || s.A == "" || s.B == "":
		return fmt.Errorf("summary: give -title, -metric, -a and -b")
	case out == "":
		return fmt.Errorf("summary: give -out DIR, where NAME.summary.json goes")
	case fs.NArg() != 1:
		return fmt.Errorf("summary: give one rounds file (lines \"ROUND A B\"), not %d", fs.NArg())
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	rounds, err := parseRounds(f)
	if err != nil {
		return fmt.Errorf("summary: %s: %w", fs.Arg(0), err)
	}
	s.summarize(rounds)
	s.Date = now().Format("2006-01-02T15:04:05Z")
	s.writeHuman(stdout)
	path, err := s.save(out)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

func runTable(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var results dirs
	fs.Var(&results, "results", "a directory of *.summary.json (searched recursively; repeatable)")
	file := fs.String("file", "BENCHMARKS.md", "the markdown file whose headline table is rewritten; - prints the table instead")
	quick := fs.Bool("quick", false, "include the summaries of quick runs (QUICK=1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(results) == 0 || fs.NArg() != 0 {
		return fmt.Errorf("table: give -results DIR (and no other argument)")
	}
	sums, skipped, err := loadSummaries(results, *quick)
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	if skipped > 0 {
		fmt.Fprintf(stderr, "benchtable: left out %d summaries of quick runs (QUICK=1); -quick includes them\n", skipped)
	}
	table := renderTable(sums)
	if *file == "-" {
		_, err := io.WriteString(stdout, table)
		return err
	}
	lines, err := rewriteFile(*file, table)
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	fmt.Fprintf(stdout, "%s: headline table rewritten, %d rows\n", *file, len(sums))
	if lines > maxLines {
		fmt.Fprintf(stderr, "benchtable: %s has %d lines now, over its %d: move the sections the headline table supersedes (their older, unpinned figures) into docs/perf-log.md\n",
			*file, lines, maxLines)
	}
	return nil
}

func runQuantile(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quantile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("metric", "", "the histogram's name, e.g. parley_store_fsync_seconds")
	q := fs.Float64("q", 0.99, "the quantile, in (0, 1]")
	scale := fs.Float64("scale", 1000, "what to multiply the bucket bound by (1000: seconds to ms)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || fs.NArg() != 1 || *q <= 0 || *q > 1 {
		return fmt.Errorf("quantile: give -metric NAME, a -q in (0, 1] and one /metrics file")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	v, ok, err := histQuantile(f, *name, *q)
	if err != nil {
		return fmt.Errorf("quantile: %s: %w", fs.Arg(0), err)
	}
	if !ok {
		_, err = fmt.Fprintln(stdout, "-")
		return err
	}
	_, err = fmt.Fprintln(stdout, strconv.FormatFloat(v**scale, 'f', -1, 64))
	return err
}
