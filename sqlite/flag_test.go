package sqlite_test

import "flag"

// testingFlagSync registers -sync for the write benchmark.
func testingFlagSync() {
	flag.TextVar(&benchSync, "sync", benchSync, "sync setting of BenchmarkSendParallel: full, normal or off")
}
