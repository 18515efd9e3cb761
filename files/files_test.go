package files_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"parley/files"
)

func mustPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bombPNG is a PNG header that claims w×h pixels: a decompression bomb
// as far as DecodeConfig can tell (its IDAT never comes).
func bombPNG(w, h uint32) []byte {
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr[:]...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestSniff(t *testing.T) {
	var jpg, gf bytes.Buffer
	jpeg.Encode(&jpg, image.NewGray(image.Rect(0, 0, 4, 4)), nil)
	gif.Encode(&gf, image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Black, color.White}), nil)
	tests := []struct {
		name   string
		data   []byte
		want   string
		refuse bool
	}{
		{"png", mustPNG(t, 8, 8), "image/png", false},
		{"jpeg", jpg.Bytes(), "image/jpeg", false},
		{"gif", gf.Bytes(), "image/gif", false},
		{"text", []byte("hello, world\n"), "text/plain; charset=utf-8", false},
		{"html is not trusted as an image", []byte("<html><script>alert(1)</script>"), "text/html; charset=utf-8", false},
		{"pdf", []byte("%PDF-1.4\n..."), "application/pdf", false},
		{"binary", []byte{0, 1, 2, 3, 0xff}, "application/octet-stream", false},
		{"png signature, broken header", []byte("\x89PNG\r\n\x1a\nnot a header at all"), "", true},
		{"decompression bomb", bombPNG(100_000, 100_000), "", true},
		{"just over the pixel bound", bombPNG(files.MaxPixels/1000+1, 1000), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := files.Sniff(tt.data)
			if (reason != "") != tt.refuse || got != tt.want {
				t.Errorf("Sniff = %q, %q; want %q, refused %v", got, reason, tt.want, tt.refuse)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	p, err := files.Preview(mustPNG(t, 1000, 500))
	if err != nil {
		t.Fatal(err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(p))
	if err != nil || format != "jpeg" || cfg.Width != files.PreviewSize || cfg.Height != files.PreviewSize/2 {
		t.Errorf("preview = %s %dx%d (%v), want jpeg %dx%d", format, cfg.Width, cfg.Height, err, files.PreviewSize, files.PreviewSize/2)
	}
	small, err := files.Preview(mustPNG(t, 20, 10))
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _, _ := image.DecodeConfig(bytes.NewReader(small)); cfg.Width != 20 || cfg.Height != 10 {
		t.Errorf("preview of a small image = %dx%d, want its own 20x10", cfg.Width, cfg.Height)
	}
	if _, err := files.Preview(bombPNG(100_000, 100_000)); err == nil {
		t.Error("Preview of a decompression bomb: no error")
	}
}

func TestCleanName(t *testing.T) {
	long := strings.Repeat("é", 150) + ".txt"
	tests := []struct{ in, want string }{
		{"report.pdf", "report.pdf"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\me\photo.png`, "photo.png"},
		{"a\x00b\nc\u202e.txt", "abc.txt"},
		{"  spaced  ", "spaced"},
		{"", "file"},
		{"..", "file"},
		{"/", "file"},
		{"bad \xff utf8", "bad  utf8"},
		{long, strings.Repeat("é", 98) + ".txt"},
	}
	for _, tt := range tests {
		if got := files.CleanName(tt.in); got != tt.want {
			t.Errorf("CleanName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// RunBlobsTests is the conformance suite of a Blobs.
func RunBlobsTests(t *testing.T, b files.Blobs) {
	ctx := context.Background()
	if err := b.List(ctx, func(k string) error { t.Errorf("List of an empty store: %s", k); return nil }); err != nil {
		t.Errorf("List of an empty store: %v", err)
	}
	if err := b.Put(ctx, "abc", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "abc.p", []byte("preview")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "abc", []byte("two")); err != nil { // replaces
		t.Fatal(err)
	}
	rc, err := b.Get(ctx, "abc")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "two" {
		t.Errorf("Get = %q, want two", got)
	}
	if _, err := b.Get(ctx, "nope"); !errors.Is(err, files.ErrNotExist) {
		t.Errorf("Get of a missing key = %v, want ErrNotExist", err)
	}
	for _, bad := range []string{"../x", "a/b", "", "A"} {
		if err := b.Put(ctx, bad, nil); err == nil {
			t.Errorf("Put(%q): no error", bad)
		}
	}
	var keys []string
	if err := b.List(ctx, func(k string) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"abc", "abc.p"}) {
		t.Errorf("List = %v, want abc abc.p", keys)
	}
	if err := b.Delete(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "abc"); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	if _, err := b.Get(ctx, "abc"); !errors.Is(err, files.ErrNotExist) {
		t.Errorf("Get after Delete = %v, want ErrNotExist", err)
	}
}

func TestDir(t *testing.T) {
	d, err := files.OpenDir(filepath.Join(t.TempDir(), "files")) // made by the first Put
	if err != nil {
		t.Fatal(err)
	}
	RunBlobsTests(t, d)
}
