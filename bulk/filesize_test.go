package bulk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"parley"
	"parley/bulk"
)

// fileSize is a file record's size in an export.
var fileSize = regexp.MustCompile(`("type":"file","file":\{[^\n]*?"size":)3,`)

// TestImportFileSizeBound: an import refuses a file record whose size is
// above bulk.MaxFileSize (or not above 0), naming its line, and writes
// nothing; a file of exactly the bound imports.
func TestImportFileSizeBound(t *testing.T) {
	src, srcPath := MustSQLite(t)
	fill(t, src)
	file := string(MustExportSQLite(t, srcPath, bulk.Options{}))
	for _, size := range []int64{-1, bulk.MaxFileSize + 1, math.MaxInt64} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			bad := fileSize.ReplaceAllString(file, fmt.Sprintf("${1}%d,", size))
			if bad == file {
				t.Fatal("no file record with size 3 in the export")
			}
			dst, dstPath := MustSQLite(t)
			before := MustExportSQLite(t, dstPath, bulk.Options{})
			_, err := bulk.Import(ctx, dst, strings.NewReader(bad), bulk.ImportOptions{})
			if !errors.Is(err, bulk.ErrInvalid) || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), "size") {
				t.Errorf("import of a file of size %d = %v, want ErrInvalid naming the line and the size", size, err)
			}
			if after := MustExportSQLite(t, dstPath, bulk.Options{}); string(after) != string(before) {
				t.Errorf("the refused file wrote:\n%s", after)
			}
		})
	}
	dst, _ := MustSQLite(t)
	MustImport(t, dst, []byte(fileSize.ReplaceAllString(file, fmt.Sprintf("${1}%d,", bulk.MaxFileSize))), bulk.ImportOptions{})
}

// TestQuotaHugeSum: a user whose stored files total more than an int64
// holds (rows written before imports bounded file sizes) is over any
// quota: an upload is CodeTooLarge, the quota's own error, not a
// failure of the store. Both stores.
func TestQuotaHugeSum(t *testing.T) {
	src, srcPath := MustSQLite(t)
	fill(t, src)
	file := MustExportSQLite(t, srcPath, bulk.Options{})
	var rec struct {
		File bulk.File `json:"file"`
	}
	for _, l := range lines(file) {
		if strings.HasPrefix(l, `{"type":"file"`) {
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if rec.File.ID == "" {
		t.Fatal("no file record in the export")
	}
	for name, open := range sinks(t) {
		t.Run(name, func(t *testing.T) {
			sink, _ := open(t)
			MustImport(t, sink, file, bulk.ImportOptions{})
			huge := []bulk.File{rec.File, rec.File}
			for i := range huge {
				huge[i].ID, huge[i].Seq, huge[i].Claim, huge[i].Size = fmt.Sprintf("huge%d", i), 0, "", math.MaxInt64-1
			}
			if _, err := sink.Import(ctx, &bulk.Batch{Files: huge}); err != nil {
				t.Fatalf("write the huge files: %v", err)
			}
			fs := sink.(interface {
				CreateFile(ctx2 context.Context, f parley.StoredFile, quota int64) error
			})
			small := parley.StoredFile{File: parley.File{ID: "small", Name: "c.txt", Type: "text/plain; charset=utf-8", Size: 3},
				RoomID: rec.File.RoomID, Uploader: rec.File.Uploader, SHA256: rec.File.SHA256}
			for _, quota := range []int64{1 << 20, math.MaxInt64} {
				if err := fs.CreateFile(ctx, small, quota); parley.ErrorCode(err) != parley.CodeTooLarge {
					t.Errorf("upload with quota %d over files totalling twice MaxInt64 = %v (code %q), want %q", quota, err, parley.ErrorCode(err), parley.CodeTooLarge)
				}
			}
		})
	}
}
