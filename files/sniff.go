package files

import (
	"bytes"
	"image"
	_ "image/gif"  // registers GIF for DecodeConfig and Decode
	_ "image/jpeg" // registers JPEG
	_ "image/png"  // registers PNG
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	_ "golang.org/x/image/webp" // registers WebP
)

// Image types: served inline, given a preview.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// IsImage reports whether typ is an image type served inline.
func IsImage(typ string) bool { return imageTypes[typ] }

// MaxPixels bounds an image's width × height: a larger one (a
// decompression bomb, or just huge) is refused before it is decoded.
const MaxPixels = 40_000_000

// Sniff returns the type of data as the server keeps it: what
// net/http.DetectContentType finds in the bytes, whatever the client
// declared (a declared type that disagrees is replaced, never trusted). A
// file sniffed as an image must decode its header as that image, within
// MaxPixels, or it is refused (ok false, with the reason).
func Sniff(data []byte) (typ string, reason string) {
	typ = http.DetectContentType(data)
	if base, _, err := mime.ParseMediaType(typ); err == nil && IsImage(base) {
		typ = base
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		switch {
		case err != nil:
			return "", "the file looks like an image but does not decode as one"
		case "image/"+format != typ:
			return "", "the image's header does not match its type"
		case cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPixels:
			return "", "the image is too large to decode (at most 40 megapixels)"
		}
	}
	return typ, ""
}

// MaxName is the longest file name kept, in bytes.
const MaxName = 200

// CleanName returns a safe name for a file: its last path element (both
// slashes taken as separators), without control or format characters,
// trimmed, at most MaxName bytes of valid UTF-8 (the extension kept when
// it is cut), and "file" when nothing is left.
func CleanName(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base("/" + name)
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	name = strings.Trim(name, ".")
	if name == "" || name == "/" {
		return "file"
	}
	if len(name) > MaxName {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:MaxName-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	return name
}
